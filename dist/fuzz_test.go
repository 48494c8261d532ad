package dist

import (
	"errors"
	"testing"
)

// checkInvariants spot-checks a distribution that was built without error:
// the round trip, Split over the first few strips, and the sizes.
func checkInvariants(t *testing.T, d Distribution) {
	t.Helper()
	n := d.Datafiles()
	if n < 1 {
		t.Fatalf("%s:%s: %d datafiles", d.Name(), d.Params(), n)
	}
	for _, off := range []int64{0, 1, 4095, 65536, 1<<31 + 7, 1 << 62} {
		df, p := d.ToPhysical(off)
		if df < 0 || df >= n || p < 0 || p > off {
			t.Fatalf("%s:%s: ToPhysical(%d) = (%d, %d)", d.Name(), d.Params(), off, df, p)
		}
		if back := d.ToLogical(df, p); back != off {
			t.Fatalf("%s:%s: ToLogical(ToPhysical(%d)) = %d", d.Name(), d.Params(), off, back)
		}
		var sum int64
		sizes := make([]int64, n)
		for df := range sizes {
			sizes[df] = d.PhysicalSize(df, off)
			sum += sizes[df]
			if nm := d.NextMapped(df, off); nm < off {
				t.Fatalf("%s:%s: NextMapped(%d, %d) = %d", d.Name(), d.Params(), df, off, nm)
			}
		}
		if sum != off || d.LogicalSize(sizes) != off {
			t.Fatalf("%s:%s: sizes %v for %d", d.Name(), d.Params(), sizes, off)
		}
	}
	for _, start := range []int64{0, 1<<32 - 100} {
		next := start
		for _, p := range Split(d, start, 1<<12) {
			if p.Logical != next {
				t.Fatalf("%s:%s: Split gap at %d", d.Name(), d.Params(), next)
			}
			if df, phys := d.ToPhysical(p.Logical + p.Length - 1); df != p.Datafile || phys != p.Physical+p.Length-1 {
				t.Fatalf("%s:%s: piece %+v ends on (%d, %d)", d.Name(), d.Params(), p, df, phys)
			}
			next += p.Length
		}
	}
}

func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{
		"simple_stripe", "simple_stripe:strip_size=1048576", "simple_stripe:strip_size=4k,num_datafiles=3",
		"basic", "basic:num_datafiles=1", "varstrip:strips=0:200000;1:4000000", "varstrip:strips=0:10;1:20;0:5",
		"twod_stripe:num_groups=2,strip_size=65536,group_strip_factor=256", "twod_stripe:num_groups=9,strip_size=1,group_strip_factor=3",
		"simple_stripe:strip_size=-1", "varstrip:strips=0:1;2:1", "",
		"simple_stripe:servers=2;0;1", "varstrip:strips=0:7;1:9,servers=1;0", "basic:servers=0", "simple_stripe:servers=1;1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLayout(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseLayout(%q): error %v is not ErrInvalid", s, err)
			}
			return
		}
		again, err := ParseLayout(l.String())
		if err != nil || again != l {
			t.Fatalf("ParseLayout(%q) = %+v; its String %q parses as %+v, %v", s, l, l.String(), again, err)
		}
		for _, servers := range []int{1, 3, 16} {
			d, err := l.Build(servers)
			if err != nil {
				continue
			}
			if d.Name() != l.Dist || d.Params() != l.Params || (l.Datafiles != 0 && d.Datafiles() != l.Datafiles) {
				t.Fatalf("%+v.Build(%d) = %s:%s on %d datafiles", l, servers, d.Name(), d.Params(), d.Datafiles())
			}
			checkInvariants(t, d)
		}
	})
}

func FuzzParseHintString(f *testing.F) {
	for _, s := range []string{
		"dist=simple_stripe,strip_size=1m", "strip_size=64k", "varstrip_dist:string:strips=0:200000;1:4000000",
		"layout=twod_stripe:num_groups=3", "num_datafiles=4", "dist=varstrip,strips=0:1;1:2,num_datafiles=2",
		"a=1,,b=2", "=x", "dist", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHintString(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseHintString(%q): error %v is not ErrInvalid", s, err)
			}
			return
		}
		l, err := ParseHints(h)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseHints(%v): error %v is not ErrInvalid", h, err)
			}
			return
		}
		if l.IsZero() {
			if len(h) != 0 {
				t.Fatalf("ParseHints(%v) gave the zero layout", h)
			}
			return
		}
		if again, err := ParseLayout(l.String()); err != nil || again != l {
			t.Fatalf("ParseHints(%v) = %+v; its String %q parses as %+v, %v", h, l, l.String(), again, err)
		}
		if d, err := l.Build(16); err == nil {
			checkInvariants(t, d)
		}
	})
}

func FuzzVarstrip(f *testing.F) {
	for _, c := range []struct {
		strips string
		n      int
	}{
		{"0:200000;1:4000000", 2}, {"0:10;1:20;0:5", 2}, {"0:1;1:1;2:1;3:1", 4}, {"0:1099511627776;1:1", 2},
		{"0:10;1:10;", 1}, {"1:5;0:5", 8}, {"0:10;2:10", 3}, {"0:0", 1},
	} {
		f.Add(c.strips, c.n)
	}
	f.Fuzz(func(t *testing.T, strips string, n int) {
		d, err := New(Varstrip, "strips="+strips, n)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("New(varstrip, %q, %d): error %v is not ErrInvalid", strips, n, err)
			}
			return
		}
		if d.Datafiles() > n {
			t.Fatalf("New(varstrip, %q, %d) uses %d datafiles", strips, n, d.Datafiles())
		}
		again, err := New(Varstrip, d.Params(), d.Datafiles())
		if err != nil || again.Params() != d.Params() {
			t.Fatalf("New(varstrip, %q, %d): %v", d.Params(), d.Datafiles(), err)
		}
		checkInvariants(t, d)
	})
}
