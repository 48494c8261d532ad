package calib

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// How far a fit can be trusted. A fit always finds parameters; these say
// whether they explain the data: the warm-up set aside, each point's
// residual, a confidence interval for every parameter, and warnings.

// DropWarmup sets aside the first repetition of every point of every
// source (results file or run) as warm-up, when the point has another to
// fit: Times loses it and Warmup keeps it, for the report. Points are
// grouped by source and layout (a CSV file has one line per repetition),
// in their order; call it before Merge, which pools across sources.
//
// Why the first repetition and not outliers: every `pario bench` run
// starts its own cluster, creates its file and opens its connections in
// the first repetition, and IOR's first repetition meets a cold cache; it
// is slow for a reason that is not the queueing the model describes, and
// the review of issue 16 saw 301 against 1499 MiB/s. An outlier rule would
// instead remove the long waits of the other repetitions, which are what
// lambda is fitted from (the model's waits are exponential, so long ones
// are expected), and would bias rho low; with the 3 repetitions of a
// default run it could not tell an outlier from the spread anyway.
func DropWarmup(points []Point) []Point {
	type key struct {
		src     string
		s, t, m int64
		n       int
	}
	idx := map[key]int{}
	var out []Point
	for _, p := range points {
		k := key{p.Source, p.Strip, p.Transfer, p.Size, p.Targets}
		if i, ok := idx[k]; ok {
			out[i].Times = append(out[i].Times, p.Times...)
			out[i].Warmup = append(out[i].Warmup, p.Warmup...)
			continue
		}
		idx[k] = len(out)
		p.Times = slices.Clone(p.Times)
		p.Warmup = slices.Clone(p.Warmup)
		out = append(out, p)
	}
	for i := range out {
		if len(out[i].Times) >= 2 {
			out[i].Warmup = append(out[i].Warmup, out[i].Times[0])
			out[i].Times = out[i].Times[1:]
		}
	}
	return out
}

// vByTargets fits V (c fixed) to the fastest repetitions of each target
// count alone, when there are several counts.
func vByTargets(points []Point, loads [][]Load, test []float64, c float64) (map[int]float64, error) {
	byN := map[int][]int{}
	for i, p := range points {
		byN[p.Targets] = append(byN[p.Targets], i)
	}
	if len(byN) < 2 {
		return nil, nil
	}
	out := map[int]float64{}
	for n, idx := range byN {
		v0 := 0.0
		for _, i := range idx {
			for _, l := range loads[i] {
				v0 = math.Max(v0, float64(l.Bytes)/points[i].MinTime())
			}
		}
		x, _, err := minimize([]float64{math.Log(v0)}, func(x []float64) float64 {
			var t, s []float64
			for _, i := range idx {
				t = append(t, test[i])
				s = append(s, float64(points[i].Size)/MiB/service(loads[i], math.Exp(x[0]), c))
			}
			return RelErrors(t, s).Error2
		})
		if err != nil {
			return nil, err
		}
		out[n] = math.Exp(x[0])
	}
	return out, nil
}

// Interval is a 95% confidence interval.
type Interval struct{ Lo, Hi float64 }

// Confidence holds the 95% intervals of the fitted parameters.
//
// They come from a bootstrap over repetitions: every round draws each
// point's repetitions again with replacement and refits everything
// (FitParams with the same options), and an interval is the 2.5% and
// 97.5% percentiles of a parameter over the rounds. Not from the
// Jacobian: the fit is not one smooth least-squares problem (V comes from
// the fastest repetitions, c is kept or dropped by a threshold, rho is
// bounded below 0.999 and gamma follows V and c), so a linearised
// covariance would describe a problem the fit does not solve. The
// bootstrap sees only the spread between repetitions: a point with one
// repetition adds none (SingleRep counts them), and a model that is wrong
// the same way in every repetition gives narrow intervals around wrong
// values, which the residuals show instead.
type Confidence struct {
	Rounds                          int
	Seed                            uint64
	V, Overhead, Gamma, Lambda, Rho Interval
	// OverheadKept is in how many rounds the fit kept c.
	OverheadKept int
	// SingleRep is how many points have one repetition.
	SingleRep int
}

// Bootstrap computes the confidence intervals of f's parameters with the
// given number of rounds (seeded).
func Bootstrap(ctx context.Context, f Fit, rounds int, seed uint64) (*Confidence, error) {
	if rounds < 2 {
		return nil, fmt.Errorf("calib: bootstrap: %d rounds, want at least 2", rounds)
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	c := &Confidence{Rounds: rounds, Seed: seed}
	for _, p := range f.Points {
		if len(p.Times) < 2 {
			c.SingleRep++
		}
	}
	var vs, cs, gs, ls, rs []float64
	for range rounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pts := make([]Point, len(f.Points))
		for i, p := range f.Points {
			p.Times = make([]float64, len(f.Points[i].Times))
			for j := range p.Times {
				p.Times[j] = f.Points[i].Times[r.IntN(len(p.Times))]
			}
			pts[i] = p
		}
		g, err := FitParams(pts, f.Options)
		if err != nil {
			return nil, fmt.Errorf("calib: bootstrap: %w", err)
		}
		q := g.Params
		vs, cs, gs, ls, rs = append(vs, q.V), append(cs, q.Overhead), append(gs, q.Gamma), append(ls, q.Lambda), append(rs, q.Rho())
		if g.OverheadUsed {
			c.OverheadKept++
		}
	}
	c.V, c.Overhead, c.Gamma, c.Lambda, c.Rho = interval(vs), interval(cs), interval(gs), interval(ls), interval(rs)
	return c, nil
}

// interval is the 2.5% and 97.5% percentiles of xs (sorted in place),
// interpolating between order statistics.
func interval(xs []float64) Interval {
	sort.Float64s(xs)
	q := func(p float64) float64 {
		h := p * float64(len(xs)-1)
		i := int(h)
		if i+1 >= len(xs) {
			return xs[len(xs)-1]
		}
		return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
	}
	return Interval{q(0.025), q(0.975)}
}

// residuals fills each point's residual and the report's R^2 (the
// closed-form model against the measured mean bandwidths, which is what
// the fit minimised).
func (r *Report) residuals() {
	var mean float64
	for _, c := range r.Points {
		mean += c.MeasuredMiB
	}
	mean /= float64(len(r.Points))
	var ssRes, ssTot float64
	for i := range r.Points {
		c := &r.Points[i]
		c.ModelMiB = float64(c.Size) / MiB / c.Model
		c.Residual = (c.ModelMiB - c.MeasuredMiB) / c.MeasuredMiB
		c.Z = math.NaN()
		if k := len(c.Times); k >= 2 {
			var ss float64
			m := c.MeanTime()
			for _, t := range c.Times {
				ss += (t - m) * (t - m)
			}
			if se := math.Sqrt(ss/float64(k-1)) / math.Sqrt(float64(k)); se > 0 {
				c.Z = (c.Model - m) / se
			}
		}
		ssRes += (c.ModelMiB - c.MeasuredMiB) * (c.ModelMiB - c.MeasuredMiB)
		ssTot += (c.MeasuredMiB - mean) * (c.MeasuredMiB - mean)
	}
	r.R2 = math.NaN()
	if ssTot > 0 {
		r.R2 = 1 - ssRes/ssTot
	}
	r.WaitCorr = waitCorr(r.Points)
}

// waitCorr is the correlation, over the points, between the service part
// and the mean measured waiting time (the time beyond it), or NaN when
// fewer than 4 points or service parts within a factor of 1.25 cannot
// tell. The model's waits do not depend on the service part; waits that
// grow with it are relative jitter of the measurement, which the fit can
// only read as a queue.
func waitCorr(pts []Compared) float64 {
	if len(pts) < 4 {
		return math.NaN()
	}
	lo, hi := math.Inf(1), 0.0
	var xs, ys []float64
	for _, c := range pts {
		w := 0.0
		for _, t := range c.Times {
			w += math.Max(0, t-c.Service)
		}
		xs, ys = append(xs, c.Service), append(ys, w/float64(len(c.Times)))
		lo, hi = math.Min(lo, c.Service), math.Max(hi, c.Service)
	}
	if hi < 1.25*lo {
		return math.NaN()
	}
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i] / n
		my += ys[i] / n
	}
	var sxy, sxx, syy float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
		syy += (ys[i] - my) * (ys[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// Thresholds of the warnings.
const (
	// MaxResidual is the largest relative residual of a point the fit is
	// trusted with.
	MaxResidual = 0.2
	// MinR2 is the smallest R^2 trusted when the bandwidths vary by more
	// than 10% between points (when they hardly vary, R^2 means little).
	MinR2 = 0.5
	// MaxRho: a rho this close to 1 means the fit explained the spread of
	// the repetitions as a queue on the edge of instability.
	MaxRho = 0.98
	// MaxVSpread is the largest ratio between the V of two target counts.
	MaxVSpread = 1.25
	// MaxSpan is the largest ratio Hi/Lo of a parameter's 95% interval.
	MaxSpan = 2.0
	// MaxWaitCorr is the largest correlation between the service parts
	// and the waits taken for queueing rather than jitter.
	MaxWaitCorr = 0.8
)

// Warnings says where the fit does not explain the data; none means
// nothing was found. They are part of the report (WriteText).
func (r Report) Warnings() []string {
	var w []string
	var bad []string
	worst := -1
	lo, hi := math.Inf(1), 0.0
	for i, c := range r.Points {
		lo, hi = math.Min(lo, c.MeasuredMiB), math.Max(hi, c.MeasuredMiB)
		if math.Abs(c.Residual) > MaxResidual {
			bad = append(bad, c.Label())
			if worst < 0 || math.Abs(c.Residual) > math.Abs(r.Points[worst].Residual) {
				worst = i
			}
		}
	}
	if len(bad) > 0 {
		c := r.Points[worst]
		w = append(w, fmt.Sprintf("the model is off by more than %.0f%% at %d of %d points (worst %s: %+.0f%%): it does not explain these data",
			100*MaxResidual, len(bad), len(r.Points), c.Label(), 100*c.Residual))
	}
	if hi > 1.1*lo && r.R2 < MinR2 {
		w = append(w, fmt.Sprintf("R^2 = %.2f: the model explains little of how the bandwidth varies between points", r.R2))
	}
	if rho := r.Params.Rho(); rho > MaxRho {
		w = append(w, fmt.Sprintf("rho = %.3f is at the edge of stability: the spread of the repetitions was fitted as queueing (slow or noisy repetitions? see the warm-up and the residuals)", rho))
	}
	if r.WaitCorr > MaxWaitCorr && r.Params.Rho() > 0.01 {
		w = append(w, fmt.Sprintf("the waits grow with the service time (correlation %.2f): they look like relative jitter of the measurements, not a queue; lambda and rho describe that jitter", r.WaitCorr))
	}
	if len(r.VByTargets) > 1 {
		var ns []int
		vlo, vhi := math.Inf(1), 0.0
		for n, v := range r.VByTargets {
			ns = append(ns, n)
			vlo, vhi = math.Min(vlo, v), math.Max(vhi, v)
		}
		if vhi > MaxVSpread*vlo {
			sort.Ints(ns)
			var parts []string
			for _, n := range ns {
				parts = append(parts, fmt.Sprintf("%d: %.0f", n, r.VByTargets[n]/MiB))
			}
			w = append(w, fmt.Sprintf("V per target depends on the target count (%s MiB/s): the targets do not scale as the model assumes (a client, network or loopback limit?); calibrate one count at a time",
				strings.Join(parts, ", ")))
		}
	}
	if c := r.Confidence; c != nil {
		for _, p := range []struct {
			name string
			iv   Interval
		}{{"V", c.V}, {"gamma", c.Gamma}, {"lambda", c.Lambda}} {
			if p.iv.Lo <= 0 || p.iv.Hi > MaxSpan*p.iv.Lo {
				w = append(w, fmt.Sprintf("%s is poorly determined: its 95%% interval [%.4g, %.4g] spans more than a factor of %g", p.name, p.iv.Lo, p.iv.Hi, MaxSpan))
			}
		}
		if c.OverheadKept > 0 && c.OverheadKept < c.Rounds {
			w = append(w, fmt.Sprintf("the overhead c was kept in %d of %d bootstrap rounds: the data barely decide whether there is one", c.OverheadKept, c.Rounds))
		}
	}
	return w
}

// describe writes the confidence intervals for the report.
func (c *Confidence) describe(b *strings.Builder, overhead bool) {
	fmt.Fprintf(b, "95%% intervals (bootstrap over repetitions, %d rounds, seed %d): V %.1f..%.1f MiB/s", c.Rounds, c.Seed, c.V.Lo/MiB, c.V.Hi/MiB)
	if overhead {
		fmt.Fprintf(b, ", c %.1f..%.1f us", c.Overhead.Lo*1e6, c.Overhead.Hi*1e6)
	}
	fmt.Fprintf(b, ", gamma %.6g..%.6g/s, lambda %.6g..%.6g/s, rho %.4g..%.4g\n", c.Gamma.Lo, c.Gamma.Hi, c.Lambda.Lo, c.Lambda.Hi, c.Rho.Lo, c.Rho.Hi)
	if c.SingleRep > 0 {
		fmt.Fprintf(b, "  (%d point(s) with one repetition add no spread: the intervals understate)\n", c.SingleRep)
	}
}

// describeWarmup writes what DropWarmup set aside.
func describeWarmup(b *strings.Builder, pts []Compared) {
	var warm, rest []float64
	for _, c := range pts {
		for _, t := range c.Warmup {
			warm = append(warm, float64(c.Size)/MiB/t)
		}
		for _, t := range c.Times {
			rest = append(rest, float64(c.Size)/MiB/t)
		}
	}
	if len(warm) == 0 {
		return
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	fmt.Fprintf(b, "warm-up: the first repetition of each run set aside (%d, mean %.1f MiB/s against %.1f MiB/s for the %d fitted)\n",
		len(warm), mean(warm), mean(rest), len(rest))
}

// formatZ formats a residual in standard errors ("-" when unknown).
func formatZ(z float64) string {
	if math.IsNaN(z) {
		return "-"
	}
	return fmt.Sprintf("%+.1f", z)
}

// describeVByTargets writes V per target count, for the report.
func describeVByTargets(b *strings.Builder, v map[int]float64) {
	if len(v) < 2 {
		return
	}
	var ns []int
	for n := range v {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	var parts []string
	for _, n := range ns {
		parts = append(parts, fmt.Sprintf("%d target(s) %.1f MiB/s", n, v[n]/MiB))
	}
	fmt.Fprintf(b, "V fitted per target count: %s\n", strings.Join(parts, ", "))
}
