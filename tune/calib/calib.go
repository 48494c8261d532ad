// Package calib calibrates the tuner's simulator against measurements, as
// the paper does in its section IV: write one file over a grid of strip
// size x transfer size (transfer <= strip) on one target (then several),
// fit the simulator's parameters, and compare the measured with the
// simulated bandwidths by the paper's two relative errors.
//
// # The model of one measured point
//
// A point is a file of M bytes written sequentially in transfers of t
// bytes onto n targets with strip size S (strips dealt round robin:
// strip k on target k mod n). Every transfer is cut at strip boundaries
// into requests; target j receives B_j bytes in R_j requests. Its
// service time is B_j/V + R_j*c (V its write speed, c a per-request
// overhead), the file's service part is s = max_j (B_j/V + R_j*c), and
// the predicted time is
//
//	T = E(max_{j<=n} W_j) + s
//
// with W_j the waiting time at target j, the tuner's M/M/1 queue with
// arrival rate lambda and service rate gamma (tune/model.MeanMaxWait).
//
// # The fit
//
//  1. Service: V (and c) minimise error2 between the measured bandwidth of
//     each point's fastest repetition (the one that waited least: in the
//     queue model a request finds the target idle with probability 1-rho)
//     and M/s. Nelder-Mead (gonum/optimize) over log V, log c. The
//     overhead c is kept only if the data demand it: if it lowers that
//     error2 by at least 10%; otherwise c = 0.
//  2. gamma: with the sizes known the service part is known; gamma is the
//     number of requests a target serves per second of service,
//     sum R_j / sum (B_j/V + R_j c) over every target of every point
//     (unless given).
//  3. lambda: the rest of every repetition's time, max(0, T - s), is its
//     waiting time; lambda is the arrival rate whose model mean waiting
//     time, E(max of n waits), matches the measured mean over all points
//     (bisection on rho = lambda/gamma in (0, 0.999)).
//  4. Refinement: from these estimates, Nelder-Mead over log V, log c and
//     logit rho (gamma following V and c as in step 2) minimises error2
//     between the measured mean bandwidths and the model's, M / E(T).
//     The staged estimates are kept in Fit.Staged.
//
// # The errors
//
// The paper compares the achieved bandwidths of its figures 7 and 8:
//
//	error1 = sum(test - sim) / sum(test)
//	error2 = sum((test - sim)^2) / sum(test^2)
//
// over the points, test being the measured bandwidth M / mean(T) in MiB/s
// and sim the simulator's (tune/sim, M / simulated mean time). The same
// errors on times are reported too.
package calib

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/optimize"

	"github.com/pario/pario/tune/model"
	"github.com/pario/pario/tune/sim"
	"github.com/pario/pario/units"
)

// MiB is 2^20 bytes.
const MiB = 1 << 20

// Point is one measured layout: Times are the write times (s) of its
// repetitions.
type Point struct {
	Strip    int64 // strip size S (bytes)
	Transfer int64 // transfer size t (bytes)
	Targets  int   // stripe count n
	Size     int64 // file size M (bytes)
	Times    []float64
	Source   string // where it came from (file name), for messages
	// Warmup are repetitions set aside by DropWarmup: measured, shown,
	// not fitted.
	Warmup []float64
}

// Validate checks the point's fields.
func (p Point) Validate() error {
	switch {
	case p.Strip <= 0:
		return fmt.Errorf("strip size %d is not positive", p.Strip)
	case p.Transfer <= 0:
		return fmt.Errorf("transfer size %d is not positive", p.Transfer)
	case p.Targets < 1:
		return fmt.Errorf("target count %d is not positive", p.Targets)
	case p.Size <= 0:
		return fmt.Errorf("file size %d is not positive", p.Size)
	case len(p.Times) == 0:
		return errors.New("no write time")
	}
	for _, t := range p.Times {
		if !(t > 0) || math.IsInf(t, 0) {
			return fmt.Errorf("write time %v is not a positive number", t)
		}
	}
	return nil
}

// MeanTime is the mean of Times.
func (p Point) MeanTime() float64 {
	s := 0.0
	for _, t := range p.Times {
		s += t
	}
	return s / float64(len(p.Times))
}

// MinTime is the fastest repetition's time.
func (p Point) MinTime() float64 {
	m := math.Inf(1)
	for _, t := range p.Times {
		m = math.Min(m, t)
	}
	return m
}

// Bandwidth is M / MeanTime in MiB/s.
func (p Point) Bandwidth() float64 { return float64(p.Size) / MiB / p.MeanTime() }

// Load is what one target of a point receives.
type Load struct {
	Bytes    int64
	Requests int64
}

// Loads deals the point's requests to its targets: the file written from
// offset 0 in transfers of Transfer bytes (the last one short), each cut
// at strip boundaries, strip k on target k mod Targets.
func Loads(p Point) []Load {
	n := max(p.Targets, 1)
	loads := make([]Load, n)
	for off := int64(0); off < p.Size; {
		end := min(off+p.Transfer, p.Size)
		for o := off; o < end; {
			k := o / p.Strip
			e := min(end, (k+1)*p.Strip)
			l := &loads[k%int64(n)]
			l.Bytes += e - o
			l.Requests++
			o = e
		}
		off = end
	}
	return loads
}

// Params are the fitted parameters.
type Params struct {
	V        float64 // write speed of one target, bytes/s
	Overhead float64 // per-request overhead c, s
	Lambda   float64 // background arrival rate, 1/s
	Gamma    float64 // service rate, 1/s
}

// Rho is Lambda/Gamma.
func (p Params) Rho() float64 { return p.Lambda / p.Gamma }

// ModelParams converts to the tuner's units (V in GB/s).
func (p Params) ModelParams() model.Params {
	return model.Params{Lambda: p.Lambda, Gamma: p.Gamma, V: p.V / 1e9}
}

// Service is the point's service part s = max_j (B_j/V + R_j c).
func Service(pt Point, v, c float64) float64 {
	return service(Loads(pt), v, c)
}

func service(loads []Load, v, c float64) float64 {
	s := 0.0
	for _, l := range loads {
		s = math.Max(s, float64(l.Bytes)/v+float64(l.Requests)*c)
	}
	return s
}

// Predict is the model's mean time of a point: E(max of n waits) + s.
func Predict(pt Point, p Params) (float64, error) {
	w, err := model.MeanMaxWait(p.ModelParams(), pt.Targets)
	if err != nil {
		return 0, err
	}
	return w + Service(pt, p.V, p.Overhead), nil
}

// Errors are the paper's relative errors.
type Errors struct {
	Error1, Error2 float64
}

// RelErrors computes error1 = sum(test-sim)/sum(test) and
// error2 = sum((test-sim)^2)/sum(test^2).
func RelErrors(test, sim []float64) Errors {
	var d, d2, s, s2 float64
	for i := range test {
		d += test[i] - sim[i]
		d2 += (test[i] - sim[i]) * (test[i] - sim[i])
		s += test[i]
		s2 += test[i] * test[i]
	}
	return Errors{Error1: d / s, Error2: d2 / s2}
}

// Options steer Fit. The zero value fits everything.
type Options struct {
	// Gamma, if > 0, fixes gamma instead of deriving it from the service part.
	Gamma float64
	// Overhead: "auto" (or ""), "on" (always fit c) or "off" (c = 0).
	Overhead string
	// NoRefine stops after the staged estimates (steps 1-3).
	NoRefine bool
}

// Fit is the outcome of Fit.
type Fit struct {
	Params Params
	// Staged are the estimates of steps 1-3, before the refinement.
	Staged Params
	// OverheadUsed reports whether c was kept; ServiceError2 is the error2
	// of the service fit with and without it.
	OverheadUsed                  bool
	ServiceError2, NoOverheadErr2 float64
	// MeanWait is the measured mean waiting time (s) the lambda matches.
	MeanWait float64
	// Points are the fitted points, Service their service parts.
	Points  []Point
	Service []float64
	// Options are the options of the fit (Bootstrap refits with them).
	Options Options
	// VByTargets is V fitted to the points of each target count alone
	// (service part, c as fitted), when there are several counts: the
	// model assumes a target's speed does not depend on how many there
	// are.
	VByTargets map[int]float64
}

// FitParams fits V, c, gamma and lambda to the points (see the package doc).
func FitParams(points []Point, o Options) (Fit, error) {
	if len(points) == 0 {
		return Fit{}, errors.New("calib: no measured point")
	}
	for _, p := range points {
		if err := p.Validate(); err != nil {
			return Fit{}, fmt.Errorf("calib: point %s: %w", p.Label(), err)
		}
	}
	switch o.Overhead {
	case "", "auto", "on", "off":
	default:
		return Fit{}, fmt.Errorf("calib: overhead %q: want auto, on or off", o.Overhead)
	}
	test := make([]float64, len(points))
	loads := make([][]Load, len(points))
	v0 := 0.0
	for i, p := range points {
		test[i] = float64(p.Size) / MiB / p.MinTime()
		loads[i] = Loads(p)
		for _, l := range loads[i] {
			v0 = math.Max(v0, float64(l.Bytes)/p.MinTime())
		}
	}
	objective := func(v, c float64) float64 {
		sim := make([]float64, len(points))
		for i, p := range points {
			sim[i] = float64(p.Size) / MiB / service(loads[i], v, c)
		}
		return RelErrors(test, sim).Error2
	}
	// Without overhead: one parameter.
	vOnly, e2Only, err := minimize([]float64{math.Log(v0)}, func(x []float64) float64 { return objective(math.Exp(x[0]), 0) })
	if err != nil {
		return Fit{}, err
	}
	f := Fit{Points: points, NoOverheadErr2: e2Only, ServiceError2: e2Only, Options: o}
	f.Params.V = math.Exp(vOnly[0])
	if o.Overhead != "off" {
		// Start c at a tenth of the smallest request's share of a point.
		c0 := math.Inf(1)
		for i, p := range points {
			r := int64(0)
			for _, l := range loads[i] {
				r += l.Requests
			}
			c0 = math.Min(c0, p.MinTime()/float64(r)/10)
		}
		xc, e2c, err := minimize([]float64{vOnly[0], math.Log(c0)}, func(x []float64) float64 {
			return objective(math.Exp(x[0]), math.Exp(x[1]))
		})
		if err != nil {
			return Fit{}, err
		}
		if o.Overhead == "on" || e2c <= 0.9*e2Only {
			f.Params.V, f.Params.Overhead = math.Exp(xc[0]), math.Exp(xc[1])
			f.OverheadUsed, f.ServiceError2 = true, e2c
		}
	}
	if f.VByTargets, err = vByTargets(points, loads, test, f.Params.Overhead); err != nil {
		return Fit{}, err
	}
	// gamma from the service part.
	var reqs, svc float64
	f.Service = make([]float64, len(points))
	for i := range points {
		f.Service[i] = service(loads[i], f.Params.V, f.Params.Overhead)
		for _, l := range loads[i] {
			svc += float64(l.Bytes)/f.Params.V + float64(l.Requests)*f.Params.Overhead
			reqs += float64(l.Requests)
		}
	}
	f.Params.Gamma = o.Gamma
	if f.Params.Gamma <= 0 {
		f.Params.Gamma = reqs / svc
	}
	// lambda from the waiting times.
	var wsum float64
	var cnt int
	for i, p := range points {
		for _, t := range p.Times {
			wsum += math.Max(0, t-f.Service[i])
			cnt++
		}
	}
	f.MeanWait = wsum / float64(cnt)
	f.Params.Lambda = fitLambda(points, f.Params.Gamma, f.MeanWait)
	f.Staged = f.Params
	if o.NoRefine {
		return f, nil
	}
	// 4. Refine V, c and rho together on the measured mean bandwidths.
	meas := make([]float64, len(points))
	for i, p := range points {
		meas[i] = p.Bandwidth()
	}
	gammaOf := func(v, c float64) float64 {
		if o.Gamma > 0 {
			return o.Gamma
		}
		var r, t float64
		for i := range points {
			for _, l := range loads[i] {
				t += float64(l.Bytes)/v + float64(l.Requests)*c
				r += float64(l.Requests)
			}
		}
		return r / t
	}
	unpack := func(x []float64) Params {
		q := Params{V: math.Exp(x[0])}
		rho := 1 / (1 + math.Exp(-x[1]))
		if f.OverheadUsed {
			q.Overhead = math.Exp(x[2])
		}
		q.Gamma = gammaOf(q.V, q.Overhead)
		q.Lambda = math.Min(rho, 0.999) * q.Gamma
		return q
	}
	rho0 := math.Max(f.Params.Rho(), 1e-6)
	x0 := []float64{math.Log(f.Params.V), math.Log(rho0 / (1 - rho0))}
	if f.OverheadUsed {
		x0 = append(x0, math.Log(f.Params.Overhead))
	}
	modelErr := func(q Params) float64 {
		sim := make([]float64, len(points))
		w := make(map[int]float64)
		for i, p := range points {
			mw, ok := w[p.Targets]
			if !ok {
				var err error
				if mw, err = model.MeanMaxWait(q.ModelParams(), p.Targets); err != nil {
					return math.Inf(1)
				}
				w[p.Targets] = mw
			}
			sim[i] = float64(p.Size) / MiB / (mw + service(loads[i], q.V, q.Overhead))
		}
		return RelErrors(meas, sim).Error2
	}
	before := modelErr(f.Params)
	x, e2, err := minimize(x0, func(x []float64) float64 { return modelErr(unpack(x)) })
	if err != nil {
		return Fit{}, err
	}
	if e2 < before {
		f.Params = unpack(x)
		for i := range points {
			f.Service[i] = service(loads[i], f.Params.V, f.Params.Overhead)
		}
	}
	return f, nil
}

// fitLambda finds lambda = rho*gamma whose mean E(max of n_i waits), over
// the points (one term per repetition), equals meanWait.
func fitLambda(points []Point, gamma, meanWait float64) float64 {
	const rhoMin, rhoMax = 1e-6, 0.999
	mean := func(rho float64) float64 {
		p := model.Params{Lambda: rho * gamma, Gamma: gamma}
		var s float64
		var cnt int
		for _, pt := range points {
			w, _ := model.MeanMaxWait(p, pt.Targets)
			s += w * float64(len(pt.Times))
			cnt += len(pt.Times)
		}
		return s / float64(cnt)
	}
	lo, hi := rhoMin, rhoMax
	if mean(lo) >= meanWait {
		return lo * gamma
	}
	if mean(hi) <= meanWait {
		return hi * gamma
	}
	for range 100 {
		mid := (lo + hi) / 2
		if mean(mid) < meanWait {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2 * gamma
}

// minimize runs Nelder-Mead from x0 and returns the best point and value.
func minimize(x0 []float64, f func([]float64) float64) ([]float64, float64, error) {
	prob := optimize.Problem{Func: func(x []float64) float64 {
		v := f(x)
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		return v
	}}
	res, err := optimize.Minimize(prob, x0, &optimize.Settings{MajorIterations: 2000, Converger: &optimize.FunctionConverge{Absolute: 1e-14, Relative: 1e-12, Iterations: 200}}, &optimize.NelderMead{})
	if res == nil {
		return nil, 0, fmt.Errorf("calib: Nelder-Mead: %w", err)
	}
	// Hitting the iteration limit still leaves a usable best point.
	return res.X, res.F, nil
}

// Compared is one point measured and simulated.
type Compared struct {
	Point
	Service           float64 // fitted service part (s)
	Model             float64 // model mean time (s)
	Sim, SimHalfWidth float64 // simulated mean time and its 99% half-width (s)
	MeasuredMiB       float64 // M / mean measured time
	SimMiB            float64 // M / simulated mean time
	// ModelMiB is M / Model; Residual is (ModelMiB - MeasuredMiB) /
	// MeasuredMiB, the fit's error at this point, and Z the same in time
	// as a multiple of the standard error of the measured mean (NaN with
	// one repetition).
	ModelMiB, Residual, Z float64
}

// Report is a fit with its comparison.
type Report struct {
	Fit
	Points       []Compared
	Bandwidth    Errors // the paper's errors on bandwidths (MiB/s)
	Time         Errors // and on times
	Experiments  int
	Seed         uint64
	ModelVsMeasE Errors // model (no simulation) against measurement, bandwidths
	// R2 is the share of the variance of the measured mean bandwidths
	// between points that the model explains (NaN if they do not vary).
	R2 float64
	// WaitCorr is the correlation between the points' service parts and
	// their measured waits (see waitCorr; NaN when it cannot tell).
	WaitCorr float64
	// Confidence, when not nil, holds the parameters' intervals (Bootstrap).
	Confidence *Confidence
}

// Compare simulates every point with the fitted parameters (tune/sim,
// experiments per point, seeded) and computes the errors. The simulator's
// file is sized so that its service part, FileSize/(nV), is the point's s.
func Compare(ctx context.Context, f Fit, experiments int, seed uint64) (Report, error) {
	if experiments <= 0 {
		experiments = 20000
	}
	r := Report{Fit: f, Experiments: experiments, Seed: seed}
	mp := f.Params.ModelParams()
	var tb, sb, tt, st, mb []float64
	for i, p := range f.Points {
		s := f.Service[i]
		res, err := sim.Run(ctx, sim.Config{
			Lambda: mp.Lambda, Gamma: mp.Gamma, V: mp.V,
			FileSize: s * float64(p.Targets) * mp.V, Stripes: p.Targets,
			Time: 1e-9, Experiments: experiments, Seed: seed + uint64(i), Workers: 1,
		})
		if err != nil {
			return Report{}, fmt.Errorf("calib: simulate %s: %w", p.Label(), err)
		}
		pred, err := Predict(p, f.Params)
		if err != nil {
			return Report{}, err
		}
		c := Compared{Point: p, Service: s, Model: pred, Sim: res.Mean, SimHalfWidth: res.CIHalfWidth99,
			MeasuredMiB: p.Bandwidth(), SimMiB: float64(p.Size) / MiB / res.Mean}
		r.Points = append(r.Points, c)
		tb = append(tb, c.MeasuredMiB)
		sb = append(sb, c.SimMiB)
		tt = append(tt, p.MeanTime())
		st = append(st, c.Sim)
		mb = append(mb, float64(p.Size)/MiB/pred)
	}
	r.Bandwidth = RelErrors(tb, sb)
	r.Time = RelErrors(tt, st)
	r.ModelVsMeasE = RelErrors(tb, mb)
	r.residuals()
	return r, nil
}

// Label names a point: "S=1m t=256k n=1 M=64m".
func (p Point) Label() string {
	return fmt.Sprintf("S=%s t=%s n=%d M=%s", units.FormatSize(p.Strip), units.FormatSize(p.Transfer), p.Targets, units.FormatSize(p.Size))
}

// Merge joins points with the same layout (strip, transfer, targets, size),
// pooling their repetitions, and sorts them by targets, strip, transfer.
func Merge(points []Point) []Point {
	type key struct {
		s, t, m int64
		n       int
	}
	idx := map[key]int{}
	var out []Point
	for _, p := range points {
		k := key{p.Strip, p.Transfer, p.Size, p.Targets}
		if i, ok := idx[k]; ok {
			out[i].Times = append(out[i].Times, p.Times...)
			out[i].Warmup = append(out[i].Warmup, p.Warmup...)
			continue
		}
		idx[k] = len(out)
		p.Times = append([]float64(nil), p.Times...)
		p.Warmup = append([]float64(nil), p.Warmup...)
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Targets != b.Targets {
			return a.Targets < b.Targets
		}
		if a.Size != b.Size {
			return a.Size < b.Size
		}
		if a.Strip != b.Strip {
			return a.Strip < b.Strip
		}
		return a.Transfer < b.Transfer
	})
	return out
}
