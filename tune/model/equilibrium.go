package model

import "math"

// Equilibrium law of the waiting time at one target (rho < 1): an atom of
// mass p0 = 1-rho at 0 and, for w > 0, the density
//
//	f(w) = rho gamma (1-rho) exp(-gamma (1-rho) w),
//
// so F1(w) = 1 - rho exp(-gamma (1-rho) w) for w >= 0. The wait of a file
// striped over n independent targets is the largest of n such waits, with
// CDF F1(w)^n.

// IdleProb returns p0 = 1 - rho, the equilibrium probability that a target
// is idle (the atom of the waiting time at 0).
func IdleProb(p Params) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	return 1 - p.Lambda/p.Gamma, nil
}

// WaitCDF returns F1(w) = P(W <= w) in equilibrium: 0 for w < 0,
// 1 - rho exp(-gamma(1-rho) w) for w >= 0 (so F1(0) = 1-rho).
func WaitCDF(p Params, w float64) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	if math.IsNaN(w) {
		return 0, &ParamError{Name: "w", Value: w, Why: "is not a number", Kind: ErrInvalid}
	}
	if w < 0 {
		return 0, nil
	}
	rho := p.Lambda / p.Gamma
	return 1 - rho*math.Exp(-(p.Gamma-p.Lambda)*w), nil
}

// WaitDensity returns the density of the continuous part of the
// equilibrium waiting time, rho gamma (1-rho) exp(-gamma(1-rho) w) for
// w > 0, and 0 for w <= 0 (the atom at 0 is IdleProb).
func WaitDensity(p Params, w float64) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	if math.IsNaN(w) {
		return 0, &ParamError{Name: "w", Value: w, Why: "is not a number", Kind: ErrInvalid}
	}
	if w <= 0 {
		return 0, nil
	}
	rho := p.Lambda / p.Gamma
	a := p.Gamma - p.Lambda // gamma (1-rho)
	return rho * a * math.Exp(-a*w), nil
}

// MeanWaitEquilibrium returns rho / (gamma (1-rho)), the mean equilibrium
// waiting time at one target.
func MeanWaitEquilibrium(p Params) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	return p.Lambda / p.Gamma / (p.Gamma - p.Lambda), nil
}

// MaxWaitCDF returns F1(w)^n, the CDF of the largest of the equilibrium
// waits at n independent targets (eq. 4 of the paper).
func MaxWaitCDF(p Params, n int, w float64) (float64, error) {
	if err := atLeastOne("n", n); err != nil {
		return 0, err
	}
	f, err := WaitCDF(p, w)
	if err != nil {
		return 0, err
	}
	return math.Pow(f, float64(n)), nil
}

// MeanMaxWait returns E(max_{i<=n} W_i) for n independent equilibrium
// waits, the exact value of the paper's integral:
//
//	1/(gamma(1-rho)) * sum_{k=1}^{n} (1-(1-rho)^k)/k.
func MeanMaxWait(p Params, n int) (float64, error) {
	if err := p.ValidateQueue(); err != nil {
		return 0, err
	}
	if err := atLeastOne("n", n); err != nil {
		return 0, err
	}
	return maxWaitSum(p.Lambda/p.Gamma, n) / (p.Gamma - p.Lambda), nil
}

// maxWaitSum returns S_n = sum_{k=1}^{n} (1-q^k)/k with q = 1-rho, in O(1)
// when the tail of the logarithm series is negligible and in O(n) (but
// accurately) otherwise.
//
// Derivation: with x = rho exp(-gamma(1-rho) w),
//
//	E(max W) = integral_0^inf (1 - F1(w)^n) dw
//	         = 1/(gamma(1-rho)) integral_0^rho (1-(1-x)^n)/x dx
//	         = 1/(gamma(1-rho)) sum_{k=0}^{n-1} integral_0^rho (1-x)^k dx = S_n/(gamma(1-rho)).
func maxWaitSum(rho float64, n int) float64 {
	if n > smallN {
		// S_n = H_n - sum_{k<=n} q^k/k = H_n + ln(rho) + sum_{k>n} q^k/k, and
		// the last sum is below q^(n+1)/((n+1) rho).
		lq := math.Log1p(-rho)
		if tail := math.Exp(float64(n+1)*lq) / (float64(n+1) * rho); tail < 1e-18 {
			return harmonic(n) + math.Log(rho)
		}
	}
	// 1-q^k accumulated as c_k = c_{k-1} + q^(k-1) rho: only additions of
	// positive terms, accurate even when rho is tiny.
	q := 1 - rho
	var s, c float64
	qk := 1.0
	for k := 1; k <= n; k++ {
		c += qk * rho
		qk *= q
		s += c / float64(k)
	}
	return s
}

// smallN is the largest n for which harmonic numbers come from the table.
const smallN = 48

var harmonicTable [smallN + 1]float64

func init() {
	for k := 1; k <= smallN; k++ {
		harmonicTable[k] = harmonicTable[k-1] + 1/float64(k)
	}
}

// harmonic returns H_n = sum_{k=1}^{n} 1/k (H_0 = 0): exact table to 48,
// then the asymptotic series, whose error is below 1/(240 n^8) < 1e-15.
func harmonic(n int) float64 {
	if n <= smallN {
		return harmonicTable[n]
	}
	x := float64(n)
	x2 := 1 / (x * x)
	const eulerGamma = 0.57721566490153286060651209008240243
	return math.Log(x) + eulerGamma + 1/(2*x) - x2*(1.0/12-x2*(1.0/120-x2/252))
}
