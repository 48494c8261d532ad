package dist

import "strconv"

// simpleStripe is PVFS2's default distribution, also Lustre's and BeeGFS's
// RAID0: strips of a fixed size dealt round robin over the datafiles.
type simpleStripe struct {
	strip int64 // S: bytes per strip
	n     int64 // N: datafiles
	width int64 // S*N: one stripe, checked against MaxStripeWidth
}

var _ Distribution = (*simpleStripe)(nil)

func (s *simpleStripe) Name() string   { return SimpleStripe }
func (s *simpleStripe) Params() string { return "strip_size=" + strconv.FormatInt(s.strip, 10) }
func (s *simpleStripe) Datafiles() int { return int(s.n) }

func (s *simpleStripe) ToPhysical(off int64) (int, int64) {
	checkOffset("logical offset", off)
	return int((off / s.strip) % s.n), (off/s.width)*s.strip + off%s.strip
}

func (s *simpleStripe) ToLogical(df int, p int64) int64 {
	checkDatafile(df, int(s.n))
	checkOffset("physical offset", p)
	return mulAdd(p/s.strip, s.width, int64(df)*s.strip+p%s.strip)
}

func (s *simpleStripe) NextMapped(df int, off int64) int64 {
	checkDatafile(df, int(s.n))
	checkOffset("logical offset", off)
	return nextMapped(s, df, off)
}

func (s *simpleStripe) ContiguousLength(off int64) int64 {
	checkOffset("logical offset", off)
	if s.n == 1 {
		// One datafile is the identity mapping; ending runs at strip
		// boundaries would only make Split return more pieces.
		return unbounded(off)
	}
	return runFrom(off, s.strip-off%s.strip)
}

func (s *simpleStripe) LogicalSize(sizes []int64) int64 { return logicalSize(s, sizes) }

func (s *simpleStripe) PhysicalSize(df int, size int64) int64 {
	checkDatafile(df, int(s.n))
	checkOffset("logical size", size)
	inLast := min(max(size%s.width-int64(df)*s.strip, 0), s.strip)
	return (size/s.width)*s.strip + inLast
}
