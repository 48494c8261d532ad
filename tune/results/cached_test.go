package results

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pario/pario/tune/search"
)

// inner is the objective behind the cache: the Striping model, counting
// its evaluations and failing the test if any point is evaluated twice.
type inner struct {
	t      testing.TB
	obj    search.Striping
	mu     sync.Mutex
	seen   map[string]bool
	calls  int
	cancel func() // called at the cancelAt-th call
	at     int
}

func newInner(t testing.TB) *inner {
	return &inner{t: t, obj: search.PaperStriping(10e9), seen: map[string]bool{}}
}

func (in *inner) Evaluate(ctx context.Context, x search.Params) (float64, error) {
	in.mu.Lock()
	in.calls++
	if in.cancel != nil && in.calls == in.at {
		in.cancel()
	}
	k := x.String()
	if in.seen[k] {
		in.t.Errorf("%s evaluated twice", k)
	}
	in.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	in.mu.Lock()
	in.seen[k] = true
	in.mu.Unlock()
	return in.obj.Evaluate(ctx, x)
}

func (in *inner) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.seen)
}

func tableIV(t testing.TB) *search.Space {
	s, err := search.NewSpace(search.TableIVSequential()...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameTrace(a, b *search.Result) bool {
	return slices.EqualFunc(a.Trace, b.Trace, func(x, y search.Eval) bool {
		return x.Point.Equal(y.Point) && x.Value == y.Value
	})
}

// The must-show: a repeated search hits the database instead of the
// simulator. Every heuristic runs twice with the same seed against one
// database (closed and reopened in between); the second run evaluates
// nothing and finds the same best by the same path.
func TestRepeatedSearchHitsDatabase(t *testing.T) {
	space := tableIV(t)
	path := filepath.Join(t.TempDir(), "results.db")
	in := newInner(t)
	for _, m := range search.Heuristics() {
		var first *search.Result
		for run := range 2 {
			s, err := Open(path, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.Cached("kraken", in.obj.ID(), "model", in)
			if err != nil {
				t.Fatal(err)
			}
			before := in.count()
			r, err := search.Run(context.Background(), space, c, m, search.Options{Budget: 150, Seed: 42, Parallel: 2})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			fresh := in.count() - before
			t.Logf("%s run %d: %d evaluations, %d database hits, %d objective calls", m.Name(), run+1, r.Evaluations, c.Hits(), c.Misses())
			if c.Hits()+c.Misses() != int64(r.Evaluations) || int64(fresh) != c.Misses() {
				t.Errorf("%s run %d: %d hits + %d misses, %d fresh evaluations, for %d evaluations", m.Name(), run+1, c.Hits(), c.Misses(), fresh, r.Evaluations)
			}
			if run == 0 {
				first = r
				continue
			}
			if c.Misses() != 0 || c.Hits() != int64(r.Evaluations) {
				t.Errorf("%s: the repeated search evaluated %d points (%d hits)", m.Name(), c.Misses(), c.Hits())
			}
			if !sameTrace(first, r) || r.BestValue != first.BestValue {
				t.Errorf("%s: the repeated search took another path", m.Name())
			}
		}
	}
	// The heuristics together evaluated each point once: later methods
	// found points of earlier ones in the database.
	s, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stored := 0
	if err := s.Each("kraken", in.obj.ID(), func(k Key, r Record) error {
		stored++
		if r.Source != "model" {
			t.Errorf("record source %q", r.Source)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if stored != in.count() {
		t.Errorf("%d records stored, %d points evaluated", stored, in.count())
	}
	_, best, ok, err := s.Best("kraken", in.obj.ID())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	t.Logf("%d points evaluated once each over %d searches; best stored %.3f", stored, 2*len(search.Heuristics()), best.Value)
}

// A search interrupted by cancellation and run again replays the recorded
// points from the database and ends exactly where an uninterrupted search
// with the same seed ends.
func TestResumeAfterCancel(t *testing.T) {
	space := tableIV(t)
	for _, m := range search.Heuristics() {
		for _, parallel := range []int{1, 3} {
			const budget, cutAt = 200, 77
			want, err := search.Run(context.Background(), space, search.PaperStriping(10e9), m, search.Options{Budget: budget, Seed: 9})
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(filepath.Join(t.TempDir(), "results.db"), Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			in := newInner(t)
			c, _ := s.Cached("kraken", in.obj.ID(), "model", in)
			ctx, cancel := context.WithCancel(context.Background())
			in.cancel, in.at = cancel, cutAt
			r, err := search.Run(ctx, space, c, m, search.Options{Budget: budget, Seed: 9, Parallel: parallel})
			cancel()
			if !errors.Is(err, context.Canceled) || r.Stop != search.StopCancelled {
				t.Fatalf("%s: interrupted run: %v, %v", m.Name(), err, r.Stop)
			}
			done := in.count()
			in.cancel = nil
			c, _ = s.Cached("kraken", in.obj.ID(), "model", in)
			r, err = search.Run(context.Background(), space, c, m, search.Options{Budget: budget, Seed: 9, Parallel: parallel})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if !sameTrace(r, want) {
				t.Errorf("%s, parallel %d: the resumed search differs from an uninterrupted one", m.Name(), parallel)
			}
			// Everything recorded before the cut is a hit now (the trace may
			// have dropped the tail of a parallel batch, but the database
			// kept it), and only the rest is evaluated.
			if c.Hits() != int64(done) || c.Hits()+c.Misses() != budget {
				t.Errorf("%s, parallel %d: %d recorded before the cut; resumed run: %d hits, %d misses", m.Name(), parallel, done, c.Hits(), c.Misses())
			}
			if in.count() != budget {
				t.Errorf("%s, parallel %d: %d points evaluated in all, want %d", m.Name(), parallel, in.count(), budget)
			}
		}
	}
}

func TestCachedErrors(t *testing.T) {
	s := openTemp(t)
	obj := search.PaperStriping(10e9)
	for _, tc := range []struct {
		system, objective string
		obj               search.Objective
		want              string
	}{
		{"", "o", obj, "without a system"},
		{"s", "", obj, "without an objective"},
		{"s", "o", nil, "nil objective"},
	} {
		if _, err := s.Cached(tc.system, tc.objective, "model", tc.obj); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Cached(%q, %q): %v, want %q", tc.system, tc.objective, err, tc.want)
		}
	}
	// A failed evaluation is not stored.
	boom := errors.New("boom")
	fail := search.ObjectiveFunc(func(context.Context, search.Params) (float64, error) { return 0, boom })
	c, err := s.Cached("s", "o", "bench", fail)
	if err != nil {
		t.Fatal(err)
	}
	x := search.Params{{Name: "n", Value: 1}}
	if _, err := c.Evaluate(context.Background(), x); !errors.Is(err, boom) {
		t.Fatalf("Evaluate: %v", err)
	}
	if _, ok, _ := s.Get(Key{System: "s", Objective: "o", Params: x}); ok || c.Misses() != 0 {
		t.Error("a failed evaluation was stored")
	}
	// A closed store is an error, not a silent re-evaluation.
	ok := search.ObjectiveFunc(func(context.Context, search.Params) (float64, error) { return 1, nil })
	c, _ = s.Cached("s", "o", "bench", ok)
	s.Close()
	if _, err := c.Evaluate(context.Background(), x); err == nil {
		t.Error("Evaluate on a closed store succeeded")
	}
}
