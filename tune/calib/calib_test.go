package calib

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

func TestLoads(t *testing.T) {
	cases := []struct {
		p    Point
		want []Load
	}{
		// Aligned transfers inside one strip: one request each.
		{Point{Strip: 1 << 20, Transfer: 256 << 10, Targets: 1, Size: 4 << 20}, []Load{{4 << 20, 16}}},
		// A transfer over 4 strips is cut into 4 requests.
		{Point{Strip: 1 << 20, Transfer: 4 << 20, Targets: 1, Size: 8 << 20}, []Load{{8 << 20, 8}}},
		// Round robin over 2 targets; the last transfer is short.
		{Point{Strip: 1 << 20, Transfer: 1 << 20, Targets: 2, Size: 3<<20 + 5}, []Load{{2 << 20, 2}, {1<<20 + 5, 2}}},
		// Unaligned transfers straddle strips.
		{Point{Strip: 100, Transfer: 60, Targets: 1, Size: 300}, []Load{{300, 7}}},
	}
	for _, c := range cases {
		got := Loads(c.p)
		if len(got) != len(c.want) {
			t.Fatalf("%s: %v, want %v", c.p.Label(), got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.p.Label(), got, c.want)
			}
		}
	}
}

func TestRelErrors(t *testing.T) {
	e := RelErrors([]float64{100, 200}, []float64{90, 220})
	if math.Abs(e.Error1-(-10.0/300)) > 1e-12 || math.Abs(e.Error2-500.0/50000) > 1e-12 {
		t.Errorf("RelErrors = %+v, want error1 %v, error2 %v", e, -10.0/300, 500.0/50000)
	}
}

// synthetic measures a strip x transfer grid with the model: service
// B/V + R c, waiting from the equilibrium law (idle with probability
// 1-rho, else exponential with rate gamma(1-rho)), and relative noise.
func synthetic(truth Params, targets []int, reps int, seed uint64, noise float64) []Point {
	r := rand.New(rand.NewPCG(seed, 1))
	var pts []Point
	sizes := []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20}
	for _, n := range targets {
		for _, s := range sizes {
			for _, tr := range sizes {
				if tr > s {
					continue
				}
				p := Point{Strip: s, Transfer: tr, Targets: n, Size: 256 << 20}
				svc := Service(p, truth.V, truth.Overhead)
				rho := truth.Rho()
				for range reps {
					w := 0.0
					for range n {
						wi := 0.0
						if r.Float64() < rho {
							wi = r.ExpFloat64() / (truth.Gamma * (1 - rho))
						}
						w = math.Max(w, wi)
					}
					p.Times = append(p.Times, (svc+w)*(1+noise*r.NormFloat64()))
				}
				pts = append(pts, p)
			}
		}
	}
	return pts
}

func TestFitRecoversKnownParameters(t *testing.T) {
	v, c := 500.0*MiB, 200e-6
	// gamma as the fit defines it: requests per second of service.
	probe := synthetic(Params{V: v, Overhead: c, Lambda: 1e-9, Gamma: 1}, []int{1}, 1, 1, 0)
	var reqs, svc float64
	for _, p := range probe {
		for _, l := range Loads(p) {
			reqs += float64(l.Requests)
			svc += float64(l.Bytes)/v + float64(l.Requests)*c
		}
	}
	gamma := reqs / svc
	truth := Params{V: v, Overhead: c, Gamma: gamma, Lambda: 0.5 * gamma}
	// The mean wait, rho/(gamma(1-rho)), is 0.46 ms: the noise must be
	// smaller for the waiting time's law to show (0.001%, 5 us).
	pts := synthetic(truth, []int{1}, 40, 7, 1e-5)
	f, err := FitParams(pts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rel := func(got, want float64) float64 { return math.Abs(got-want) / want }
	t.Logf("fitted %+v (rho %.3f), staged %+v, truth %+v", f.Params, f.Params.Rho(), f.Staged, truth)
	if !f.OverheadUsed {
		t.Errorf("the data have a per-request overhead but the fit dropped it")
	}
	if rel(f.Params.V, v) > 0.05 {
		t.Errorf("V = %.4g MiB/s, want %.4g", f.Params.V/MiB, v/MiB)
	}
	if rel(f.Params.Overhead, c) > 0.1 {
		t.Errorf("overhead = %.4g s, want %.4g", f.Params.Overhead, c)
	}
	if rel(f.Params.Gamma, gamma) > 0.1 {
		t.Errorf("gamma = %.4g, want %.4g", f.Params.Gamma, gamma)
	}
	if math.Abs(f.Params.Rho()-0.5) > 0.1 {
		t.Errorf("rho = %.3f, want 0.5", f.Params.Rho())
	}
	rep, err := Compare(context.Background(), f, 4000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bandwidth.Error2 > 0.005 || math.Abs(rep.Bandwidth.Error1) > 0.03 {
		t.Errorf("errors %+v, want error2 < 0.005 and |error1| < 0.03", rep.Bandwidth)
	}
}

func TestFitSeveralServersAndNoOverhead(t *testing.T) {
	truth := Params{V: 800 * MiB, Gamma: 50, Lambda: 20}
	pts := synthetic(truth, []int{1, 2, 4}, 30, 3, 0.01)
	f, err := FitParams(pts, Options{Gamma: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fitted %+v", f.Params)
	if f.OverheadUsed && f.Params.Overhead > 1e-6 {
		t.Errorf("no overhead in the data, fitted c = %g s", f.Params.Overhead)
	}
	if math.Abs(f.Params.V-truth.V)/truth.V > 0.05 {
		t.Errorf("V = %.4g MiB/s, want 800", f.Params.V/MiB)
	}
	if math.Abs(f.Params.Rho()-0.4) > 0.1 {
		t.Errorf("rho = %.3f, want 0.4", f.Params.Rho())
	}
}

func TestFitRejectsBadInput(t *testing.T) {
	if _, err := FitParams(nil, Options{}); err == nil {
		t.Error("no points: no error")
	}
	bad := []Point{{Strip: 1 << 20, Transfer: 1 << 20, Targets: 1, Size: 1 << 20, Times: []float64{-1}}}
	if _, err := FitParams(bad, Options{}); err == nil {
		t.Error("negative time: no error")
	}
	good := []Point{{Strip: 1 << 20, Transfer: 1 << 20, Targets: 1, Size: 1 << 20, Times: []float64{1}}}
	if _, err := FitParams(good, Options{Overhead: "maybe"}); err == nil {
		t.Error("overhead maybe: no error")
	}
}

func TestMergeAndFormat(t *testing.T) {
	a := Point{Strip: 1 << 20, Transfer: 64 << 10, Targets: 1, Size: 1 << 26, Times: []float64{1}}
	b := a
	b.Times = []float64{2}
	c := a
	c.Strip = 64 << 10
	m := Merge([]Point{a, c, b})
	if len(m) != 2 || m[0].Strip != 64<<10 || len(m[1].Times) != 2 {
		t.Errorf("Merge = %+v", m)
	}
	// Labels and the --run result names use units.FormatSize.
	if got, want := m[1].Label(), "S=1m t=64k n=1 M=64m"; got != want {
		t.Errorf("Label() = %q, want %q", got, want)
	}
}
