package dist

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// model is a reference mapping written straight from a definition: one
// period as the list of strips in logical order, each (datafile, size); a
// datafile's bytes are its strips' bytes in logical order. It is slow and
// obviously right, unlike the closed forms it checks.
type model struct {
	dfs   []int
	sizes []int64
	width int64
	total []int64
}

func newModel(n int, dfs []int, sizes []int64) *model {
	m := &model{dfs: dfs, sizes: sizes, total: make([]int64, n)}
	for i, df := range dfs {
		m.width += sizes[i]
		m.total[df] += sizes[i]
	}
	return m
}

func (m *model) toPhysical(off int64) (int, int64) {
	q, r := off/m.width, off%m.width
	before := make([]int64, len(m.total))
	for i, df := range m.dfs {
		if r < m.sizes[i] {
			return df, q*m.total[df] + before[df] + r
		}
		r -= m.sizes[i]
		before[df] += m.sizes[i]
	}
	panic("model: offset not in period")
}

// genTest is a generated distribution with the reference model and the
// smallest strip (to keep ranges within a sane number of pieces).
type genTest struct {
	d        Distribution
	m        *model
	servers  int
	minStrip int64
}

func drawStripSize(t *rapid.T, label string) int64 {
	return rapid.OneOf(
		rapid.Int64Range(1, 8),
		rapid.Int64Range(1, 100_000),
		rapid.Int64Range(1, MaxStripSize),
	).Draw(t, label)
}

func drawDist(t *rapid.T) genTest {
	kind := rapid.SampledFrom([]string{SimpleStripe, Basic, Varstrip, TwodStripe}).Draw(t, "kind")
	n := rapid.IntRange(1, 16).Draw(t, "servers")
	switch kind {
	case Basic:
		return genTest{d: mustNew(t, Basic, "", n), m: newModel(1, []int{0}, []int64{1}), servers: n, minStrip: 1}

	case SimpleStripe:
		s := drawStripSize(t, "strip_size")
		dfs, sizes := make([]int, n), make([]int64, n)
		for i := range n {
			dfs[i], sizes[i] = i, s
		}
		d := mustNew(t, SimpleStripe, fmt.Sprintf("strip_size=%d", s), n)
		return genTest{d: d, m: newModel(n, dfs, sizes), servers: n, minStrip: s}

	case TwodStripe:
		groups := rapid.IntRange(1, 20).Draw(t, "num_groups")
		s := drawStripSize(t, "strip_size")
		factor := rapid.OneOf(rapid.Int64Range(1, 6), rapid.Int64Range(1, 1<<20)).Draw(t, "group_strip_factor")
		if factor > MaxStripeWidth/int64(n)/s {
			factor = 1
		}
		d := mustNew(t, TwodStripe, fmt.Sprintf("strip_size=%d,num_groups=%d,group_strip_factor=%d", s, groups, factor), n)
		var m *model
		if factor*int64(n) <= 4096 {
			// The definition: servers split into min(groups, n) groups of
			// n/groups, the last taking the rest; each group in turn gets
			// factor rounds of round robin.
			g := min(groups, n)
			small := n / g
			var dfs []int
			var sizes []int64
			for gi := range g {
				first, size := gi*small, small
				if gi == g-1 {
					size = n - first
				}
				for range factor {
					for k := range size {
						dfs = append(dfs, first+k)
						sizes = append(sizes, s)
					}
				}
			}
			m = newModel(n, dfs, sizes)
		}
		return genTest{d: d, m: m, servers: n, minStrip: s}

	default: // Varstrip
		count := rapid.IntRange(1, 12).Draw(t, "strips")
		raw := rapid.SliceOfN(rapid.IntRange(0, n-1), count, count).Draw(t, "raw datafiles")
		// Number the datafiles used 0..k-1 by rank, so there is no gap
		// whatever order they come in.
		used := map[int]bool{}
		for _, r := range raw {
			used[r] = true
		}
		rank := map[int]int{}
		for r := range n {
			if used[r] {
				rank[r] = len(rank)
			}
		}
		dfs, sizes := make([]int, count), make([]int64, count)
		var parts []string
		minStrip := int64(MaxStripSize)
		for i, r := range raw {
			dfs[i] = rank[r]
			sizes[i] = drawStripSize(t, "size")
			minStrip = min(minStrip, sizes[i])
			parts = append(parts, fmt.Sprintf("%d:%d", dfs[i], sizes[i]))
		}
		d := mustNew(t, Varstrip, "strips="+strings.Join(parts, ";"), n)
		return genTest{d: d, m: newModel(len(rank), dfs, sizes), servers: n, minStrip: minStrip}
	}
}

// period is one full round of the distribution (1 for basic).
func period(d Distribution) int64 {
	switch d := d.(type) {
	case *simpleStripe:
		return d.width
	case *twodStripe:
		return d.period
	case *varstrip:
		return d.width
	}
	return 1
}

// drawOffset is either near the start (a few periods) or anywhere below 2^62.
func drawOffset(t *rapid.T, g genTest, label string) int64 {
	near := int64(1 << 62)
	if p := period(g.d); p <= near/4 {
		near = 4 * p
	}
	return rapid.OneOf(rapid.Int64Range(0, near), rapid.Int64Range(0, 1<<62)).Draw(t, label)
}

// drawLength is a range length that Split turns into at most a few hundred
// pieces.
func drawLength(t *rapid.T, g genTest, label string) int64 {
	limit := min(period(g.d), 1<<40) * 3
	return rapid.Int64Range(0, min(limit, 200*g.minStrip)).Draw(t, label)
}

func TestPropertySplit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawDist(t)
		off, length := drawOffset(t, g, "off"), drawLength(t, g, "length")
		pieces := Split(g.d, off, length)
		next := off
		for i, p := range pieces {
			if p.Logical != next || p.Length < 1 {
				t.Fatalf("piece %d %+v: want start %d and positive length", i, p, next)
			}
			for _, at := range []int64{0, p.Length - 1, p.Length / 2} {
				df, phys := g.d.ToPhysical(p.Logical + at)
				if df != p.Datafile || phys != p.Physical+at {
					t.Fatalf("piece %d %+v: byte %d maps to (%d, %d), want (%d, %d)",
						i, p, p.Logical+at, df, phys, p.Datafile, p.Physical+at)
				}
			}
			next += p.Length
		}
		if next != off+length {
			t.Fatalf("pieces cover [%d, %d), want [%d, %d)", off, next, off, off+length)
		}
	})
}

func TestPropertyModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawDist(t)
		if g.m == nil {
			t.Skip("no model for this size")
		}
		for i := range 20 {
			off := drawOffset(t, g, fmt.Sprint("off", i))
			df, p := g.d.ToPhysical(off)
			mdf, mp := g.m.toPhysical(off)
			if df != mdf || p != mp {
				t.Fatalf("ToPhysical(%d) = (%d, %d), the definition says (%d, %d)", off, df, p, mdf, mp)
			}
		}
	})
}

func TestPropertyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawDist(t)
		off := drawOffset(t, g, "off")
		df, p := g.d.ToPhysical(off)
		if df < 0 || df >= g.d.Datafiles() {
			t.Fatalf("ToPhysical(%d) gives datafile %d of %d", off, df, g.d.Datafiles())
		}
		if back := g.d.ToLogical(df, p); back != off {
			t.Fatalf("ToLogical(ToPhysical(%d) = (%d, %d)) = %d", off, df, p, back)
		}
	})
}

func TestPropertyNextMapped(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawDist(t)
		off := drawOffset(t, g, "off")
		df := rapid.IntRange(0, g.d.Datafiles()-1).Draw(t, "datafile")
		nm := g.d.NextMapped(df, off)
		if nm < off {
			t.Fatalf("NextMapped(%d, %d) = %d, before the offset", df, off, nm)
		}
		if got, _ := g.d.ToPhysical(nm); got != df {
			t.Fatalf("NextMapped(%d, %d) = %d, which is on datafile %d", df, off, nm, got)
		}
		if nm-off > 200*g.minStrip {
			// Too many pieces to walk; the physical sizes say the same.
			if g.d.PhysicalSize(df, nm) != g.d.PhysicalSize(df, off) {
				t.Fatalf("NextMapped(%d, %d) = %d skips bytes of the datafile", df, off, nm)
			}
			return
		}
		for _, p := range Split(g.d, off, nm-off) {
			if p.Datafile == df {
				t.Fatalf("NextMapped(%d, %d) = %d, but %+v is on the datafile", df, off, nm, p)
			}
		}
	})
}

func TestPropertySizes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawDist(t)
		size := drawOffset(t, g, "size")
		sizes := make([]int64, g.d.Datafiles())
		var sum int64
		for df := range sizes {
			sizes[df] = g.d.PhysicalSize(df, size)
			sum += sizes[df]
		}
		if sum != size {
			t.Fatalf("PhysicalSize(*, %d) = %v sums to %d", size, sizes, sum)
		}
		if got := g.d.LogicalSize(sizes); got != size {
			t.Fatalf("LogicalSize(%v) = %d, want %d", sizes, got, size)
		}
	})
}

// TestPropertySparse writes a few random ranges into an empty file, sizes
// each datafile as its pieces leave it, and expects the logical size to be
// the end of the last range written.
func TestPropertySparse(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawDist(t)
		sizes := make([]int64, g.d.Datafiles())
		var end int64
		for i := range rapid.IntRange(1, 4).Draw(t, "writes") {
			off := drawOffset(t, g, fmt.Sprint("off", i))
			length := max(drawLength(t, g, fmt.Sprint("length", i)), 1)
			end = max(end, off+length)
			for _, p := range Split(g.d, off, length) {
				sizes[p.Datafile] = max(sizes[p.Datafile], p.Physical+p.Length)
			}
		}
		if got := g.d.LogicalSize(sizes); got != end {
			t.Fatalf("LogicalSize(%v) = %d, want %d", sizes, got, end)
		}
	})
}

func TestPropertyRebuild(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawDist(t)
		l := Layout{Dist: g.d.Name(), Params: g.d.Params(), Datafiles: g.d.Datafiles()}
		parsed, err := ParseLayout(l.String())
		if err != nil || parsed != l {
			t.Fatalf("ParseLayout(%q) = %+v, %v; want %+v", l.String(), parsed, err, l)
		}
		built, err := parsed.Build(g.servers)
		if err != nil {
			t.Fatalf("%+v.Build(%d): %v", parsed, g.servers, err)
		}
		again, err := New(g.d.Name(), g.d.Params(), g.servers)
		if err != nil {
			t.Fatalf("New(%q, %q, %d): %v", g.d.Name(), g.d.Params(), g.servers, err)
		}
		if !reflect.DeepEqual(built, g.d) || !reflect.DeepEqual(again, g.d) {
			t.Fatalf("rebuilt %#v and %#v, want %#v", built, again, g.d)
		}
		for i := range 5 {
			off := drawOffset(t, g, fmt.Sprint("off", i))
			df, p := g.d.ToPhysical(off)
			if df2, p2 := again.ToPhysical(off); df2 != df || p2 != p {
				t.Fatalf("rebuilt ToPhysical(%d) = (%d, %d), want (%d, %d)", off, df2, p2, df, p)
			}
		}
	})
}
