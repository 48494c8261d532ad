package cost

import (
	"math"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	const D = 10e6 // 10 MB; raw over 1 MB/s takes 10 s, half of it is 5 s
	for _, tc := range []struct {
		name string
		e    Estimate
		B    float64
		want Quadrant
	}{
		{"zstd on text: 10x, fast", Estimate{X: 1e6, F: 0.2, G: 0.1}, 1e6, Q1},
		{"blast: 256x, slow regeneration", Estimate{X: 40e3, F: 0.1, G: 6}, 1e6, Q2},
		{"megablast tabular: metadata larger, slow", Estimate{X: 14e6, F: 0.1, G: 6}, 1e6, Q3},
		{"incompressible: no gain, fast", Estimate{X: 9.9e6, F: 0.05, G: 0.05}, 1e6, Q4},
		{"x exactly D/2 is large", Estimate{X: D / 2}, 1e6, Q1},
		{"f+g exactly D/2B is much", Estimate{X: 1e6, F: 2.5, G: 2.5}, 1e6, Q2},
		{"a faster link makes the same plugin slow", Estimate{X: 1e6, F: 0.2, G: 0.1}, 100e6, Q2},
		{"no link", Estimate{X: 1e6, F: 100, G: 100}, 0, Q1},
	} {
		if got := Classify(D, tc.e, tc.B); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Quadrants 1 and 3 are where equation 3 decides alone: a plugin in 1
// always beats raw, one in 3 never does, whatever the numbers in them.
func TestQuadrantsAgreeWithEquation3(t *testing.T) {
	const D = 1e7
	for _, x := range []float64{1, 1e3, 1e6, 4.9e6, 5e6, 5.1e6, 9e6, 1e7, 2e7} {
		for _, fg := range []float64{0, 0.01, 1, 4.9, 5, 5.1, 20} {
			for _, B := range []float64{1e5, 1e6, 1e7} {
				e := Estimate{X: x, F: fg / 2, G: fg / 2}
				l := Link{B: B}
				pays := Time(0, e, l) < Raw(0, D, l)
				switch q := Classify(D, e, B); {
				case q == Q1 && !pays:
					t.Errorf("x=%g f+g=%g B=%g: %v but raw is faster", x, fg, B, q)
				case q == Q3 && pays:
					t.Errorf("x=%g f+g=%g B=%g: %v but it pays", x, fg, B, q)
				}
			}
		}
	}
}

func TestQuadrantString(t *testing.T) {
	for q, want := range map[Quadrant]string{Q1: "quadrant 1", Q2: "quadrant 2", Q3: "never pays", Q4: "quadrant 4", 7: "quadrant 7"} {
		if s := q.String(); !strings.Contains(s, want) {
			t.Errorf("%d: %q lacks %q", int(q), s, want)
		}
	}
	if Q2.Short() != "Q2" {
		t.Errorf("Short %q", Q2.Short())
	}
}

func TestScaleAndHistory(t *testing.T) {
	for _, tc := range []struct {
		name          string
		g, on, target float64
		want          float64
	}{
		{"same speed", 2, 100, 100, 2},
		{"receiver half as fast", 2, 100, 50, 4},
		{"receiver twice as fast", 2, 100, 200, 1},
		{"unknown here", 2, 0, 50, 2},
		{"unknown there", 2, 100, -1, 2},
	} {
		if got := ScaleG(tc.g, tc.on, tc.target); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: ScaleG = %g, want %g", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name               string
		D, rate, then, now float64
		want               float64
		ok                 bool
	}{
		{"as then", 10e6, 5e6, 100, 100, 2, true},
		{"loaded now: half the speed", 10e6, 5e6, 100, 50, 4, true},
		{"no speeds: the record as is", 10e6, 5e6, 0, 0, 2, true},
		{"no record", 10e6, 0, 100, 100, 0, false},
		{"broken record", 10e6, math.Inf(1), 100, 100, 0, false},
	} {
		got, ok := GFromHistory(tc.D, tc.rate, tc.then, tc.now)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: GFromHistory = %g, %v; want %g, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSocketBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		B, RTT float64
		want   int
	}{
		{"unknown bandwidth", 0, 0.1, 0},
		{"unknown RTT", 1e7, 0, 0},
		{"10 MB/s x 100 ms", 10e6, 0.1, 1e6},
		{"small BDP: the floor", 1e6, 0.01, MinSocketBuffer},
		{"the paper's 30 Gbit/s x 10 ms", 30e9 / 8, 0.01, 37.5e6},
		{"30 Gbit/s x 100 ms: capped", 30e9 / 8, 0.1, MaxSocketBuffer},
		{"NaN", math.NaN(), 0.1, 0},
	} {
		if got := SocketBuffer(tc.B, tc.RTT); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	l := Link{B: 1e6}
	raw := Estimate{Name: "raw", X: 10e6}
	zstd := Estimate{Name: "zstd", X: 1e6, F: 0.2, G: 0.1}
	slow := Estimate{Name: "blast", X: 40e3, F: 0.1, G: 6}
	big := Estimate{Name: "megablast", X: 14e6, F: 0.1, G: 0.5}
	for _, tc := range []struct {
		name string
		es   []Estimate
		l    Link
		best string
		next string
		none bool
	}{
		{"zstd beats a slow semantic plugin at 1 MB/s", []Estimate{slow, zstd, raw}, l, "zstd", "blast", false},
		{"the semantic plugin wins at 50 KB/s", []Estimate{slow, zstd, raw}, Link{B: 50e3}, "blast", "zstd", false},
		{"metadata larger than the output never wins", []Estimate{big, raw}, l, "raw", "megablast", false},
		{"raw alone", []Estimate{raw}, l, "raw", "", false},
		{"nothing", nil, l, "", "", true},
	} {
		var cs []Choice
		if tc.es != nil {
			cs = Plan(0, 10e6, tc.es, tc.l)
		}
		d, ok := Decide(cs)
		if ok == tc.none {
			t.Errorf("%s: ok = %v", tc.name, ok)
			continue
		}
		if tc.none {
			continue
		}
		if d.Best.Name != tc.best {
			t.Errorf("%s: chose %s, want %s", tc.name, d.Best.Name, tc.best)
		}
		for _, c := range cs {
			if c.A < d.Best.A {
				t.Errorf("%s: chose %s (%.3f s) though %s is priced %.3f s", tc.name, d.Best.Name, d.Best.A, c.Name, c.A)
			}
		}
		switch {
		case tc.next == "" && d.Next != nil:
			t.Errorf("%s: runner-up %s, want none", tc.name, d.Next.Name)
		case tc.next != "" && (d.Next == nil || d.Next.Name != tc.next):
			t.Errorf("%s: runner-up %+v, want %s", tc.name, d.Next, tc.next)
		}
		if why := d.Why(); !strings.Contains(why, tc.best) {
			t.Errorf("%s: Why %q does not name %s", tc.name, why, tc.best)
		}
	}
}

func TestRobust(t *testing.T) {
	raw := Estimate{Name: "raw", X: 10e6}
	zstd := Estimate{Name: "zstd", X: 1e6, F: 0.2, G: 0.1}
	blast := Estimate{Name: "blast", X: 40e3, F: 0.1, G: 6}
	// zstd/raw cross at (10e6-1e6)/0.3 = 30 MB/s; blast/zstd at
	// (1e6-40e3)/5.8 = 166 kB/s.
	for _, tc := range []struct {
		name string
		B    float64
		want bool
	}{
		{"1 MB/s: zstd from 500 kB/s to 2 MB/s", 1e6, true},
		{"200 kB/s: blast wins at half", 200e3, false},
		{"20 MB/s: raw wins at twice", 20e6, false},
		{"100 MB/s: raw throughout", 100e6, true},
		{"10 kB/s: blast throughout", 10e3, true},
	} {
		if got := Robust(0, 10e6, []Estimate{raw, zstd, blast}, Link{B: tc.B}, 2); got != tc.want {
			t.Errorf("%s: Robust = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !Robust(0, 1, nil, Link{B: 1}, 2) {
		t.Error("no candidates: nothing to get wrong")
	}
}
