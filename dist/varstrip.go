package dist

import (
	"sort"
	"strconv"
	"strings"
)

// varstrip gives each strip of a period its own size and datafile, in
// logical order ("0:200000;1:4000000"), and repeats that period. It is how
// the thesis kept each process's data on the process's own node.
type varstrip struct {
	strips []vstrip
	width  int64   // W: sum of all strip sizes, one period
	byDF   [][]int // byDF[d]: indices of d's strips, in order
	total  []int64 // total[d]: bytes of d's strips in one period
}

type vstrip struct {
	df     int
	size   int64
	off    int64 // logical offset within the period
	before int64 // bytes of df's earlier strips in the period: physical offset within df's period
	runEnd int64 // end, relative to the period start, of the maximal same-datafile run from this strip; may pass width
}

var _ Distribution = (*varstrip)(nil)

// parseStrips parses and validates "d0:s0;d1:s1;..." without knowing how
// many servers there are. Datafile numbers and sizes are plain decimal (no
// size suffixes, unlike OrangeFS's parser, so the canonical form is the
// input); one trailing ';' is accepted since OrangeFS's grammar has one.
func parseStrips(s string) ([]vstrip, error) {
	if s == "" {
		return nil, errorf("varstrip: strips is empty")
	}
	if len(s) > MaxStripsLength {
		return nil, errorf("varstrip: strips is %d characters long, the limit is %d", len(s), MaxStripsLength)
	}
	fields := strings.Split(strings.TrimSuffix(s, ";"), ";")
	strips := make([]vstrip, len(fields))
	var off int64
	for i, f := range fields {
		dfText, sizeText, ok := strings.Cut(f, ":")
		if !ok {
			return nil, errorf("varstrip: strip %d %q: want datafile:size", i, f)
		}
		df, ok := parseUint(dfText)
		if !ok {
			return nil, errorf("varstrip: strip %d %q: datafile %q is not a non-negative decimal number", i, f, dfText)
		}
		size, ok := parseUint(sizeText)
		switch {
		case !ok:
			return nil, errorf("varstrip: strip %d %q: size %q is not a plain decimal byte count", i, f, sizeText)
		case size == 0:
			return nil, errorf("varstrip: strip %d %q: size must be positive, got 0", i, f)
		case size > MaxStripSize:
			return nil, errorf("varstrip: strip %d %q: size %d exceeds the limit %d", i, f, size, int64(MaxStripSize))
		}
		// Sizes are at most 2^40 and there are at most 512 strips, so the
		// sum cannot overflow before this check.
		if off+size > MaxStripeWidth {
			return nil, errorf("varstrip: strip %d %q: strips add up to more than %d bytes", i, f, int64(MaxStripeWidth))
		}
		if df >= int64(len(fields)) {
			// Datafiles must be numbered without gaps, so one at or past
			// the strip count leaves some number unused.
			return nil, errorf("varstrip: strip %d %q: datafile %d with only %d strips leaves a gap; datafiles must be numbered 0..max with none missing", i, f, df, len(fields))
		}
		strips[i] = vstrip{df: int(df), size: size, off: off}
		off += size
	}
	maxDF, maxAt := 0, 0
	seen := make([]bool, len(strips))
	for i, st := range strips {
		seen[st.df] = true
		if st.df > maxDF {
			maxDF, maxAt = st.df, i
		}
	}
	for d := 0; d < maxDF; d++ {
		if !seen[d] {
			return nil, errorf("varstrip: strip %d %q: datafile %d is used but datafile %d is not; datafiles must be numbered 0..%d with none missing",
				maxAt, fields[maxAt], maxDF, d, maxDF)
		}
	}
	return strips, nil
}

// stripsDatafiles is the number of datafiles strips use: max+1.
func stripsDatafiles(strips []vstrip) int {
	n := 0
	for _, st := range strips {
		n = max(n, st.df+1)
	}
	return n
}

// checkStripsFit reports the first strip naming a datafile beyond the
// servers available.
func checkStripsFit(strips []vstrip, servers int) error {
	for i, st := range strips {
		if st.df >= servers {
			return errorf("varstrip: strip %d %q: datafile %d beyond the %d servers available", i, formatStrip(st), st.df, servers)
		}
	}
	return nil
}

func formatStrip(st vstrip) string {
	return strconv.Itoa(st.df) + ":" + strconv.FormatInt(st.size, 10)
}

func formatStrips(strips []vstrip) string {
	var b strings.Builder
	for i, st := range strips {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(formatStrip(st))
	}
	return b.String()
}

// newVarstrip precomputes the per-datafile tables from validated strips.
func newVarstrip(parsed []vstrip) *varstrip {
	strips := append([]vstrip(nil), parsed...)
	n := stripsDatafiles(strips)
	v := &varstrip{strips: strips, byDF: make([][]int, n), total: make([]int64, n)}
	for i := range strips {
		st := &strips[i]
		st.before = v.total[st.df]
		v.total[st.df] += st.size
		v.byDF[st.df] = append(v.byDF[st.df], i)
		v.width += st.size
	}
	// Adjacent strips on one datafile are contiguous physically too, also
	// across the period boundary, so a run can span several strips.
	last := len(strips) - 1
	strips[last].runEnd = v.width
	for i := last - 1; i >= 0; i-- {
		if strips[i].df == strips[i+1].df {
			strips[i].runEnd = strips[i+1].runEnd
		} else {
			strips[i].runEnd = strips[i].off + strips[i].size
		}
	}
	if n > 1 && strips[0].df == strips[last].df {
		for i := last; i >= 0 && strips[i].df == strips[last].df; i-- {
			strips[i].runEnd = v.width + strips[0].runEnd
		}
	}
	return v
}

func (v *varstrip) Name() string   { return Varstrip }
func (v *varstrip) Params() string { return "strips=" + formatStrips(v.strips) }
func (v *varstrip) Datafiles() int { return len(v.total) }

// stripAt returns the index of the strip holding period offset r.
func (v *varstrip) stripAt(r int64) int {
	return sort.Search(len(v.strips), func(i int) bool { return v.strips[i].off+v.strips[i].size > r })
}

func (v *varstrip) ToPhysical(off int64) (int, int64) {
	checkOffset("logical offset", off)
	q, r := off/v.width, off%v.width
	st := &v.strips[v.stripAt(r)]
	return st.df, q*v.total[st.df] + st.before + r - st.off
}

func (v *varstrip) ToLogical(df int, p int64) int64 {
	checkDatafile(df, len(v.total))
	checkOffset("physical offset", p)
	q, rp := p/v.total[df], p%v.total[df]
	mine := v.byDF[df]
	j := sort.Search(len(mine), func(j int) bool {
		st := &v.strips[mine[j]]
		return st.before+st.size > rp
	})
	st := &v.strips[mine[j]]
	return mulAdd(q, v.width, st.off+rp-st.before)
}

func (v *varstrip) NextMapped(df int, off int64) int64 {
	checkDatafile(df, len(v.total))
	checkOffset("logical offset", off)
	return nextMapped(v, df, off)
}

func (v *varstrip) ContiguousLength(off int64) int64 {
	checkOffset("logical offset", off)
	if len(v.total) == 1 {
		return unbounded(off)
	}
	r := off % v.width
	return runFrom(off, v.strips[v.stripAt(r)].runEnd-r)
}

func (v *varstrip) LogicalSize(sizes []int64) int64 { return logicalSize(v, sizes) }

func (v *varstrip) PhysicalSize(df int, size int64) int64 {
	checkDatafile(df, len(v.total))
	checkOffset("logical size", size)
	q, r := size/v.width, size%v.width
	mine := v.byDF[df]
	// The first of df's strips not wholly below r; all before it count fully.
	j := sort.Search(len(mine), func(j int) bool {
		st := &v.strips[mine[j]]
		return st.off+st.size > r
	})
	last := v.total[df]
	if j < len(mine) {
		st := &v.strips[mine[j]]
		last = st.before + max(r-st.off, 0)
	}
	return q*v.total[df] + last
}
