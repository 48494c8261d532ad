package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"pgregory.net/rapid"

	"github.com/pario/pario/internal/testenv"
)

// paperParams are the parameters that reproduce the paper's Table III:
// mean inter-arrival 10 s, mean service 8 s (rho = 0.8), 0.5 Gbit/s.
var paperParams = Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}

// Table III of the paper, model columns.
var paperTableIII = []struct {
	M   float64
	N   int
	T   string // T_m to four decimals
	Ts  float64
	Ns  int
	Err string
}{
	{1, 1, "48.0000", 49.1129, 1, "2.2%"},
	{10, 4, "117.3120", 114.5909, 4, "2.3%"},
	{50, 20, "181.9326", 176.3773, 24, "3.1%"},
	{100, 40, "210.1419", 202.7398, 42, "3.7%"},
	{500, 199, "274.9212", 263.1881, 179, "4.5%"},
	{1000, 399, "302.6972", 292.9404, 425, "3.3%"},
}

func TestPaperTableIII(t *testing.T) {
	for _, row := range paperTableIII {
		n, T, err := PaperOptimalN(paperParams, row.M, 100000)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%.4f", T); n != row.N || got != row.T {
			t.Errorf("M = %g GB: PaperOptimalN = (%d, %s), paper's Table III has (%d, %s)", row.M, n, got, row.N, row.T)
		}
		// Via the single-point function too.
		T2, _ := PaperSystemTime(paperParams, row.M, row.N)
		if got := fmt.Sprintf("%.4f", T2); got != row.T {
			t.Errorf("M = %g GB: PaperSystemTime(n=%d) = %s, want %s", row.M, row.N, got, row.T)
		}
	}
}

// integralSystemTime evaluates the paper's defining integral
// E(T) = integral_0^inf w d(F1(w)^n) + M/(nV) by composite Gauss-Legendre
// in w, with no use of any closed form.
func integralSystemTime(p Params, M float64, n int) float64 {
	rho := p.Lambda / p.Gamma
	a := p.Gamma * (1 - rho)
	nf := float64(n)
	dens := func(w float64) float64 { // w * d/dw F1(w)^n for w > 0
		e := rho * math.Exp(-a*w)
		return w * nf * math.Pow(1-e, nf-1) * a * e
	}
	// The density of the maximum peaks near ln(n rho)/a and is below
	// exp(-50) of its peak beyond (ln(n)+50)/a.
	end := (math.Log(nf) + 50) / a
	panels := 200
	h := end / float64(panels)
	var sum float64
	for i := range panels {
		sum += quad.Fixed(dens, float64(i)*h, float64(i+1)*h, 20, nil, 0)
	}
	return sum + M/(nf*p.V)
}

func TestSystemTimeIsItsIntegral(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rho := rapid.Float64Range(0.01, 0.99).Draw(rt, "rho")
		gamma := rapid.Float64Range(0.001, 100).Draw(rt, "gamma")
		V := rapid.Float64Range(0.001, 100).Draw(rt, "V")
		M := rapid.Float64Range(0.001, 1e4).Draw(rt, "M")
		n := rapid.IntRange(1, 2000).Draw(rt, "n")
		p := Params{Lambda: rho * gamma, Gamma: gamma, V: V}
		want := integralSystemTime(p, M, n)
		got, err := SystemTime(p, M, n)
		if err != nil {
			rt.Fatal(err)
		}
		if math.Abs(got-want) > 1e-10*want {
			rt.Fatalf("SystemTime = %.15g, integral = %.15g (rel %.2g)", got, want, math.Abs(got-want)/want)
		}
		// The wait part alone, against MeanMaxWait.
		mw, _ := MeanMaxWait(p, n)
		if svc := M / (float64(n) * V); math.Abs(mw+svc-got) > 1e-12*got {
			rt.Fatalf("MeanMaxWait + M/(nV) = %.15g, SystemTime = %.15g", mw+svc, got)
		}
		// The paper's printed closed form is its integral for n <= 2 only;
		// for n >= 3 it overstates the wait.
		pt, _ := PaperSystemTime(p, M, n)
		svc := M / (float64(n) * V)
		waitInt, waitPaper := want-svc, pt-svc
		switch {
		case n <= 2 && math.Abs(waitPaper-waitInt) > 1e-10*want:
			rt.Fatalf("n=%d: paper form %.15g, integral %.15g: should agree", n, pt, want)
		case n >= 3 && !(waitPaper > waitInt*(1+1e-9)):
			rt.Fatalf("n=%d rho=%g: paper wait %.15g not above the integral's %.15g", n, rho, waitPaper, waitInt)
		}
	})
}

// The harmonic-number and tail shortcuts of maxWaitSum against the plain
// sum, including rho so small that the O(n) path is taken.
func TestMaxWaitSumPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	iters := 500
	if testenv.RaceEnabled {
		iters = 100
	}
	for range iters {
		rho := math.Exp(math.Log(1e-6) + rng.Float64()*(-math.Log(1e-6)))
		if rho >= 1 {
			continue
		}
		n := 1 + rng.IntN(20000)
		var plain float64
		lq := math.Log1p(-rho)
		for k := 1; k <= n; k++ {
			plain += -math.Expm1(float64(k)*lq) / float64(k)
		}
		if got := maxWaitSum(rho, n); math.Abs(got-plain) > 1e-12*plain {
			t.Fatalf("rho=%g n=%d: maxWaitSum %.17g, plain sum %.17g", rho, n, got, plain)
		}
	}
}

func TestOptimalNIsArgmin(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rho := rapid.Float64Range(0.01, 0.99).Draw(rt, "rho")
		gamma := rapid.Float64Range(0.001, 10).Draw(rt, "gamma")
		p := Params{Lambda: rho * gamma, Gamma: gamma, V: rapid.Float64Range(0.01, 10).Draw(rt, "V")}
		M := rapid.Float64Range(0.001, 1000).Draw(rt, "M")
		maxN := rapid.IntRange(1, 1500).Draw(rt, "maxN")
		for _, f := range []Formula{Exact, Paper} {
			n, T, err := f.OptimalN(p, M, maxN)
			if err != nil {
				rt.Fatal(err)
			}
			bestT := math.Inf(1)
			for k := 1; k <= maxN; k++ {
				v, _ := f.SystemTime(p, M, k)
				bestT = math.Min(bestT, v)
			}
			if n < 1 || n > maxN || math.Abs(T-bestT) > 1e-12*bestT {
				rt.Fatalf("%v: OptimalN = (%d, %.15g), brute-force minimum %.15g", f, n, T, bestT)
			}
		}
	})
}

func TestOptimalNGrowsWithSize(t *testing.T) {
	prev := 0
	for M := 0.5; M <= 5000; M *= 1.1 {
		n, _, err := OptimalN(paperParams, M, 100000)
		if err != nil {
			t.Fatal(err)
		}
		if n < prev {
			t.Fatalf("optimal n fell from %d to %d at M = %g", prev, n, M)
		}
		prev = n
	}
}

func TestEquilibriumLaw(t *testing.T) {
	p := paperParams
	rho := p.Rho()
	a := p.Gamma - p.Lambda
	if v, _ := IdleProb(p); math.Abs(v-0.2) > 1e-15 {
		t.Errorf("IdleProb = %v", v)
	}
	if v, _ := WaitCDF(p, -1); v != 0 {
		t.Errorf("WaitCDF(-1) = %v", v)
	}
	if v, _ := WaitCDF(p, 0); math.Abs(v-(1-rho)) > 1e-15 {
		t.Errorf("WaitCDF(0) = %v, want 1-rho", v)
	}
	// CDF = atom + integral of the density; mean = integral of w f(w).
	for _, w := range []float64{1, 10, 40, 200} {
		cdf, _ := WaitCDF(p, w)
		mass := quad.Fixed(func(u float64) float64 { v, _ := WaitDensity(p, u); return v }, 0, w, 60, nil, 0)
		if math.Abs(cdf-(1-rho)-mass) > 1e-12 {
			t.Errorf("WaitCDF(%g) - (1-rho) = %.15g, integral of density = %.15g", w, cdf-(1-rho), mass)
		}
		mx, _ := MaxWaitCDF(p, 7, w)
		if math.Abs(mx-math.Pow(cdf, 7)) > 1e-15 {
			t.Errorf("MaxWaitCDF(7, %g) = %v", w, mx)
		}
	}
	var mean float64
	for i := range 100 {
		mean += quad.Fixed(func(u float64) float64 { v, _ := WaitDensity(p, u); return u * v }, float64(i)*20/a, float64(i+1)*20/a, 20, nil, 0)
	}
	eq, _ := MeanWaitEquilibrium(p)
	mm, _ := MeanMaxWait(p, 1)
	if math.Abs(mean-eq) > 1e-10*eq || math.Abs(mm-eq) > 1e-14*eq || math.Abs(eq-32) > 1e-12 {
		t.Errorf("mean wait: integral %.15g, MeanWaitEquilibrium %.15g, MeanMaxWait(1) %.15g, want 32", mean, eq, mm)
	}
}

func errOf[T any](_ T, err error) error          { return err }
func errOf3[T, U any](_ T, _ U, err error) error { return err }

func TestErrors(t *testing.T) {
	good := paperParams
	cases := []struct {
		name string
		err  error
		kind error
		msg  string
	}{
		{"rho>1", errOf(SystemTime(Params{0.15, 0.125, 1}, 1, 1)), ErrUnstable, "model: rho = lambda/gamma = 1.2 >= 1: the queue is unstable"},
		{"rho=1", errOf(P0(Params{0.125, 0.125, 1}, 1)), ErrUnstable, "model: rho = lambda/gamma = 1 >= 1: the queue is unstable"},
		{"lambda=0", errOf(MeanWait(Params{0, 1, 1}, 1)), ErrInvalid, "model: lambda = 0 is not positive"},
		{"lambda<0", errOf(P0(Params{-1, 1, 1}, 1)), ErrInvalid, "model: lambda = -1 is not positive"},
		{"gamma=0", errOf(SystemTime(Params{0.1, 0, 1}, 1, 1)), ErrInvalid, "model: gamma = 0 is not positive"},
		{"gamma NaN", errOf(SystemTime(Params{0.1, math.NaN(), 1}, 1, 1)), ErrInvalid, "model: gamma = NaN is not finite"},
		{"lambda Inf", errOf(SystemTime(Params{math.Inf(1), 1, 1}, 1, 1)), ErrInvalid, "model: lambda = +Inf is not finite"},
		{"V=0", errOf(SystemTime(Params{0.1, 0.125, 0}, 1, 1)), ErrInvalid, "model: V = 0 is not positive"},
		{"M=0", errOf(SystemTime(good, 0, 1)), ErrInvalid, "model: M = 0 is not positive"},
		{"M<0", errOf(PaperSystemTime(good, -5, 1)), ErrInvalid, "model: M = -5 is not positive"},
		{"n=0", errOf(SystemTime(good, 1, 0)), ErrInvalid, "model: n = 0 is not positive (must be >= 1)"},
		{"t<0", errOf(MeanWait(good, -1)), ErrInvalid, "model: t = -1 is negative"},
		{"w NaN", errOf(WaitCDF(good, math.NaN())), ErrInvalid, "model: w = NaN is not a number"},
		{"maxN=0", errOf3(OptimalN(good, 1, 0)), ErrInvalid, "model: maxN = 0 is not positive (must be >= 1)"},
		{"optimal rho>1", errOf3(PaperOptimalN(Params{2, 1, 1}, 1, 10)), ErrUnstable, "model: rho = lambda/gamma = 2 >= 1: the queue is unstable"},
		{"formula", errOf3(Formula(7).OptimalN(good, 1, 10)), ErrInvalid, "model: formula = 7 is not Exact or Paper"},
		{"curve", errOf(TimeCurve(Params{1, 1, 1}, 50, 10, Exact)), ErrUnstable, "model: rho = lambda/gamma = 1 >= 1: the queue is unstable"},
		{"curve size", errOf3(OptimalNCurve(good, []float64{1, -1}, 10, Exact)), ErrInvalid, "model: M = -1 is not positive"},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(c.err, c.kind) {
			t.Errorf("%s: %v does not match %v", c.name, c.err, c.kind)
		}
		if c.err.Error() != c.msg {
			t.Errorf("%s: message %q, want %q", c.name, c.err, c.msg)
		}
		var pe *ParamError
		if !errors.As(c.err, &pe) {
			t.Errorf("%s: not a *ParamError", c.name)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	p := paperParams
	var sink float64
	checks := map[string]func(){
		"SystemTime":      func() { v, _ := SystemTime(p, 50, 20); sink += v },
		"SystemTime big":  func() { v, _ := SystemTime(p, 1000, 399); sink += v },
		"PaperSystemTime": func() { v, _ := PaperSystemTime(p, 50, 20); sink += v },
		"OptimalN":        func() { _, v, _ := OptimalN(p, 1000, 100000); sink += v },
		"PaperOptimalN":   func() { _, v, _ := PaperOptimalN(p, 50, 1000); sink += v },
		"MeanWait":        func() { v, _ := MeanWait(p, 1000); sink += v },
		"P0":              func() { v, _ := P0(p, 1000); sink += v },
		"WaitCDF":         func() { v, _ := WaitCDF(p, 10); sink += v },
		"MeanMaxWait":     func() { v, _ := MeanMaxWait(p, 40); sink += v },
	}
	for name, f := range checks {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
	_ = sink
}
