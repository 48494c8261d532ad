package estimate

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// A Job is what the paper's rule makes of the blocks of one or more jobs:
// it arrives when its last block does and needs the service of all of
// them. Jobs arriving together (within the window given to Estimate) are
// one Job whose Names lists them.
type Job struct {
	Names   []string
	Arrival float64
	Service float64
}

// Jobs applies the paper's rule to blocks: each job arrives at its last
// block's arrival and is served for the sum of its blocks' service times;
// jobs whose arrivals are within window seconds of the first of them count
// as one job, served for the sum of theirs. The result is in arrival order.
func Jobs(blocks []Block, window float64) []Job {
	byName := map[string]*Job{}
	var names []string
	for _, b := range blocks {
		j, ok := byName[b.Job]
		if !ok {
			j = &Job{Names: []string{b.Job}, Arrival: b.Arrival}
			byName[b.Job] = j
			names = append(names, b.Job)
		}
		j.Arrival = max(j.Arrival, b.Arrival)
		j.Service += b.Service
	}
	jobs := make([]Job, 0, len(names))
	for _, n := range names {
		jobs = append(jobs, *byName[n])
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Arrival, b.Arrival) })
	var merged []Job
	for _, j := range jobs {
		if k := len(merged) - 1; k >= 0 && j.Arrival-merged[k].Arrival <= window {
			merged[k].Names = append(merged[k].Names, j.Names...)
			merged[k].Service += j.Service
			continue
		}
		merged = append(merged, j)
	}
	return merged
}

// A Result is the estimate of lambda and gamma from a log.
type Result struct {
	Blocks   int     // blocks read
	Jobs     int     // distinct jobs among them
	Arrivals int     // jobs after merging simultaneous ones
	Window   float64 // seconds within which arrivals were merged
	Span     float64 // seconds from the first arrival to the last

	MeanInterarrival float64 // seconds
	MeanService      float64 // seconds
	Lambda, Gamma    float64 // 1/s
	Rho              float64 // Lambda/Gamma

	// 95% intervals of Lambda and Gamma, assuming exponential times (the
	// model's assumption): the mean of k exponential times is Gamma(k)
	// distributed, so 2k x mean x rate is chi-square with 2k degrees.
	LambdaLow, LambdaHigh float64
	GammaLow, GammaHigh   float64

	// Coefficients of variation (standard deviation / mean) of the
	// inter-arrival and service times: 1 for exponential times.
	CVInterarrival, CVService float64
}

// ErrTooFew is returned when a log has fewer than two distinct arrivals:
// no time between arrivals can be measured.
var ErrTooFew = errors.New("fewer than two distinct arrival times: no inter-arrival time to measure")

// CheckWindow checks the window Estimate takes (seconds within which
// arrivals count as one), so that a command can refuse a bad one before
// it reads any log.
func CheckWindow(window float64) error {
	if window < 0 || math.IsNaN(window) || math.IsInf(window, 0) {
		return fmt.Errorf("window %v: want a finite number of seconds >= 0", window)
	}
	return nil
}

// Estimate applies the paper's rule (see Jobs) to blocks and estimates
// lambda = 1 / mean inter-arrival time and gamma = 1 / mean service time.
func Estimate(blocks []Block, window float64) (Result, error) {
	if err := CheckWindow(window); err != nil {
		return Result{}, err
	}
	jobs := Jobs(blocks, window)
	r := Result{Blocks: len(blocks), Arrivals: len(jobs), Window: window}
	for _, j := range jobs {
		r.Jobs += len(j.Names)
	}
	if len(jobs) < 2 {
		return r, ErrTooFew
	}
	gaps := make([]float64, len(jobs)-1)
	services := make([]float64, len(jobs))
	for i, j := range jobs {
		services[i] = j.Service
		if i > 0 {
			gaps[i-1] = j.Arrival - jobs[i-1].Arrival
		}
	}
	r.Span = jobs[len(jobs)-1].Arrival - jobs[0].Arrival
	r.MeanInterarrival, r.CVInterarrival = meanCV(gaps)
	r.MeanService, r.CVService = meanCV(services)
	if r.MeanService <= 0 {
		return r, errors.New("every service time is 0: gamma cannot be estimated")
	}
	r.Lambda = 1 / r.MeanInterarrival
	r.Gamma = 1 / r.MeanService
	r.Rho = r.Lambda / r.Gamma
	r.LambdaLow, r.LambdaHigh = rateInterval(r.Lambda, len(gaps))
	r.GammaLow, r.GammaHigh = rateInterval(r.Gamma, len(services))
	return r, nil
}

func meanCV(xs []float64) (mean, cv float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 || mean == 0 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / mean
}

// rateInterval is the 95% interval of a rate estimated as 1/mean of k
// exponential times.
func rateInterval(rate float64, k int) (lo, hi float64) {
	c := distuv.ChiSquared{K: float64(2 * k)}
	return rate * c.Quantile(0.025) / float64(2*k), rate * c.Quantile(0.975) / float64(2*k)
}

// Warnings are what in r makes the estimate doubtful for the model.
func (r Result) Warnings() []string {
	var w []string
	if r.Rho >= 1 {
		w = append(w, fmt.Sprintf("rho = %.4g >= 1: jobs arrive faster than they are served; the model needs rho < 1 (is the log complete? are overlapping jobs' services summed?)", r.Rho))
	}
	if r.Arrivals < 30 {
		w = append(w, fmt.Sprintf("only %d arrivals: the estimates are rough (see the intervals)", r.Arrivals))
	}
	for _, c := range []struct {
		name string
		cv   float64
		n    int
	}{{"inter-arrival", r.CVInterarrival, r.Arrivals - 1}, {"service", r.CVService, r.Arrivals}} {
		if c.n >= 10 && (c.cv < 0.5 || c.cv > 2) {
			w = append(w, fmt.Sprintf("the %s times vary with a coefficient of variation of %.2f, not about 1: they are not exponential as the model assumes", c.name, c.cv))
		}
	}
	return w
}

// WriteText writes r as the report of pario tune estimate; source names
// the log(s).
func (r Result) WriteText(w io.Writer, source string, skipped []Skip) error {
	var err error
	p := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	p("estimate: %d blocks of %d jobs from %s", r.Blocks, r.Jobs, source)
	if len(skipped) > 0 {
		p(", %d line(s) skipped", len(skipped))
	}
	p("\n")
	for i, s := range skipped {
		if i == 5 {
			p("  ... and %d more\n", len(skipped)-5)
			break
		}
		p("  skipped line %d: %s\n", s.Line, s.Reason)
	}
	together := "at the same time"
	if r.Window > 0 {
		together = fmt.Sprintf("within %g s", r.Window)
	}
	p("arrivals: %d over %.3f s (a job arrives when its last block does; %d job(s) arriving %s as another counted with it)\n",
		r.Arrivals, r.Span, r.Jobs-r.Arrivals, together)
	p("mean inter-arrival time %.6g s (cv %.2f)  lambda = %.6g/s  (95%%: %.6g..%.6g, %d intervals)\n",
		r.MeanInterarrival, r.CVInterarrival, r.Lambda, r.LambdaLow, r.LambdaHigh, r.Arrivals-1)
	p("mean service time       %.6g s (cv %.2f)  gamma  = %.6g/s  (95%%: %.6g..%.6g, %d jobs)\n",
		r.MeanService, r.CVService, r.Gamma, r.GammaLow, r.GammaHigh, r.Arrivals)
	p("rho = lambda/gamma = %.4f\n", r.Rho)
	p("use: pario tune model --lambda %.6g --gamma %.6g ...\n", r.Lambda, r.Gamma)
	for _, s := range r.Warnings() {
		p("warning: %s\n", s)
	}
	return err
}
