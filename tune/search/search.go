package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Objective is the function a search minimises (a time, say; negate a
// bandwidth). Evaluate may be called concurrently when Options.Parallel is
// above 1. It should honour ctx. A NaN result is an error; +Inf is a valid
// penalty for an infeasible point.
type Objective interface {
	Evaluate(ctx context.Context, x Params) (float64, error)
}

// ObjectiveFunc adapts a function to an Objective.
type ObjectiveFunc func(ctx context.Context, x Params) (float64, error)

// Evaluate calls f.
func (f ObjectiveFunc) Evaluate(ctx context.Context, x Params) (float64, error) { return f(ctx, x) }

// Method is a search heuristic. Search proposes points through e until e
// reports an error (the budget is spent, the space is exhausted, ctx is
// done or the objective failed), which it returns unchanged, or until it
// has nothing more to propose, when it returns nil. A Method must draw all
// its randomness from e.Rand so that a search is deterministic for a seed.
type Method interface {
	Name() string
	Search(ctx context.Context, e *Evaluator) error
}

// Options configure Run.
type Options struct {
	// Budget is the number of distinct points the objective may be asked
	// about (at least 1). Proposals of a point already evaluated in this
	// search are answered from memory and cost nothing.
	Budget int
	// Seed seeds the method's random numbers: the same space, objective,
	// method, options and seed give the same search.
	Seed uint64
	// Start, when not nil, is a starting point (a model's proposal, say):
	// every method evaluates it first and starts from it where it can.
	Start Point
	// Parallel is how many evaluations of a batch (a generation, a swarm
	// step, a sample) run at once; 0 or 1 means one at a time. Results do
	// not depend on it.
	Parallel int
	// OnEval, when not nil, is called after each new evaluation, in trace
	// order (never concurrently).
	OnEval func(Eval)
}

// Eval is one evaluation of a search: the Seq-th distinct point.
type Eval struct {
	Seq   int // 0, 1, 2, ... in the order the method asked
	Point Point
	Value float64
}

// Stop says why a search ended.
type Stop int

const (
	StopBudget    Stop = iota // the budget was spent
	StopExhausted             // every point of the space was evaluated
	StopDone                  // the method had nothing more to propose
	StopStalled               // the method kept proposing evaluated points
	StopCancelled             // ctx was done
	StopFailed                // the objective returned an error
)

func (s Stop) String() string {
	switch s {
	case StopBudget:
		return "budget spent"
	case StopExhausted:
		return "space exhausted"
	case StopDone:
		return "method done"
	case StopStalled:
		return "method stalled"
	case StopCancelled:
		return "cancelled"
	case StopFailed:
		return "objective failed"
	}
	return fmt.Sprintf("Stop(%d)", int(s))
}

// Result is the outcome of a search.
type Result struct {
	Method      string
	Best        Point  // nil if nothing was evaluated
	BestParams  Params // the parameters at Best
	BestValue   float64
	Evaluations int // distinct points evaluated (the budget used)
	Revisits    int // proposals answered from memory
	Stop        Stop
	Trace       []Eval
	Elapsed     time.Duration
}

// BestSoFar returns, for each evaluation of the trace, the best value up to
// and including it.
func (r *Result) BestSoFar() []float64 {
	out := make([]float64, len(r.Trace))
	best := math.Inf(1)
	for i, e := range r.Trace {
		best = min(best, e.Value)
		out[i] = best
	}
	return out
}

// EvalsTo returns how many evaluations the search needed to reach a value of
// at most target, or -1 if it never did.
func (r *Result) EvalsTo(target float64) int {
	for i, e := range r.Trace {
		if e.Value <= target {
			return i + 1
		}
	}
	return -1
}

// Errors that end a search normally; Method implementations see them from
// Evaluator.Eval and EvalBatch and return them.
var (
	ErrBudget    = errors.New("search: evaluation budget spent")
	ErrExhausted = errors.New("search: every point of the space has been evaluated")
	ErrStalled   = errors.New("search: the method keeps proposing points already evaluated")
)

// stallLimit is how many proposals in a row may be answered from memory
// before the search is declared stalled.
const stallLimit = 100_000

// Run searches space for the minimum of obj with method m. It returns the
// result and a nil error when the search ends normally (budget spent, space
// exhausted, method done or stalled). When ctx is done or the objective
// fails it returns the partial result along with the error. Invalid options
// give a nil result and an error.
func Run(ctx context.Context, space *Space, obj Objective, m Method, opt Options) (*Result, error) {
	switch {
	case space == nil:
		return nil, errors.New("search: nil space")
	case obj == nil:
		return nil, errors.New("search: nil objective")
	case m == nil:
		return nil, errors.New("search: nil method")
	case opt.Budget < 1:
		return nil, fmt.Errorf("search: the budget must be at least 1 evaluation, got %d", opt.Budget)
	case opt.Parallel < 0:
		return nil, fmt.Errorf("search: Parallel must not be negative, got %d", opt.Parallel)
	}
	if opt.Start != nil {
		if err := space.check(opt.Start); err != nil {
			return nil, fmt.Errorf("search: start: %w", err)
		}
	}
	e := &Evaluator{
		space:   space,
		obj:     obj,
		opt:     opt,
		rng:     rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15)),
		memo:    map[int64]float64{},
		bestVal: math.Inf(1),
	}
	t0 := time.Now()
	var err error
	if opt.Start != nil {
		_, err = e.Eval(ctx, opt.Start)
	}
	if err == nil {
		err = m.Search(ctx, e)
	}
	r := &Result{
		Method:      m.Name(),
		BestValue:   e.bestVal,
		Evaluations: len(e.trace),
		Revisits:    e.revisits,
		Trace:       e.trace,
		Elapsed:     time.Since(t0),
	}
	if e.best != nil {
		r.Best = e.best.Clone()
		r.BestParams = space.Params(e.best)
	}
	switch {
	case err == nil && int64(len(e.trace)) == space.size:
		r.Stop = StopExhausted
	case err == nil:
		r.Stop = StopDone
	case errors.Is(err, ErrBudget):
		r.Stop = StopBudget
	case errors.Is(err, ErrExhausted):
		r.Stop = StopExhausted
	case errors.Is(err, ErrStalled):
		r.Stop = StopStalled
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		r.Stop = StopCancelled
		return r, fmt.Errorf("search: %s: %w", m.Name(), err)
	default:
		r.Stop = StopFailed
		return r, fmt.Errorf("search: %s: %w", m.Name(), err)
	}
	return r, nil
}

// Evaluator is a method's view of a running search: it evaluates points
// through the objective, remembers every value (so a point is never
// evaluated twice in one search), enforces the budget and records the
// trace. It is not safe for concurrent use: a method calls it from one
// goroutine (EvalBatch parallelises internally).
type Evaluator struct {
	space    *Space
	obj      Objective
	opt      Options
	rng      *rand.Rand
	memo     map[int64]float64
	trace    []Eval
	best     Point
	bestVal  float64
	revisits int
	stall    int
}

// Space is the space being searched.
func (e *Evaluator) Space() *Space { return e.space }

// Rand is the search's seeded random source.
func (e *Evaluator) Rand() *rand.Rand { return e.rng }

// Start is Options.Start (nil if none).
func (e *Evaluator) Start() Point { return e.opt.Start.Clone() }

// Remaining is the number of new points the budget still allows.
func (e *Evaluator) Remaining() int {
	return int(min(int64(e.opt.Budget-len(e.trace)), e.space.size-int64(len(e.trace))))
}

// Best returns the best point so far and its value (nil, +Inf before the
// first evaluation).
func (e *Evaluator) Best() (Point, float64) { return e.best.Clone(), e.bestVal }

// Lookup returns the value of p if it has been evaluated in this search.
func (e *Evaluator) Lookup(p Point) (float64, bool) {
	v, ok := e.memo[e.space.Index(p)]
	return v, ok
}

// RandomPoint returns a uniformly random point of the space.
func (e *Evaluator) RandomPoint() Point {
	p := make(Point, e.space.Len())
	for i := range p {
		p[i] = e.rng.IntN(e.space.Card(i))
	}
	return p
}

// Eval returns the value of p, evaluating it if it is new. It panics if p is
// not in the space (a bug in the method).
func (e *Evaluator) Eval(ctx context.Context, p Point) (float64, error) {
	v, err := e.EvalBatch(ctx, []Point{p})
	if err != nil {
		return math.NaN(), err
	}
	return v[0], nil
}

// EvalBatch returns the values of pts, evaluating the new ones (up to
// Options.Parallel at a time) in order until the budget is spent. On error
// the values of points not evaluated are NaN; points evaluated before the
// error are recorded.
func (e *Evaluator) EvalBatch(ctx context.Context, pts []Point) ([]float64, error) {
	vals := make([]float64, len(pts))
	fail := func(err error) ([]float64, error) {
		for i := range vals {
			vals[i] = math.NaN()
		}
		return vals, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if int64(len(e.trace)) == e.space.size {
		return fail(ErrExhausted)
	}
	var todo []int                 // indices into pts of the new points to evaluate
	pending := map[int64]int{}     // space index -> position in todo
	alias := make([]int, len(pts)) // for each pts[i]: -1 (memo hit), or its position in todo
	var stopErr error
	for i, p := range pts {
		idx := e.space.Index(p)
		alias[i] = -1
		if v, ok := e.memo[idx]; ok {
			vals[i] = v
			e.revisits++
			e.stall++
			continue
		}
		if j, ok := pending[idx]; ok {
			alias[i] = j
			e.revisits++
			continue
		}
		if n := len(e.trace) + len(todo); int64(n) == e.space.size {
			stopErr = ErrExhausted
		} else if n >= e.opt.Budget {
			stopErr = ErrBudget
		}
		if stopErr != nil {
			for k := i; k < len(pts); k++ {
				vals[k] = math.NaN()
			}
			pts = pts[:i]
			break
		}
		pending[idx] = len(todo)
		alias[i] = len(todo)
		todo = append(todo, i)
	}
	if len(todo) > 0 {
		e.stall = 0
	} else if stopErr == nil && e.stall > stallLimit {
		return fail(ErrStalled)
	}
	res := make([]float64, len(todo))
	errs := make([]error, len(todo))
	e.evaluate(ctx, pts, todo, res, errs)
	var firstErr error
	for j, i := range todo {
		if errs[j] != nil {
			if firstErr == nil {
				firstErr = errs[j]
			}
			res[j] = math.NaN()
			continue
		}
		if firstErr != nil {
			// Keep the trace a prefix of the method's proposals: later
			// successes are dropped (a results database keeps them anyway).
			res[j] = math.NaN()
			continue
		}
		e.record(pts[i], res[j])
	}
	for i := range pts {
		if alias[i] >= 0 {
			vals[i] = res[alias[i]]
		}
	}
	if firstErr != nil {
		return vals, firstErr
	}
	return vals, stopErr
}

// evaluate runs the objective on pts[todo[j]] into res[j], errs[j].
func (e *Evaluator) evaluate(ctx context.Context, pts []Point, todo []int, res []float64, errs []error) {
	one := func(j int) {
		if err := ctx.Err(); err != nil {
			errs[j] = err
			return
		}
		x := e.space.Params(pts[todo[j]])
		v, err := e.obj.Evaluate(ctx, x)
		switch {
		case err != nil:
			errs[j] = fmt.Errorf("evaluating %v: %w", x, err)
		case math.IsNaN(v):
			errs[j] = fmt.Errorf("evaluating %v: objective returned NaN", x)
		default:
			res[j] = v
		}
	}
	workers := max(e.opt.Parallel, 1)
	if workers == 1 || len(todo) == 1 {
		for j := range todo {
			one(j)
			if errs[j] != nil {
				for k := j + 1; k < len(todo); k++ {
					errs[k] = errSkipped
				}
				return
			}
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, len(todo)) {
		wg.Go(func() {
			for j := range next {
				one(j)
			}
		})
	}
	for j := range todo {
		next <- j
	}
	close(next)
	wg.Wait()
}

var errSkipped = errors.New("skipped after an earlier error")

func (e *Evaluator) record(p Point, v float64) {
	e.memo[e.space.Index(p)] = v
	ev := Eval{Seq: len(e.trace), Point: p.Clone(), Value: v}
	e.trace = append(e.trace, ev)
	if e.best == nil || v < e.bestVal {
		e.best, e.bestVal = p.Clone(), v
	}
	if e.opt.OnEval != nil {
		e.opt.OnEval(ev)
	}
}
