package dist

// basic keeps the whole file on one datafile with the identity mapping.
type basic struct{}

var _ Distribution = basic{}

func (basic) Name() string   { return Basic }
func (basic) Params() string { return "" }
func (basic) Datafiles() int { return 1 }

func (basic) ToPhysical(off int64) (int, int64) {
	checkOffset("logical offset", off)
	return 0, off
}

func (basic) ToLogical(df int, p int64) int64 {
	checkDatafile(df, 1)
	checkOffset("physical offset", p)
	return p
}

func (basic) NextMapped(df int, off int64) int64 {
	checkDatafile(df, 1)
	checkOffset("logical offset", off)
	return off
}

func (basic) ContiguousLength(off int64) int64 {
	checkOffset("logical offset", off)
	return unbounded(off)
}

func (b basic) LogicalSize(sizes []int64) int64 { return logicalSize(b, sizes) }

func (basic) PhysicalSize(df int, size int64) int64 {
	checkDatafile(df, 1)
	checkOffset("logical size", size)
	return size
}
