package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"pgregory.net/rapid"

	"github.com/pario/pario/internal/testenv"
)

// kolmogorov integrates the forward Kolmogorov equations of the M/M/1
// queue-length chain started empty, truncated at K states (reflecting at
// K-1), with classical RK4, and returns p0(t) and integral_0^t p0. It is the
// second, independent method p0 is checked against.
func kolmogorov(lambda, gamma, t float64) (p0, idle float64) {
	rho := lambda / gamma
	// From empty the queue length is stochastically below its equilibrium
	// law, so P(Q(t) >= K) <= rho^K: take rho^K < 1e-17.
	K := int(math.Ceil(math.Log(1e-17)/math.Log(rho))) + 10
	steps := max(400, int(math.Ceil(t*(lambda+gamma)/0.02)))
	h := t / float64(steps)
	// State: p[0..K-1], then the running integral of p[0].
	n := K + 1
	y := make([]float64, n)
	y[0] = 1
	k1, k2, k3, k4, tmp := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	deriv := func(dst, p []float64) {
		dst[0] = -lambda*p[0] + gamma*p[1]
		for i := 1; i < K-1; i++ {
			dst[i] = lambda*p[i-1] - (lambda+gamma)*p[i] + gamma*p[i+1]
		}
		dst[K-1] = lambda*p[K-2] - gamma*p[K-1]
		dst[K] = p[0]
	}
	for range steps {
		deriv(k1, y)
		for i := range y {
			tmp[i] = y[i] + h/2*k1[i]
		}
		deriv(k2, tmp)
		for i := range y {
			tmp[i] = y[i] + h/2*k2[i]
		}
		deriv(k3, tmp)
		for i := range y {
			tmp[i] = y[i] + h*k3[i]
		}
		deriv(k4, tmp)
		for i := range y {
			y[i] += h / 6 * (k1[i] + 2*k2[i] + 2*k3[i] + k4[i])
		}
	}
	return y[0], y[K]
}

func TestP0AgainstKolmogorov(t *testing.T) {
	cases := []struct {
		lambda, gamma float64
		ts            []float64
	}{
		{0.1, 0.125, []float64{0.5, 10, 100, 1000, 3000}}, // the paper's parameters
		{0.3, 1, []float64{0.1, 1, 10, 50}},
		{0.9, 1, []float64{1, 10, 100, 1000}},
		{0.05, 1, []float64{0.2, 2, 20}},
		{2, 7, []float64{0.05, 1, 5}},
	}
	for _, c := range cases {
		p := Params{Lambda: c.lambda, Gamma: c.gamma, V: 1}
		rho := c.lambda / c.gamma
		for _, tt := range c.ts {
			if testenv.RaceEnabled && tt*(c.lambda+c.gamma) > 100 {
				continue // the race build checks the shorter horizons only
			}
			refP0, refIdle := kolmogorov(c.lambda, c.gamma, tt)
			got, err := P0(p, tt)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-refP0) > 1e-10 {
				t.Errorf("lambda=%g gamma=%g t=%g: P0 = %.15g, Kolmogorov RK4 = %.15g", c.lambda, c.gamma, tt, got, refP0)
			}
			w, err := MeanWait(p, tt)
			if err != nil {
				t.Fatal(err)
			}
			ref := (rho-1)*tt + refIdle
			if math.Abs(w-ref) > 1e-8*math.Max(1, ref) {
				t.Errorf("lambda=%g gamma=%g t=%g: MeanWait = %.15g, Kolmogorov RK4 = %.15g", c.lambda, c.gamma, tt, w, ref)
			}
		}
	}
}

func TestP0Limits(t *testing.T) {
	for _, p := range []Params{{0.1, 0.125, 1}, {0.5, 1, 1}, {0.999, 1, 1}, {1e-4, 1, 1}} {
		rho := p.Rho()
		v, err := P0(p, 0)
		if err != nil || math.Abs(v-1) > 1e-13 {
			t.Errorf("%+v: P0(0) = %v, %v; want 1", p, v, err)
		}
		beta, _ := RelaxationRate(p)
		for _, tt := range []float64{50 / beta, 1e3 / beta} {
			v, _ := P0(p, tt)
			if math.Abs(v-(1-rho)) > 1e-15 {
				t.Errorf("%+v: P0(%g) = %.17g, want 1-rho = %.17g", p, tt, v, 1-rho)
			}
			w, _ := MeanWait(p, tt)
			eq, _ := MeanWaitEquilibrium(p)
			if math.Abs(w-eq) > 1e-13*eq {
				t.Errorf("%+v: MeanWait(%g) = %.17g, want %.17g", p, tt, w, eq)
			}
		}
		// Just below the cut-over to the closed form the transient part must
		// already be negligible: no jump at beta0 t = 40.
		below := 39.999 / beta
		w, _ := MeanWait(p, below)
		eq, _ := MeanWaitEquilibrium(p)
		if math.Abs(w-eq) > 1e-12*eq {
			t.Errorf("%+v: MeanWait just before cut-over = %.17g, eq %.17g", p, w, eq)
		}
		v, _ = P0(p, below)
		if math.Abs(v-(1-rho)) > 1e-12 {
			t.Errorf("%+v: P0 just before cut-over = %.17g, 1-rho %.17g", p, v, 1-rho)
		}
	}
}

// The two forms of E(W(t)) (direct, and equilibrium minus the transient)
// must agree wherever both can be evaluated: checks the panel quadrature
// across regimes (rho -> 1 makes 1/d nearly singular; large t makes the
// exponential factor narrow).
func TestMeanWaitFormsAgree(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rho := rapid.Float64Range(0.001, 0.999).Draw(rt, "rho")
		gamma := rapid.Float64Range(0.01, 100).Draw(rt, "gamma")
		p := Params{Lambda: rho * gamma, Gamma: gamma, V: 1}
		beta, err := RelaxationRate(p)
		if err != nil {
			rt.Fatal(err)
		}
		x := rapid.Float64Range(0.01, 10).Draw(rt, "beta0*t")
		tt := x / beta
		s := newSpectral(p, tt)
		c := 2 * rho / (math.Pi * gamma)
		eq := rho / (gamma * (1 - rho))
		direct := c * s.integrate(intWaitDirect)
		tail := eq - c*math.Exp(-beta*tt)*s.integrate(intWaitTail)
		if math.Abs(direct-tail) > 1e-11*eq {
			rt.Fatalf("rho=%g gamma=%g t=%g: direct %.15g, tail form %.15g", rho, gamma, tt, direct, tail)
		}
	})
}

// Eq. (2) itself: E(W(t)) = (rho-1)t + integral_0^t p0(u) du, with the
// integral of P0 taken by composite Gauss-Legendre.
func TestMeanWaitIsIntegralOfP0(t *testing.T) {
	n := 100
	if testenv.RaceEnabled {
		n = 15
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range n {
		rho := 0.01 + 0.98*rng.Float64()
		gamma := math.Exp(math.Log(0.01) + rng.Float64()*math.Log(1000))
		p := Params{Lambda: rho * gamma, Gamma: gamma, V: 1}
		tt := math.Exp(math.Log(0.01)+rng.Float64()*math.Log(2e4)) / gamma
		f := func(u float64) float64 {
			v, err := P0(p, u)
			if err != nil {
				panic(err)
			}
			return v
		}
		// Panels [0,h],[h,2h],[2h,4h],... resolve the fast initial drop.
		var idle float64
		a, b := 0.0, math.Min(tt, 0.5/(p.Lambda+p.Gamma))
		for a < tt {
			idle += quad.Fixed(f, a, b, 20, nil, 0)
			a, b = b, math.Min(tt, 2*b)
		}
		want := (rho-1)*tt + idle
		got, err := MeanWait(p, tt)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9*math.Max(got, 1e-3*tt) {
			t.Errorf("rho=%g gamma=%g t=%g: MeanWait %.15g, (rho-1)t + quad(P0) %.15g", rho, gamma, tt, got, want)
		}
	}
}

func TestTransientShape(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rho := rapid.Float64Range(0.001, 0.999).Draw(rt, "rho")
		gamma := rapid.Float64Range(0.01, 100).Draw(rt, "gamma")
		p := Params{Lambda: rho * gamma, Gamma: gamma, V: 1}
		t1 := rapid.Float64Range(0, 1e4).Draw(rt, "gamma*t1") / gamma
		t2 := t1 * rapid.Float64Range(1, 3).Draw(rt, "ratio")
		p1, _ := P0(p, t1)
		p2, _ := P0(p, t2)
		w1, _ := MeanWait(p, t1)
		w2, _ := MeanWait(p, t2)
		eq, _ := MeanWaitEquilibrium(p)
		const eps = 1e-12
		if p1 < 1-rho-eps || p1 > 1+eps || p2 > p1+eps {
			rt.Fatalf("P0 not decreasing within [1-rho, 1]: P0(%g)=%g P0(%g)=%g rho=%g", t1, p1, t2, p2, rho)
		}
		if w1 < -eps || w2 < w1-eps*eq || w2 > eq*(1+eps) {
			rt.Fatalf("MeanWait not increasing within [0, eq=%g]: W(%g)=%g W(%g)=%g", eq, t1, w1, t2, w2)
		}
	})
}
