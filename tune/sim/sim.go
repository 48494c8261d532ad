package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Result is the outcome of Run.
type Result struct {
	// Mean is the sample mean of the system time T over N experiments,
	// StdDev their sample standard deviation and CIHalfWidth99 the
	// half-width of the 99% confidence interval of the mean,
	// Z99 * StdDev / sqrt(N).
	Mean, StdDev, CIHalfWidth99 float64
	// N is the number of experiments behind Mean (the pilot excluded).
	N int
	// Pilot is the number of pilot experiments (0 if Config.Experiments
	// was set), and Required the count the pilot asked for,
	// ceil((Z99 s / (RelHalfWidth mean))^2).
	Pilot, Required int
	// Converged reports that the precision goal was met:
	// CIHalfWidth99 <= RelHalfWidth * Mean (also computed when
	// Config.Experiments fixed the count).
	Converged bool
	// Events is the number of events simulated, pilot included (see the
	// package doc for what one event is).
	Events int64
	// Model is the closed-form mean of T where one exists (HasModel), and
	// RelErr = (Mean - Model) / Model; both are NaN otherwise.
	Model    float64
	HasModel bool
	RelErr   float64
	// BiasBound bounds how far below the equilibrium mean an Empty start
	// can leave Mean (0 for a Stationary start).
	BiasBound float64
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// CI returns the 99% confidence interval of the mean.
func (r Result) CI() (lo, hi float64) {
	return r.Mean - r.CIHalfWidth99, r.Mean + r.CIHalfWidth99
}

// Contains reports whether x lies in the 99% confidence interval.
func (r Result) Contains(x float64) bool {
	lo, hi := r.CI()
	return lo <= x && x <= hi
}

// Run simulates the job described by cfg (one file, or m groups when
// cfg.Groups > 1) and estimates the mean of its system time. It returns
// ctx.Err() if ctx is cancelled.
func Run(ctx context.Context, cfg Config) (Result, error) {
	start := time.Now()
	c, err := cfg.normalize()
	if err != nil {
		return Result{}, err
	}
	res := Result{Model: math.NaN(), RelErr: math.NaN(), BiasBound: c.biasBound()}
	if m, ok := c.prediction(); ok {
		res.Model, res.HasModel = m, true
	}
	e := newEngine(c)
	all, pilot, _, err := e.estimate(ctx, 1, func([]stats) int { return 0 })
	if err != nil {
		return Result{}, err
	}
	st := all[0]
	if pilot.n > 0 {
		res.Pilot = pilot.n
		res.Required = required(pilot, c.RelHalfWidth, c.MaxExperiments)
	}
	res.Converged = st.precise(c.RelHalfWidth)
	res.N = st.n
	res.Mean = st.mean
	res.StdDev = st.sd()
	res.CIHalfWidth99 = Z99 * res.StdDev / math.Sqrt(float64(st.n))
	res.Events = st.events
	if res.HasModel {
		res.RelErr = (res.Mean - res.Model) / res.Model
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// estimate runs the experiments of a Run (width 1) or a Sweep (width =
// Stripes). With a fixed Config.Experiments it just runs them. Otherwise
// it runs the pilot, picks the column focus(pilot) whose precision
// matters, runs 1.1 times the count the pilot asks for there, and tops up
// while that column's interval is still too wide. It returns the
// statistics (events of all runs, pilot included, in element 0), the
// pilot's statistics of the focus column (zero without a pilot) and that
// column.
func (e *engine) estimate(ctx context.Context, width int, focus func([]stats) int) (st []stats, pilot stats, f int, err error) {
	c := e.c
	if c.Experiments > 0 {
		st, err := e.run(ctx, streamMain, 0, c.Experiments, width)
		if err != nil {
			return nil, stats{}, 0, err
		}
		return st, stats{}, focus(st), nil
	}
	pilotAll, err := e.run(ctx, streamPilot, 0, c.PilotExperiments, width)
	if err != nil {
		return nil, stats{}, 0, err
	}
	f = focus(pilotAll)
	pilot = pilotAll[f]
	// 10% more than asked for: the pilot's s is itself uncertain.
	target := min(c.MaxExperiments, max(c.PilotExperiments, int(math.Ceil(1.1*float64(required(pilot, c.RelHalfWidth, c.MaxExperiments))))))
	st, err = e.run(ctx, streamMain, 0, target, width)
	if err != nil {
		return nil, stats{}, 0, err
	}
	// Top up (rarely needed) until the interval is narrow enough.
	for round := 0; round < 5 && !st[f].precise(c.RelHalfWidth) && st[f].n < c.MaxExperiments; round++ {
		need := min(c.MaxExperiments, max(st[f].n+1, int(math.Ceil(1.05*float64(required(st[f], c.RelHalfWidth, c.MaxExperiments))))))
		more, err := e.run(ctx, streamMain, uint64(st[f].n), need-st[f].n, width)
		if err != nil {
			return nil, stats{}, 0, err
		}
		for i := range st {
			st[i].merge(more[i])
		}
	}
	st[0].events += pilotAll[0].events
	return st, pilot, f, nil
}

// RunGroups is the multi-group entry point (the paper's future work): m
// files of cfg.FileSize/m GB each, written at once, each striped over
// cfg.Stripes of N targets chosen at random. It is Run with cfg.Groups = m
// and cfg.Targets = N; there is no closed form (Result.HasModel is false
// unless cfg.Stripes = N), so the simulator is the model here, e.g. for a
// search over (m, n).
func RunGroups(ctx context.Context, cfg Config, m, N int) (Result, error) {
	if m < 1 {
		return Result{}, bad("Groups", float64(m), "is not positive (must be >= 1)")
	}
	if N < 1 {
		return Result{}, bad("Targets", float64(N), "is not positive (must be >= 1)")
	}
	cfg.Groups, cfg.Targets = m, N
	return Run(ctx, cfg)
}

// required returns ceil((Z99 s / (rel mean))^2), capped at limit.
func required(st stats, rel float64, limit int) int {
	switch {
	case st.sd() == 0: // constant output: any count is precise
		return 2
	case st.mean <= 0:
		return limit
	}
	r := math.Ceil(math.Pow(Z99*st.sd()/(rel*st.mean), 2))
	if !(r < float64(limit)) {
		return limit
	}
	return max(int(r), 2)
}

// stats is a running mean and sum of squared deviations (Welford), merged
// with Chan et al.'s formula.
type stats struct {
	n      int
	mean   float64
	m2     float64
	events int64
}

func (s *stats) add(x float64) {
	s.n++
	d := x - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (x - s.mean)
}

func (s *stats) merge(o stats) {
	if o.n == 0 {
		return
	}
	n := s.n + o.n
	d := o.mean - s.mean
	s.mean += d * float64(o.n) / float64(n)
	s.m2 += o.m2 + d*d*float64(s.n)*float64(o.n)/float64(n)
	s.n = n
	s.events += o.events
}

func (s *stats) sd() float64 {
	if s.n < 2 {
		return 0
	}
	return math.Sqrt(s.m2 / float64(s.n-1))
}

func (s *stats) precise(rel float64) bool {
	return Z99*s.sd()/math.Sqrt(float64(s.n)) <= rel*s.mean
}

// Stream domains: the pilot and the estimate use disjoint experiments.
const (
	streamMain  uint64 = 0
	streamPilot uint64 = 1 << 63
)

// experimentDone, if set, runs after each experiment (tests count them).
var experimentDone func()

// chunk is the unit of work handed to a worker; results are merged in
// chunk order, which makes them independent of the number of workers.
const chunk = 256

// engine holds a normalized Config and runs experiments on it.
type engine struct {
	c       Config
	rho     float64
	svc     float64 // service time of one block: FileSize/(m n V)
	whole   float64 // FileSize/V, for sweeps
	eqRate  float64 // Gamma - Lambda, the rate of the equilibrium wait
	blocks  int64   // m*n events for the job's own blocks
	grouped bool
}

func newEngine(c Config) *engine {
	return &engine{
		c:       c,
		rho:     c.Lambda / c.Gamma,
		svc:     c.FileSize / (float64(c.Groups) * float64(c.Stripes) * c.V),
		whole:   c.FileSize / c.V,
		eqRate:  c.Gamma - c.Lambda,
		blocks:  int64(c.Groups) * int64(c.Stripes),
		grouped: c.Groups > 1,
	}
}

// run performs experiments first .. first+count-1 of a stream domain on
// c.Workers goroutines and returns their statistics: one stats for Run,
// one per stripe count for a sweep (width = Stripes).
func (e *engine) run(ctx context.Context, domain, first uint64, count, width int) ([]stats, error) {
	nChunks := (count + chunk - 1) / chunk
	out := make([][]stats, nChunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	var stop atomic.Bool
	// Ctrl-C is heard between experiments, not only between chunks: a
	// chunk of 256 experiments on many stripes can take minutes.
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	for range min(e.c.Workers, nChunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := e.newWorker()
			for {
				ci := int(next.Add(1) - 1)
				if ci >= nChunks || stop.Load() {
					return
				}
				if ctx.Err() != nil {
					stop.Store(true)
					return
				}
				lo := ci * chunk
				hi := min(lo+chunk, count)
				acc := make([]stats, width)
				for k := lo; k < hi; k++ {
					if stop.Load() {
						return
					}
					key := domain | (first + uint64(k))
					if width == 1 {
						t, ev := w.experiment(key)
						acc[0].add(t)
						acc[0].events += ev
					} else {
						acc[0].events += w.sweep(key, acc)
					}
					if experimentDone != nil {
						experimentDone()
					}
				}
				out[ci] = acc
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	total := make([]stats, width)
	for _, acc := range out {
		for i := range total {
			total[i].merge(acc[i])
		}
	}
	return total, nil
}

// worker is the per-goroutine state: one PCG source, reseeded per stream,
// and the scratch space of the random assignment.
type worker struct {
	e       *engine
	src     *rand.PCG
	rng     *rand.Rand
	perm    []int32 // identity permutation of the targets between groups
	swaps   []int32
	count   []int32 // blocks per target in the current experiment
	touched []int32 // targets with count > 0, in order of first use
}

func (e *engine) newWorker() *worker {
	src := rand.NewPCG(0, 0)
	w := &worker{e: e, src: src, rng: rand.New(src)}
	if e.grouped {
		w.perm = make([]int32, e.c.Targets)
		for i := range w.perm {
			w.perm[i] = int32(i)
		}
		w.swaps = make([]int32, e.c.Stripes)
		w.count = make([]int32, e.c.Targets)
		w.touched = make([]int32, 0, min(e.c.Targets, e.c.Groups*e.c.Stripes))
	}
	return w
}

// Stream seeding: SplitMix64 finalisers of (Seed, experiment, queue).
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// seed points the worker's PCG at the stream of queue q of experiment k
// (q = assignStream for the random assignment).
func (w *worker) seed(k, q uint64) {
	h := mix(w.e.c.Seed ^ mix(k^mix(q)))
	w.src.Seed(h, mix(h^0x5851f42d4c957f2d))
}

const assignStream = math.MaxUint64

// experiment returns the system time of one job and the events it took.
func (w *worker) experiment(k uint64) (float64, int64) {
	e := w.e
	if !e.grouped {
		var maxW float64
		var ev int64
		for q := range e.c.Stripes {
			w.seed(k, uint64(q))
			wq, n := w.queue()
			ev += n
			if wq > maxW {
				maxW = wq
			}
		}
		return maxW + e.svc, ev + e.blocks
	}
	// Multi-group: each of the m files picks n distinct targets uniformly
	// (partial Fisher-Yates, undone afterwards so that every experiment
	// starts from the identity and depends only on its own stream).
	w.seed(k, assignStream)
	N := e.c.Targets
	for range e.c.Groups {
		for i := range e.c.Stripes {
			j := i + w.rng.IntN(N-i)
			w.swaps[i] = int32(j)
			w.perm[i], w.perm[j] = w.perm[j], w.perm[i]
			t := w.perm[i]
			if w.count[t] == 0 {
				w.touched = append(w.touched, t)
			}
			w.count[t]++
		}
		for i := e.c.Stripes - 1; i >= 0; i-- {
			j := w.swaps[i]
			w.perm[i], w.perm[j] = w.perm[j], w.perm[i]
		}
	}
	var T float64
	var ev int64
	for _, t := range w.touched {
		w.seed(k, uint64(t))
		wq, n := w.queue()
		ev += n
		if x := wq + float64(w.count[t])*e.svc; x > T {
			T = x
		}
		w.count[t] = 0
	}
	w.touched = w.touched[:0]
	return T, ev + e.blocks
}

// sweep runs experiment k for every stripe count at once: the job on n
// targets uses queues 0..n-1, exactly as experiment(k) with Stripes = n.
func (w *worker) sweep(k uint64, acc []stats) int64 {
	e := w.e
	var maxW float64
	var ev int64
	for q := range acc {
		w.seed(k, uint64(q))
		wq, n := w.queue()
		ev += n
		if wq > maxW {
			maxW = wq
		}
		acc[q].add(maxW + e.whole/float64(q+1))
	}
	return ev + int64(len(acc))
}

// queue simulates one target over [0, t] from the current stream and
// returns the unfinished work found at t and the number of arrivals
// processed: Lindley's recursion over the arrival events (package doc).
func (w *worker) queue() (float64, int64) {
	e := w.e
	r := w.rng
	var v float64 // unfinished work just after the last event
	if e.c.Init == Stationary && r.Float64() < e.rho {
		v = r.ExpFloat64() / e.eqRate
	}
	invL, invG, t := 1/e.c.Lambda, 1/e.c.Gamma, e.c.Time
	var tau float64 // time of the last event
	var n int64
	for {
		a := r.ExpFloat64() * invL
		if tau+a > t {
			// (plain comparisons: math.Max, with its NaN and -0 rules, is
			// not inlined and cost half the time of this loop)
			if v -= t - tau; v < 0 {
				v = 0
			}
			return v, n
		}
		tau += a
		if v -= a; v < 0 {
			v = 0
		}
		v += r.ExpFloat64() * invG
		n++
	}
}
