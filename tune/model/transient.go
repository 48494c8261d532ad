package model

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// Transient behaviour of one target that starts empty at time 0.
//
// # How p0(t) is computed
//
// For the M/M/1 queue started empty, the Laplace transform of
// p0(t) = P(idle at t) is r(s)/(gamma(1-r(s))), with r(s) the root inside
// the unit disc of lambda z^2 - (lambda+gamma+s) z + gamma = 0. It has a
// simple pole at s = 0 (residue 1-rho) and a branch cut on
// s = -gamma d(theta), theta in (0, pi), where
//
//	d(theta) = 1 + rho - 2 sqrt(rho) cos(theta) = (1-sqrt(rho))^2 + 4 sqrt(rho) sin^2(theta/2).
//
// Inverting along the cut gives the spectral (integral) form of the
// classical Bessel-function series for the M/M/1 transient:
//
//	p0(t) = (1-rho) + (2 rho/pi) integral_0^pi exp(-gamma d t) sin^2(theta)/d dtheta.
//
// Integrating in t, the (rho-1)t of eq. (2) cancels the (1-rho)t exactly:
//
//	E(W(t)) = (rho-1)t + integral_0^t p0(u) du
//	        = (2 rho/(pi gamma)) integral_0^pi (1-exp(-gamma d t)) sin^2(theta)/d^2 dtheta,
//
// so no precision is lost at large t. Both integrands are positive and
// smooth; the factor exp(-gamma d t) = exp(-beta0 t) exp(-kappa(1-cos theta))
// with beta0 = gamma(1-sqrt(rho))^2 (the relaxation rate) and kappa =
// 2 gamma sqrt(rho) t concentrates near theta = 0 as t grows, and 1/d has
// poles at distance about (1-sqrt(rho))/rho^(1/4) from theta = 0 as rho -> 1.
// The integrals are therefore taken with 20-point Gauss-Legendre on panels
// that start at the smaller of those two scales, double in width, never let
// kappa(1-cos theta) change by more than 8 across a panel, and stop where
// it reaches 45 (the rest is below exp(-45)). Once beta0 t > 40 the
// transient part is below exp(-40) of the result and the equilibrium values
// 1-rho and rho/(gamma(1-rho)) are returned directly.
//
// # How it is verified (transient_test.go)
//
//   - p0(0) = 1 and p0(t) -> 1-rho, E(W(t)) -> rho/(gamma(1-rho)) at large t;
//   - a second, independent method: the forward Kolmogorov equations of the
//     queue-length chain truncated at enough states, integrated with RK4
//     (p0 and its integral) at several rho and t;
//   - E(W(t)) against (rho-1)t plus a direct numerical quadrature of P0
//     over [0, t], i.e. eq. (2) itself;
//   - the discrete-event simulator (tune/sim) at t = 1000, 10000, 20000 s
//     (the paper's Table II).

const glN = 20

// glX, glW are the 20-point Gauss-Legendre nodes and weights on [-1, 1].
var glX, glW [glN]float64

func init() {
	quad.Legendre{}.FixedLocations(glX[:], glW[:], -1, 1)
}

// integrand selects one of the three theta-integrands.
type integrand int

const (
	// exp(-kappa(1-cos)) sin^2/d: p0(t) - (1-rho), up to constant factors.
	intP0 integrand = iota
	// exp(-kappa(1-cos)) sin^2/d^2: the transient part of E(W(t)).
	intWaitTail
	// (1-exp(-gamma d t)) sin^2/d^2: E(W(t)) directly, for small t.
	intWaitDirect
)

// spectral holds the constants of one evaluation.
type spectral struct {
	r     float64 // sqrt(rho)
	d0    float64 // (1-sqrt(rho))^2 = d(0)
	kappa float64 // 2 gamma sqrt(rho) t
	gt    float64 // gamma t
}

func newSpectral(p Params, t float64) spectral {
	rho := p.Lambda / p.Gamma
	r := math.Sqrt(rho)
	om := (1 - rho) / (1 + r) // 1 - sqrt(rho), without cancellation
	return spectral{r: r, d0: om * om, kappa: 2 * p.Gamma * r * t, gt: p.Gamma * t}
}

func (s *spectral) eval(kind integrand, theta float64) float64 {
	h := math.Sin(theta / 2)
	h2 := h * h
	sn := math.Sin(theta)
	d := s.d0 + 4*s.r*h2
	switch kind {
	case intP0:
		return math.Exp(-2*s.kappa*h2) * sn * sn / d
	case intWaitTail:
		return math.Exp(-2*s.kappa*h2) * sn * sn / (d * d)
	default:
		return -math.Expm1(-s.gt*d) * sn * sn / (d * d)
	}
}

// tailCut is where kappa(1-cos theta) stops being resolved: exp(-45) is
// far below double precision relative to the part already integrated.
const tailCut = 45

// integrate returns integral_0^thetaMax of the chosen integrand.
func (s *spectral) integrate(kind integrand) float64 {
	thetaMax := math.Pi
	limitExp := kind != intWaitDirect && s.kappa > 0
	if limitExp {
		// 2 kappa sin^2(theta/2) = tailCut
		if v := tailCut / (2 * s.kappa); v < 1 {
			thetaMax = 2 * math.Asin(math.Sqrt(v))
		}
	}
	// First panel: below every scale of the integrand.
	first := math.Pi / 8
	if delta := math.Sqrt(s.d0 / s.r); delta/2 < first { // pole distance ~ (1-r)/sqrt(r)
		first = delta / 2
	}
	if s.kappa > 0 {
		if w := 1 / math.Sqrt(s.kappa); w < first {
			first = w
		}
	}
	var sum float64
	a, b := 0.0, first
	for a < thetaMax {
		if b > thetaMax {
			b = thetaMax
		}
		half, mid := (b-a)/2, (a+b)/2
		var ps float64
		for i := range glN {
			ps += glW[i] * s.eval(kind, mid+half*glX[i])
		}
		sum += half * ps
		a = b
		w := a // doubling
		if limitExp {
			// d/dtheta of kappa(1-cos theta) is kappa sin theta <= kappa theta.
			if we := 8 / (s.kappa * a); we < w {
				w = we
			}
		}
		b = a + w
	}
	return sum
}

// relaxed reports whether the transient part is negligible at t: the
// corrections are bounded by exp(-beta0 t) times the equilibrium value.
func (s *spectral) relaxed(gamma, t float64) bool {
	return gamma*s.d0*t > 40
}

// P0 returns p0(t), the probability that a target which was empty at time
// 0 is idle at time t >= 0. See the comment at the top of transient.go for
// the method.
func P0(p Params, t float64) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	if err := nonNegative("t", t); err != nil {
		return 0, err
	}
	rho := p.Lambda / p.Gamma
	s := newSpectral(p, t)
	if s.relaxed(p.Gamma, t) {
		return 1 - rho, nil
	}
	return (1 - rho) + 2*rho/math.Pi*math.Exp(-p.Gamma*s.d0*t)*s.integrate(intP0), nil
}

// MeanWait returns E(W(t)) = (rho-1)t + integral_0^t p0(u) du, the mean
// waiting time of a request arriving at time t >= 0 at a target that was
// empty at time 0 (eq. 2 of the paper). It increases to
// MeanWaitEquilibrium as t grows; MeanWaitEquilibrium - MeanWait(t) is the
// bias of a simulation started empty and observed at t.
func MeanWait(p Params, t float64) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	if err := nonNegative("t", t); err != nil {
		return 0, err
	}
	if t == 0 {
		return 0, nil
	}
	rho := p.Lambda / p.Gamma
	eq := rho / (p.Gamma * (1 - rho))
	s := newSpectral(p, t)
	if s.relaxed(p.Gamma, t) {
		return eq, nil
	}
	c := 2 * rho / (math.Pi * p.Gamma)
	if p.Gamma*s.d0*t <= 1 {
		// Early: integrate 1-exp(-gamma d t) directly (no cancellation).
		return c * s.integrate(intWaitDirect), nil
	}
	// Later: equilibrium minus a transient part that is at most
	// exp(-1) of it, so at most a bit or two is lost to the subtraction.
	return eq - c*math.Exp(-p.Gamma*s.d0*t)*s.integrate(intWaitTail), nil
}

// RelaxationRate returns beta0 = gamma (1 - sqrt(rho))^2, the decay rate
// of the transient: p0(t) - (1-rho) and MeanWaitEquilibrium - MeanWait(t)
// vanish like exp(-beta0 t) (times a power of t).
func RelaxationRate(p Params) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	return p.Gamma * newSpectral(p, 0).d0, nil
}
