package dist

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// fataler is what testing.TB and *rapid.T have in common.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func mustNew(t fataler, name, params string, n int) Distribution {
	t.Helper()
	d, err := New(name, params, n)
	if err != nil {
		t.Fatalf("New(%q, %q, %d): %v", name, params, n, err)
	}
	return d
}

// mapping is one hand-worked logical <-> physical correspondence.
type mapping struct {
	logical  int64
	datafile int
	physical int64
}

// checkMappings checks each case both ways.
func checkMappings(t *testing.T, d Distribution, cases []mapping) {
	t.Helper()
	for _, c := range cases {
		df, p := d.ToPhysical(c.logical)
		if df != c.datafile || p != c.physical {
			t.Errorf("%s:%s ToPhysical(%d) = (%d, %d), want (%d, %d)", d.Name(), d.Params(), c.logical, df, p, c.datafile, c.physical)
		}
		if got := d.ToLogical(c.datafile, c.physical); got != c.logical {
			t.Errorf("%s:%s ToLogical(%d, %d) = %d, want %d", d.Name(), d.Params(), c.datafile, c.physical, got, c.logical)
		}
	}
}

type lenCase struct{ logical, want int64 }

func checkContiguous(t *testing.T, d Distribution, cases []lenCase) {
	t.Helper()
	for _, c := range cases {
		if got := d.ContiguousLength(c.logical); got != c.want {
			t.Errorf("%s:%s ContiguousLength(%d) = %d, want %d", d.Name(), d.Params(), c.logical, got, c.want)
		}
	}
}

type nextCase struct {
	datafile      int
	logical, want int64
}

func checkNext(t *testing.T, d Distribution, cases []nextCase) {
	t.Helper()
	for _, c := range cases {
		if got := d.NextMapped(c.datafile, c.logical); got != c.want {
			t.Errorf("%s:%s NextMapped(%d, %d) = %d, want %d", d.Name(), d.Params(), c.datafile, c.logical, got, c.want)
		}
	}
}

func checkPhysicalSizes(t *testing.T, d Distribution, logical int64, want []int64) {
	t.Helper()
	got := make([]int64, d.Datafiles())
	for df := range got {
		got[df] = d.PhysicalSize(df, logical)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:%s PhysicalSize(*, %d) = %v, want %v", d.Name(), d.Params(), logical, got, want)
	}
	if ls := d.LogicalSize(got); ls != logical {
		t.Errorf("%s:%s LogicalSize(%v) = %d, want %d", d.Name(), d.Params(), got, ls, logical)
	}
}

func TestSimpleStripe(t *testing.T) {
	d := mustNew(t, SimpleStripe, "strip_size=100", 3)
	if d.Datafiles() != 3 {
		t.Fatalf("Datafiles() = %d", d.Datafiles())
	}
	checkMappings(t, d, []mapping{
		{0, 0, 0}, {99, 0, 99}, {100, 1, 0}, {250, 2, 50}, {299, 2, 99},
		{300, 0, 100}, {1234, 0, 434}, {1399, 1, 499},
	})
	checkContiguous(t, d, []lenCase{{0, 100}, {99, 1}, {150, 50}, {300, 100}})
	checkNext(t, d, []nextCase{{0, 0, 0}, {1, 0, 100}, {0, 150, 300}, {2, 250, 250}, {1, 201, 400}})
	checkPhysicalSizes(t, d, 0, []int64{0, 0, 0})
	checkPhysicalSizes(t, d, 250, []int64{100, 100, 50})
	checkPhysicalSizes(t, d, 301, []int64{101, 100, 100})
	// Sparse: only byte 200 written; only datafile 2 has data.
	if got := d.LogicalSize([]int64{0, 0, 1}); got != 201 {
		t.Errorf("LogicalSize sparse = %d, want 201", got)
	}

	one := mustNew(t, SimpleStripe, "", 1)
	checkMappings(t, one, []mapping{{0, 0, 0}, {65536, 0, 65536}, {1 << 62, 0, 1 << 62}})
	if got := one.ContiguousLength(10); got != math.MaxInt64-10 {
		t.Errorf("one datafile: ContiguousLength(10) = %d, want the rest of the int64 range", got)
	}
}

// TestSimpleStripeFormula checks simple_stripe against the closed formulas
// of PVFS2 (and Lustre's and BeeGFS's RAID0) on a million random cases.
func TestSimpleStripeFormula(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := 0
	for range 1000 {
		s := r.Int64N(1<<20) + 1
		if r.IntN(4) == 0 {
			s = r.Int64N(MaxStripSize) + 1
		}
		n := r.Int64N(64) + 1
		d := &simpleStripe{strip: s, n: n, width: s * n}
		for range 1000 {
			off := r.Int64N(1 << 62)
			if r.IntN(2) == 0 {
				off = r.Int64N(8 * s * n)
			}
			wantDF, wantP := int((off/s)%n), (off/(s*n))*s+off%s
			df, p := d.ToPhysical(off)
			if df != wantDF || p != wantP {
				t.Fatalf("S=%d N=%d ToPhysical(%d) = (%d, %d), want (%d, %d)", s, n, off, df, p, wantDF, wantP)
			}
			if back := (p/s)*s*n + int64(df)*s + p%s; back != off {
				t.Fatalf("S=%d N=%d: reverse formula gives %d for %d", s, n, back, off)
			}
			if got := d.ToLogical(df, p); got != off {
				t.Fatalf("S=%d N=%d ToLogical(%d, %d) = %d, want %d", s, n, df, p, got, off)
			}
			cases++
		}
	}
	if cases != 1_000_000 {
		t.Fatalf("ran %d cases", cases)
	}
}

func TestBasic(t *testing.T) {
	for _, n := range []int{1, 4} {
		d := mustNew(t, Basic, "", n)
		if d.Datafiles() != 1 || d.Params() != "" {
			t.Fatalf("basic on %d: Datafiles() = %d, Params() = %q", n, d.Datafiles(), d.Params())
		}
		checkMappings(t, d, []mapping{{0, 0, 0}, {12345, 0, 12345}, {1 << 62, 0, 1 << 62}})
		checkNext(t, d, []nextCase{{0, 7, 7}})
		checkPhysicalSizes(t, d, 777, []int64{777})
		if got := d.ContiguousLength(5); got != math.MaxInt64-5 {
			t.Errorf("ContiguousLength(5) = %d", got)
		}
	}
}

func TestVarstripThesis(t *testing.T) {
	d := mustNew(t, Varstrip, "strips=0:200000;1:4000000", 8)
	if d.Datafiles() != 2 {
		t.Fatalf("Datafiles() = %d, want 2", d.Datafiles())
	}
	checkMappings(t, d, []mapping{
		{0, 0, 0}, {199999, 0, 199999},
		{200000, 1, 0}, // process 1's 4 MB start on datafile 1
		{4199999, 1, 3999999},
		{4200000, 0, 200000}, // second period: back to datafile 0
		{4400000, 1, 4000000},
	})
	checkContiguous(t, d, []lenCase{{0, 200000}, {200000, 4000000}, {4200001, 199999}})
	checkNext(t, d, []nextCase{{1, 0, 200000}, {0, 200000, 4200000}, {0, 4200000, 4200000}})
	checkPhysicalSizes(t, d, 300000, []int64{200000, 100000})
	checkPhysicalSizes(t, d, 4300000, []int64{300000, 4000000})
}

func TestVarstripRepeatedDatafile(t *testing.T) {
	d := mustNew(t, Varstrip, "strips=0:10;1:20;0:5", 2)
	// Period 35: datafile 0 holds [0,10) and [30,35), 15 bytes; datafile 1
	// holds [10,30).
	checkMappings(t, d, []mapping{
		{0, 0, 0}, {9, 0, 9}, {10, 1, 0}, {29, 1, 19}, {30, 0, 10}, {34, 0, 14},
		{35, 0, 15}, {40, 0, 20}, {45, 1, 20}, {65, 0, 25}, {69, 0, 29},
	})
	// The last strip and the next period's first are both on datafile 0 and
	// physically adjacent, so they make one run.
	checkContiguous(t, d, []lenCase{{0, 10}, {12, 18}, {30, 15}, {34, 11}, {35, 10}})
	checkNext(t, d, []nextCase{{0, 12, 30}, {1, 31, 45}, {0, 31, 31}, {1, 5, 10}})
	checkPhysicalSizes(t, d, 12, []int64{10, 2})
	checkPhysicalSizes(t, d, 32, []int64{12, 20})
	checkPhysicalSizes(t, d, 70, []int64{30, 40})
	if got := d.LogicalSize([]int64{11, 0}); got != 31 {
		t.Errorf("LogicalSize([11 0]) = %d, want 31", got)
	}
}

func TestTwodStripe(t *testing.T) {
	// 5 datafiles in 2 groups: {0,1} and {2,3,4}; strip 10, factor 2, so a
	// period is 100 bytes:
	//   [0,40)   group 0, two rounds: 0 1 | 0 1
	//   [40,100) group 1, two rounds: 2 3 4 | 2 3 4
	d := mustNew(t, TwodStripe, "num_groups=2,strip_size=10,group_strip_factor=2", 5)
	checkMappings(t, d, []mapping{
		{0, 0, 0}, {10, 1, 0}, {25, 0, 15}, {39, 1, 19},
		{40, 2, 0}, {65, 4, 5}, {75, 2, 15}, {99, 4, 19},
		{100, 0, 20}, {185, 3, 35}, // 185 is OrangeFS's l2p(server 3) = 35, and back
	})
	checkContiguous(t, d, []lenCase{{0, 10}, {25, 5}, {99, 1}})
	checkNext(t, d, []nextCase{{2, 0, 40}, {0, 40, 100}, {1, 21, 30}, {4, 71, 90}})
	checkPhysicalSizes(t, d, 55, []int64{20, 20, 10, 5, 0})
	checkPhysicalSizes(t, d, 185, []int64{40, 40, 40, 35, 30})

	// The defaults: 2 groups, 64 KiB strips, 256 strips per datafile per
	// group turn.
	def := mustNew(t, TwodStripe, "", 4)
	if def.Params() != "num_groups=2,strip_size=65536,group_strip_factor=256" {
		t.Errorf("default Params() = %q", def.Params())
	}
	checkMappings(t, def, []mapping{
		{65536, 1, 0}, {2 * 65536, 0, 65536},
		{2 * 256 * 65536, 2, 0},           // group 1 starts after group 0's 2*256 strips
		{4 * 256 * 65536, 0, 256 * 65536}, // next period
	})
}

func TestTwodStripeMoreGroupsThanDatafiles(t *testing.T) {
	// num_groups 5 on 3 datafiles is clamped to 3 groups of one datafile,
	// each taking factor consecutive strips.
	d := mustNew(t, TwodStripe, "num_groups=5,strip_size=10,group_strip_factor=2", 3)
	if d.Params() != "num_groups=5,strip_size=10,group_strip_factor=2" {
		t.Errorf("Params() = %q, want num_groups kept as given", d.Params())
	}
	checkMappings(t, d, []mapping{{0, 0, 0}, {15, 0, 15}, {25, 1, 5}, {45, 2, 5}, {60, 0, 20}})
	checkContiguous(t, d, []lenCase{{0, 20}, {15, 5}, {40, 20}})
	checkPhysicalSizes(t, d, 45, []int64{20, 20, 5})
}

func TestTwodStripeUneven(t *testing.T) {
	// 7 datafiles, 3 groups: {0,1}, {2,3}, {4,5,6}.
	d := mustNew(t, TwodStripe, "num_groups=3,strip_size=1,group_strip_factor=3", 7)
	var got []int
	for off := range int64(21) {
		df, _ := d.ToPhysical(off)
		got = append(got, df)
	}
	want := []int{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 4, 5, 6, 4, 5, 6, 4, 5, 6}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("datafiles of one period = %v, want %v", got, want)
	}
}

func TestSplit(t *testing.T) {
	d := mustNew(t, SimpleStripe, "strip_size=100", 3)
	got := Split(d, 50, 300)
	want := []Piece{
		{Datafile: 0, Logical: 50, Physical: 50, Length: 50},
		{Datafile: 1, Logical: 100, Physical: 0, Length: 100},
		{Datafile: 2, Logical: 200, Physical: 0, Length: 100},
		{Datafile: 0, Logical: 300, Physical: 100, Length: 50},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %+v, want %+v", got, want)
	}
	if got := Split(d, 10, 0); got != nil {
		t.Errorf("Split of empty range = %v, want nil", got)
	}
	// Runs across the period boundary of varstrip are one piece.
	v := mustNew(t, Varstrip, "strips=0:10;1:20;0:5", 2)
	got = Split(v, 28, 20)
	want = []Piece{
		{Datafile: 1, Logical: 28, Physical: 18, Length: 2},
		{Datafile: 0, Logical: 30, Physical: 10, Length: 15},
		{Datafile: 1, Logical: 45, Physical: 20, Length: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("varstrip Split = %+v, want %+v", got, want)
	}
	// A range ending at the largest offset must not overflow.
	b := mustNew(t, Basic, "", 1)
	if got := Split(b, math.MaxInt64-5, 5); len(got) != 1 || got[0].Length != 5 {
		t.Errorf("Split at the end of the int64 range = %+v", got)
	}
}

func TestSplitPanics(t *testing.T) {
	d := mustNew(t, Basic, "", 1)
	for _, c := range []struct{ off, length int64 }{{-1, 1}, {0, -1}, {math.MaxInt64, 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Split(%d, %d) did not panic", c.off, c.length)
				}
			}()
			Split(d, c.off, c.length)
		}()
	}
}

func TestMethodPanics(t *testing.T) {
	d := mustNew(t, SimpleStripe, "", 2)
	calls := map[string]func(){
		"ToPhysical(-1)":       func() { d.ToPhysical(-1) },
		"ToLogical(2, 0)":      func() { d.ToLogical(2, 0) },
		"ToLogical(0, -1)":     func() { d.ToLogical(0, -1) },
		"NextMapped(-1, 0)":    func() { d.NextMapped(-1, 0) },
		"PhysicalSize(0, -1)":  func() { d.PhysicalSize(0, -1) },
		"LogicalSize(1 size)":  func() { d.LogicalSize([]int64{1}) },
		"LogicalSize(-1 size)": func() { d.LogicalSize([]int64{-1, 0}) },
	}
	for name, call := range calls {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			call()
		}()
	}
}

// TestHugeOffsets checks the int64 limits: offsets up to 2^62 map without
// overflow even with the largest strips, and physical offsets past the
// int64 range saturate instead of wrapping.
func TestHugeOffsets(t *testing.T) {
	dists := []Distribution{
		mustNew(t, SimpleStripe, "strip_size=1099511627776", 4096),
		mustNew(t, SimpleStripe, "strip_size=1", 16),
		mustNew(t, TwodStripe, "num_groups=3,strip_size=1099511627776,group_strip_factor=4096", 7),
		mustNew(t, Varstrip, "strips=0:1099511627776;1:1;0:1099511627775", 2),
	}
	for _, d := range dists {
		for _, off := range []int64{1<<62 - 1, 1 << 62, 1<<62 + 12345} {
			df, p := d.ToPhysical(off)
			if back := d.ToLogical(df, p); back != off {
				t.Errorf("%s:%s: ToLogical(ToPhysical(%d)) = %d", d.Name(), d.Params(), off, back)
			}
			for df := range d.Datafiles() {
				nm := d.NextMapped(df, off)
				if got, _ := d.ToPhysical(nm); nm < off || got != df {
					t.Errorf("%s:%s: NextMapped(%d, %d) = %d on datafile %d", d.Name(), d.Params(), df, off, nm, got)
				}
			}
			sizes := make([]int64, d.Datafiles())
			for df := range sizes {
				sizes[df] = d.PhysicalSize(df, off)
			}
			if got := d.LogicalSize(sizes); got != off {
				t.Errorf("%s:%s: LogicalSize(PhysicalSize(%d)) = %d", d.Name(), d.Params(), off, got)
			}
		}
		if got := d.ToLogical(0, math.MaxInt64); got != math.MaxInt64 {
			t.Errorf("%s:%s: ToLogical(0, MaxInt64) = %d, want saturation", d.Name(), d.Params(), got)
		}
		if got := d.ContiguousLength(math.MaxInt64 - 1); got != 1 {
			t.Errorf("%s:%s: ContiguousLength(MaxInt64-1) = %d, want 1", d.Name(), d.Params(), got)
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	d := mustNew(b, SimpleStripe, "strip_size=65536", 4)
	b.ReportAllocs()
	for b.Loop() {
		pieces := Split(d, 12345, 1<<20)
		if len(pieces) != 17 {
			b.Fatalf("%d pieces", len(pieces))
		}
	}
}
