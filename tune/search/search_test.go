package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// allMethods are the heuristics plus the exhaustive reference.
func allMethods() []Method {
	return append(Heuristics(), Exhaustive{})
}

// bowl is a cheap deterministic objective with a unique minimum at
// (7, 3, 5) of a 20 x 9 x 11 space, plus a ripple so that it is not convex.
func bowl() (*Space, Objective) {
	s, err := NewSpace(
		Dim{Name: "a", Min: 0, Max: 19},
		Dim{Name: "b", Kind: Pow2, Min: 1, Max: 256},
		Dim{Name: "c", Min: -5, Max: 5},
	)
	if err != nil {
		panic(err)
	}
	obj := ObjectiveFunc(func(_ context.Context, x Params) (float64, error) {
		a, _ := x.Get("a")
		b, _ := x.Get("b")
		c, _ := x.Get("c")
		lb := math.Log2(float64(b))
		v := 10 + math.Pow(float64(a)-7, 2) + 3*math.Pow(lb-3, 2) + math.Pow(float64(c), 2) + 2*math.Sin(float64(a)*1.7)*math.Cos(lb)
		return v, nil
	})
	return s, obj
}

// counting wraps an objective and counts calls per point.
type counting struct {
	obj   Objective
	calls atomic.Int64
	mu    chan struct{}
	seen  map[string]int
}

func newCounting(obj Objective) *counting {
	return &counting{obj: obj, mu: make(chan struct{}, 1), seen: map[string]int{}}
}

func (c *counting) Evaluate(ctx context.Context, x Params) (float64, error) {
	c.calls.Add(1)
	c.mu <- struct{}{}
	c.seen[x.String()]++
	<-c.mu
	return c.obj.Evaluate(ctx, x)
}

func TestMethodsBasics(t *testing.T) {
	space, obj := bowl()
	opt, optVal := exhaustiveOptimum(t, space, obj)
	for _, m := range allMethods() {
		t.Run(m.Name(), func(t *testing.T) {
			const budget = 300
			c := newCounting(obj)
			r, err := Run(context.Background(), space, c, m, Options{Budget: budget, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if r.Method != m.Name() || r.Stop != StopBudget {
				t.Errorf("method %q stop %v, want %q, budget spent", r.Method, r.Stop, m.Name())
			}
			if r.Evaluations != budget || len(r.Trace) != budget || c.calls.Load() != budget {
				t.Errorf("%d evaluations, %d traced, %d objective calls; want %d each", r.Evaluations, len(r.Trace), c.calls.Load(), budget)
			}
			for k, n := range c.seen {
				if n != 1 {
					t.Errorf("%s evaluated %d times", k, n)
				}
			}
			best := math.Inf(1)
			for i, e := range r.Trace {
				if e.Seq != i || !space.Contains(e.Point) {
					t.Fatalf("trace[%d] = %+v", i, e)
				}
				v, _ := obj.Evaluate(context.Background(), space.Params(e.Point))
				if v != e.Value {
					t.Fatalf("trace[%d] value %v, objective says %v", i, e.Value, v)
				}
				best = min(best, v)
			}
			if r.BestValue != best || !slices.Equal(r.BestParams, space.Params(r.Best)) {
				t.Errorf("best %v at %v, trace minimum %v", r.BestValue, r.BestParams, best)
			}
			if bsf := r.BestSoFar(); bsf[len(bsf)-1] != best {
				t.Errorf("BestSoFar ends at %v", bsf[len(bsf)-1])
			}
			// 300 of 2,420 points: every heuristic should come near the
			// optimum of this bowl (the quality test is the real measure).
			if _, ok := m.(Exhaustive); !ok && r.BestValue > optVal*1.5 {
				t.Errorf("best %v at %v; optimum %v at %v", r.BestValue, r.BestParams, optVal, space.Params(opt))
			}
		})
	}
}

func exhaustiveOptimum(t testing.TB, space *Space, obj Objective) (Point, float64) {
	r, err := Run(context.Background(), space, obj, Exhaustive{}, Options{Budget: int(space.Size())})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopExhausted {
		t.Fatalf("exhaustive stopped with %v", r.Stop)
	}
	return r.Best, r.BestValue
}

func TestDeterministic(t *testing.T) {
	space, obj := bowl()
	for _, m := range allMethods() {
		t.Run(m.Name(), func(t *testing.T) {
			run := func(seed uint64, parallel int) *Result {
				r, err := Run(context.Background(), space, obj, m, Options{Budget: 150, Seed: seed, Parallel: parallel})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			a, b, c := run(7, 0), run(7, 4), run(8, 1)
			if !sameTrace(a, b) {
				t.Error("the same seed gave different searches (serial vs parallel)")
			}
			if _, ok := m.(Exhaustive); !ok && sameTrace(a, c) {
				t.Error("different seeds gave the same search")
			}
		})
	}
}

func sameTrace(a, b *Result) bool {
	return slices.EqualFunc(a.Trace, b.Trace, func(x, y Eval) bool {
		return x.Seq == y.Seq && x.Point.Equal(y.Point) && x.Value == y.Value
	})
}

// A budget larger than the space: every method stops once it has seen every
// point (or has nothing more to propose), never evaluates a point twice, and
// does not hang.
func TestSmallSpaceExhausted(t *testing.T) {
	for _, dims := range [][]Dim{
		{{Name: "a", Min: 1, Max: 5}, {Name: "b", Kind: Pow2, Min: 1, Max: 8}},
		{{Name: "only", Min: 3, Max: 3}},
		{{Name: "a", Min: 1, Max: 2}, {Name: "fixed", Min: 4, Max: 4}},
	} {
		space, err := NewSpace(dims...)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range allMethods() {
			c := newCounting(ObjectiveFunc(func(_ context.Context, x Params) (float64, error) {
				a := x[0].Value
				return float64((a - 2) * (a - 2)), nil
			}))
			r, err := Run(context.Background(), space, c, m, Options{Budget: 1000, Seed: 3})
			if err != nil {
				t.Fatalf("%s: %v", m.Name(), err)
			}
			if r.Evaluations > int(space.Size()) || c.calls.Load() != int64(r.Evaluations) {
				t.Errorf("%s on %d points: %d evaluations, %d calls", m.Name(), space.Size(), r.Evaluations, c.calls.Load())
			}
			if r.Stop == StopExhausted && r.Evaluations != int(space.Size()) {
				t.Errorf("%s: exhausted after %d of %d points", m.Name(), r.Evaluations, space.Size())
			}
			t.Logf("%s on %d points: %d evaluations, %d revisits, %v", m.Name(), space.Size(), r.Evaluations, r.Revisits, r.Stop)
		}
	}
}

func TestStart(t *testing.T) {
	space, obj := bowl()
	start := Point{19, 8, 0}
	for _, m := range allMethods() {
		r, err := Run(context.Background(), space, obj, m, Options{Budget: 20, Seed: 1, Start: start})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Trace[0].Point.Equal(start) {
			t.Errorf("%s: first evaluation %v, want the start %v", m.Name(), r.Trace[0].Point, start)
		}
	}
	if _, err := Run(context.Background(), space, obj, Random{}, Options{Budget: 20, Start: Point{20, 0, 0}}); err == nil || !strings.Contains(err.Error(), "start") {
		t.Errorf("start outside the space: %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	space, obj := bowl()
	ctx := context.Background()
	for _, tc := range []struct {
		space *Space
		obj   Objective
		m     Method
		opt   Options
		want  string
	}{
		{nil, obj, Random{}, Options{Budget: 1}, "nil space"},
		{space, nil, Random{}, Options{Budget: 1}, "nil objective"},
		{space, obj, nil, Options{Budget: 1}, "nil method"},
		{space, obj, Random{}, Options{}, "budget must be at least 1"},
		{space, obj, Random{}, Options{Budget: 1, Parallel: -1}, "Parallel"},
	} {
		r, err := Run(ctx, tc.space, tc.obj, tc.m, tc.opt)
		if err == nil || r != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%v) = %v, %v; want an error containing %q", tc.opt, r, err, tc.want)
		}
	}
}

func TestObjectiveFailure(t *testing.T) {
	space, _ := bowl()
	boom := errors.New("boom")
	for _, m := range allMethods() {
		for _, parallel := range []int{1, 3} {
			var n atomic.Int64
			obj := ObjectiveFunc(func(_ context.Context, x Params) (float64, error) {
				if n.Add(1) > 30 {
					return 0, boom
				}
				a, _ := x.Get("a")
				return float64(a), nil
			})
			r, err := Run(context.Background(), space, obj, m, Options{Budget: 100, Seed: 1, Parallel: parallel})
			if !errors.Is(err, boom) || r == nil || r.Stop != StopFailed {
				t.Fatalf("%s: %v, %+v", m.Name(), err, r)
			}
			if !strings.Contains(err.Error(), "evaluating a=") || !strings.Contains(err.Error(), m.Name()) {
				t.Errorf("%s: error %q does not name the method and point", m.Name(), err)
			}
			if r.Evaluations > 30 || r.Best == nil {
				t.Errorf("%s: %d evaluations recorded, best %v", m.Name(), r.Evaluations, r.Best)
			}
		}
	}
	nan := ObjectiveFunc(func(context.Context, Params) (float64, error) { return math.NaN(), nil })
	if _, err := Run(context.Background(), space, nan, Random{}, Options{Budget: 10}); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN objective: %v", err)
	}
}

func TestCancel(t *testing.T) {
	space, _ := bowl()
	for _, m := range allMethods() {
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int64
		obj := ObjectiveFunc(func(ctx context.Context, x Params) (float64, error) {
			if n.Add(1) == 25 {
				cancel()
			}
			a, _ := x.Get("a")
			return float64(a), ctx.Err()
		})
		r, err := Run(ctx, space, obj, m, Options{Budget: 100, Seed: 1, Parallel: 2})
		cancel()
		if !errors.Is(err, context.Canceled) || r == nil || r.Stop != StopCancelled {
			t.Fatalf("%s: %v, %+v", m.Name(), err, r)
		}
		if r.Evaluations >= 25 {
			t.Errorf("%s: %d evaluations recorded, cancelled at the 25th", m.Name(), r.Evaluations)
		}
	}
}

func TestMethodByName(t *testing.T) {
	for _, m := range allMethods() {
		got, err := MethodByName(m.Name())
		if err != nil || got.Name() != m.Name() {
			t.Errorf("MethodByName(%q) = %v, %v", m.Name(), got, err)
		}
	}
	if _, err := MethodByName("hillclimb"); err == nil || !strings.Contains(err.Error(), "neldermead") {
		t.Errorf("unknown method: %v", err)
	}
}

func TestOnEval(t *testing.T) {
	space, obj := bowl()
	var got []string
	r, err := Run(context.Background(), space, obj, Genetic{}, Options{Budget: 50, Seed: 2, Parallel: 4, OnEval: func(e Eval) {
		got = append(got, fmt.Sprint(e.Seq, e.Point, e.Value))
	}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range r.Trace {
		want = append(want, fmt.Sprint(e.Seq, e.Point, e.Value))
	}
	if !slices.Equal(got, want) {
		t.Errorf("OnEval saw %d evaluations, trace has %d", len(got), len(want))
	}
}

// stubborn proposes its first point forever.
type stubborn struct{}

func (stubborn) Name() string { return "stubborn" }
func (stubborn) Search(ctx context.Context, e *Evaluator) error {
	p := e.RandomPoint()
	for {
		if _, err := e.Eval(ctx, p); err != nil {
			return err
		}
	}
}

// once evaluates one point and gives up.
type once struct{}

func (once) Name() string { return "once" }
func (once) Search(ctx context.Context, e *Evaluator) error {
	_, err := e.Eval(ctx, e.RandomPoint())
	return err
}

func TestStopReasons(t *testing.T) {
	space, obj := bowl()
	r, err := Run(context.Background(), space, obj, stubborn{}, Options{Budget: 10})
	if err != nil || r.Stop != StopStalled || r.Evaluations != 1 {
		t.Errorf("stubborn method: %v, %v after %d evaluations", err, r.Stop, r.Evaluations)
	}
	r, err = Run(context.Background(), space, obj, once{}, Options{Budget: 10})
	if err != nil || r.Stop != StopDone || r.Evaluations != 1 {
		t.Errorf("method that gives up: %v, %v after %d evaluations", err, r.Stop, r.Evaluations)
	}
	for s := StopBudget; s <= StopFailed+1; s++ {
		if s.String() == "" {
			t.Errorf("Stop(%d) has no name", s)
		}
	}
}
