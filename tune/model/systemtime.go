package model

import (
	"fmt"
	"math"
)

// Formula selects which closed form of E(T) is evaluated.
type Formula int

const (
	// Exact is the value of the paper's integral,
	//
	//	E(T) = 1/(gamma(1-rho)) sum_{k=1}^{n} (1-(1-rho)^k)/k + M/(nV).
	//
	// It agrees with numerical integration and with the simulator.
	Exact Formula = iota
	// Paper is the closed form printed in the paper (section II.B),
	//
	//	E(T) = (1-(1-rho)^n)/(gamma(1-rho)) sum_{i=1}^{n-1} 1/i + rho^n/(gamma(1-rho) n) + M/(nV),
	//
	// which reproduces the model columns of the paper's Table III. It equals
	// Exact for n = 1 and 2 and is larger for n >= 3 (see the package doc).
	Paper
)

func (f Formula) String() string {
	switch f {
	case Exact:
		return "exact"
	case Paper:
		return "paper"
	}
	return "Formula(?)"
}

func (f Formula) valid() error {
	if f != Exact && f != Paper {
		return &ParamError{Name: "formula", Value: float64(f), Why: "is not Exact or Paper", Kind: ErrInvalid}
	}
	return nil
}

func validateFile(p Params, M float64) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := positive("M", M); err != nil {
		return err
	}
	if math.IsInf(M/p.V, 0) {
		// Every E(T) would be +Inf: no n minimises it.
		return &ParamError{Name: "M", Value: M, Why: fmt.Sprintf("is too large: its write time M/V at V = %g GB/s overflows", p.V), Kind: ErrInvalid}
	}
	return nil
}

// MaxStripeCount is the largest maxN FindOptimum and TimeCurve accept:
// the paper's formula is scanned over all of 1..maxN and TimeCurve
// returns maxN values, so a larger maxN (9223372036854775807 from a flag)
// would run for hours or exhaust memory. It is far above any real
// system's number of targets.
const MaxStripeCount = 1 << 20

func checkMaxN(maxN int) error {
	if err := atLeastOne("maxN", maxN); err != nil {
		return err
	}
	if maxN > MaxStripeCount {
		return &ParamError{Name: "maxN", Value: float64(maxN), Why: fmt.Sprintf("is too large (at most %d)", MaxStripeCount), Kind: ErrInvalid}
	}
	return nil
}

// SystemTime returns the exact expected system time E(T) of a file of size
// M (GB) striped over n targets: the mean of the largest of n independent
// equilibrium waits plus the service time M/(nV). It is O(1) (O(n) only
// when rho is so small that the tail of the log series matters) and does
// not allocate.
func SystemTime(p Params, M float64, n int) (float64, error) {
	return Exact.SystemTime(p, M, n)
}

// PaperSystemTime returns E(T) by the paper's printed closed form (see
// Paper); PaperSystemTime and PaperOptimalN reproduce the paper's Table III.
func PaperSystemTime(p Params, M float64, n int) (float64, error) {
	return Paper.SystemTime(p, M, n)
}

// SystemTime evaluates E(T) for a file of size M on n targets by formula f.
func (f Formula) SystemTime(p Params, M float64, n int) (float64, error) {
	if err := f.valid(); err != nil {
		return 0, err
	}
	if err := validateFile(p, M); err != nil {
		return 0, err
	}
	if err := atLeastOne("n", n); err != nil {
		return 0, err
	}
	rho := p.Lambda / p.Gamma
	a := p.Gamma - p.Lambda // gamma (1-rho)
	nf := float64(n)
	service := M / (nf * p.V)
	if f == Exact {
		return maxWaitSum(rho, n)/a + service, nil
	}
	// 1-(1-rho)^n and rho^n without cancellation.
	oneMinusQn := -math.Expm1(nf * math.Log1p(-rho))
	rhoN := math.Exp(nf * math.Log(rho))
	return oneMinusQn/a*harmonic(n-1) + rhoN/(a*nf) + service, nil
}

// OptimalN returns the n in [1, maxN] that minimises the exact E(T) of a
// file of size M, and that E(T). Ties go to the smaller n.
func OptimalN(p Params, M float64, maxN int) (n int, T float64, err error) {
	return Exact.OptimalN(p, M, maxN)
}

// PaperOptimalN is OptimalN by the paper's closed form: it gives the N_m
// and T_m columns of the paper's Table III.
func PaperOptimalN(p Params, M float64, maxN int) (n int, T float64, err error) {
	return Paper.OptimalN(p, M, maxN)
}

// OptimalN returns the n in [1, maxN] minimising E(T) by formula f, and
// the minimum (as returned by f.SystemTime). Ties go to the smaller n.
//
// For Exact the search stops at the first increase, which is the global
// minimum: E(T)(n) - E(T)(n-1) = ((1-q^n)(n-1)/(gamma(1-rho)) - M/V) / (n(n-1))
// with q = 1-rho, and (1-q^n)(n-1) increases with n, so the differences
// change sign once. The cost is O(optimal n). For Paper, whose unimodality
// is not proven, all of [1, maxN] is scanned (O(maxN), a few ns per n).
// Neither allocates.
func (f Formula) OptimalN(p Params, M float64, maxN int) (n int, T float64, err error) {
	if err := f.valid(); err != nil {
		return 0, 0, err
	}
	if err := validateFile(p, M); err != nil {
		return 0, 0, err
	}
	if err := atLeastOne("maxN", maxN); err != nil {
		return 0, 0, err
	}
	rho := p.Lambda / p.Gamma
	q := 1 - rho
	a := p.Gamma - p.Lambda
	c := M / p.V
	best, bestT := 0, math.Inf(1)
	switch f {
	case Exact:
		// Same recurrences as maxWaitSum.
		var s, ck float64
		qk := 1.0
		prev := math.Inf(1)
		for k := 1; k <= maxN; k++ {
			ck += qk * rho
			qk *= q
			s += ck / float64(k)
			t := s/a + c/float64(k)
			if t < bestT {
				best, bestT = k, t
			}
			if t > prev {
				break
			}
			prev = t
		}
	case Paper:
		var h float64 // H_{k-1}
		qk, rk := 1.0, 1.0
		for k := 1; k <= maxN; k++ {
			qk *= q
			rk *= rho
			if k > 1 {
				h += 1 / float64(k-1)
			}
			kf := float64(k)
			t := (1-qk)/a*h + rk/(a*kf) + c/kf
			if t < bestT {
				best, bestT = k, t
			}
		}
	}
	T, err = f.SystemTime(p, M, best)
	return best, T, err
}

// TimeCurve returns E(T) by formula f for n = 1..maxN (element n-1): the
// curve of the paper's figure 3 (there M = 50 GB).
func TimeCurve(p Params, M float64, maxN int, f Formula) ([]float64, error) {
	if err := checkMaxN(maxN); err != nil {
		return nil, err
	}
	out := make([]float64, maxN)
	for n := 1; n <= maxN; n++ {
		t, err := f.SystemTime(p, M, n)
		if err != nil {
			return nil, err
		}
		out[n-1] = t
	}
	return out, nil
}

// OptimalNCurve returns, for each file size in sizes, the optimal n in
// [1, maxN] and the E(T) there by formula f: the curve of the paper's
// figure 4.
func OptimalNCurve(p Params, sizes []float64, maxN int, f Formula) (ns []int, ts []float64, err error) {
	ns = make([]int, len(sizes))
	ts = make([]float64, len(sizes))
	for i, m := range sizes {
		ns[i], ts[i], err = f.OptimalN(p, m, maxN)
		if err != nil {
			return nil, nil, err
		}
	}
	return ns, ts, nil
}
