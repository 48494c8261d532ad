package dist

import "fmt"

// twodStripe is OrangeFS's two-dimensional distribution. The N datafiles
// are split into groups of N/num_groups, the last group also taking the
// remainder. One period of N*strip_size*group_strip_factor bytes visits the
// groups in order; each group gets group_strip_factor rounds of simple
// striping over its own datafiles before the next group starts. So a client
// writing a region smaller than one group's share talks to one group only,
// which is the point when many clients write at once.
//
// If num_groups exceeds the datafile count it is clamped to it (every group
// then has one datafile, which gets group_strip_factor consecutive strips),
// as OrangeFS's logical_to_physical_offset does. OrangeFS's
// physical_to_logical_offset and next_mapped_offset compute the group size
// before clamping and so disagree with it in that case; here all methods use
// the clamped value. Params keeps the value given, so the layout still means
// the same on a file system with more servers.
type twodStripe struct {
	groups int64 // num_groups as given
	strip  int64 // strip_size
	factor int64 // group_strip_factor
	n      int64 // datafiles

	g         int64 // min(groups, n): groups actually used
	small     int64 // datafiles in every group but the last
	period    int64 // n*strip*factor: every datafile gets factor strips
	groupSpan int64 // small*factor*strip: logical bytes of a non-last group per period
}

var _ Distribution = (*twodStripe)(nil)

func newTwod(groups, strip, factor, n int64) *twodStripe {
	g := min(groups, n)
	small := n / g
	return &twodStripe{
		groups: groups, strip: strip, factor: factor, n: n,
		g: g, small: small,
		period:    n * strip * factor,
		groupSpan: small * factor * strip,
	}
}

func (t *twodStripe) Name() string { return TwodStripe }
func (t *twodStripe) Params() string {
	return fmt.Sprintf("num_groups=%d,strip_size=%d,group_strip_factor=%d", t.groups, t.strip, t.factor)
}
func (t *twodStripe) Datafiles() int { return int(t.n) }

// groupOf returns the group of datafile df, its first datafile and its size.
func (t *twodStripe) groupOf(df int64) (g, first, size int64) {
	g = min(df/t.small, t.g-1)
	return g, g * t.small, t.groupSize(g)
}

func (t *twodStripe) groupSize(g int64) int64 {
	if g == t.g-1 {
		return t.n - g*t.small
	}
	return t.small
}

func (t *twodStripe) ToPhysical(off int64) (int, int64) {
	checkOffset("logical offset", off)
	q, r := off/t.period, off%t.period
	g := min(r/t.groupSpan, t.g-1)
	rowWidth := t.groupSize(g) * t.strip
	inGroup := r - g*t.groupSpan
	row, inRow := inGroup/rowWidth, inGroup%rowWidth
	df := g*t.small + inRow/t.strip
	return int(df), q*t.factor*t.strip + row*t.strip + inRow%t.strip
}

func (t *twodStripe) ToLogical(df int, p int64) int64 {
	checkDatafile(df, int(t.n))
	checkOffset("physical offset", p)
	g, first, size := t.groupOf(int64(df))
	strips := p / t.strip
	q, row := strips/t.factor, strips%t.factor
	inPeriod := g*t.groupSpan + row*size*t.strip + (int64(df)-first)*t.strip + p%t.strip
	return mulAdd(q, t.period, inPeriod)
}

func (t *twodStripe) NextMapped(df int, off int64) int64 {
	checkDatafile(df, int(t.n))
	checkOffset("logical offset", off)
	return nextMapped(t, df, off)
}

func (t *twodStripe) ContiguousLength(off int64) int64 {
	checkOffset("logical offset", off)
	if t.n == 1 {
		return unbounded(off)
	}
	r := off % t.period
	g := min(r/t.groupSpan, t.g-1)
	if t.groupSize(g) == 1 {
		// A one-datafile group's whole share of the period is one run; the
		// next group is on other datafiles.
		return runFrom(off, g*t.groupSpan+t.factor*t.strip-r)
	}
	return runFrom(off, t.strip-off%t.strip)
}

func (t *twodStripe) LogicalSize(sizes []int64) int64 { return logicalSize(t, sizes) }

func (t *twodStripe) PhysicalSize(df int, size int64) int64 {
	checkDatafile(df, int(t.n))
	checkOffset("logical size", size)
	g, first, gsize := t.groupOf(int64(df))
	full := t.factor * t.strip // what df gets per period
	inGroup := size%t.period - g*t.groupSpan
	var last int64
	switch {
	case inGroup <= 0:
	case inGroup >= gsize*full:
		last = full
	default:
		rowWidth := gsize * t.strip
		row := inGroup / rowWidth
		last = row*t.strip + min(max(inGroup%rowWidth-(int64(df)-first)*t.strip, 0), t.strip)
	}
	return (size/t.period)*full + last
}
