package sim

import (
	"context"
	"math"
	"time"

	"github.com/pario/pario/tune/model"
)

// SweepResult holds the simulated E(T) of one file for every stripe count
// n = 1..Config.Stripes; slices are indexed by n-1.
type SweepResult struct {
	Mean, StdDev, CIHalfWidth99 []float64
	// Model is the exact closed form (model.SystemTime or MeanMaxWait) for
	// a Stationary start, nil otherwise.
	Model []float64
	// Best is the n with the smallest simulated mean.
	Best int
	// N is the number of experiments (each one covers every n), Pilot and
	// Required as in Result (for the n that minimised the pilot's mean).
	N, Pilot, Required int
	// Converged reports that the interval met RelHalfWidth at the n the
	// count was chosen for (the pilot's best n; with a fixed Experiments,
	// Best).
	Converged bool
	// Events counts the background arrivals at Stripes queues plus
	// Stripes block arrivals per experiment, pilot included.
	Events  int64
	Elapsed time.Duration
}

// Sweep estimates E(T) of one file (Groups <= 1) for every stripe count
// n = 1..cfg.Stripes in a single pass: experiment k simulates queues
// 1..Stripes once and the job striped over n uses the first n of them, so
// all n see the same background traffic (common random numbers). The mean
// for n is exactly what Run reports with Stripes = n and the same Seed and
// Experiments. The differences between n are therefore estimated far more
// precisely than independent runs would, which is what locating the
// optimum needs. With Experiments = 0 the count is chosen for the
// precision goal at the n with the smallest pilot mean.
func Sweep(ctx context.Context, cfg Config) (SweepResult, error) {
	start := time.Now()
	c, err := cfg.normalize()
	if err != nil {
		return SweepResult{}, err
	}
	if c.Groups > 1 {
		return SweepResult{}, bad("Groups", float64(c.Groups), "must be 0 or 1 for Sweep")
	}
	e := newEngine(c)
	width := c.Stripes
	all, pilot, focus, err := e.estimate(ctx, width, argminMean)
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{
		Mean:          make([]float64, width),
		StdDev:        make([]float64, width),
		CIHalfWidth99: make([]float64, width),
		N:             all[0].n,
		Events:        all[0].events,
		Best:          argminMean(all) + 1,
	}
	if pilot.n > 0 {
		res.Pilot = pilot.n
		res.Required = required(pilot, c.RelHalfWidth, c.MaxExperiments)
	}
	res.Converged = all[focus].precise(c.RelHalfWidth)
	for i := range all {
		res.Mean[i] = all[i].mean
		res.StdDev[i] = all[i].sd()
		res.CIHalfWidth99[i] = Z99 * res.StdDev[i] / math.Sqrt(float64(all[i].n))
	}
	if c.Init == Stationary {
		res.Model = make([]float64, width)
		p := c.params()
		for n := 1; n <= width; n++ {
			w, err := model.MeanMaxWait(p, n)
			if err != nil {
				return SweepResult{}, err
			}
			res.Model[n-1] = w + c.FileSize/(float64(n)*c.V)
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func argminMean(s []stats) int {
	best := 0
	for i := range s {
		if s[i].mean < s[best].mean {
			best = i
		}
	}
	return best
}
