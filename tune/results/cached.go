package results

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pario/pario/tune/search"
)

// Cached is a search.Objective that answers from the store when it can and
// otherwise evaluates the wrapped objective and records the result before
// returning it, so that no point is evaluated twice for the same system and
// objective, across searches and across processes. It is safe for
// concurrent use.
type Cached struct {
	store     *Store
	system    string
	objective string
	source    string
	obj       search.Objective
	now       func() time.Time

	hits, misses atomic.Int64
}

var _ search.Objective = (*Cached)(nil)

// Cached wraps obj: its results are stored under system and objective (see
// Key) with the given source ("model", "simulator", "bench", ...).
func (s *Store) Cached(system, objective, source string, obj search.Objective) (*Cached, error) {
	switch {
	case system == "":
		return nil, fmt.Errorf("results: %s: cached objective without a system name", s.path)
	case objective == "":
		return nil, fmt.Errorf("results: %s: cached objective without an objective name", s.path)
	case obj == nil:
		return nil, fmt.Errorf("results: %s: nil objective", s.path)
	}
	return &Cached{store: s, system: system, objective: objective, source: source, obj: obj, now: time.Now}, nil
}

// Evaluate returns the stored value of x or evaluates and stores it. A value
// that cannot be stored is an error: a search must not go on believing its
// work is saved when it is not.
func (c *Cached) Evaluate(ctx context.Context, x search.Params) (float64, error) {
	k := Key{System: c.system, Objective: c.objective, Params: x}
	r, ok, err := c.store.Get(k)
	if err != nil {
		return 0, err
	}
	if ok {
		c.hits.Add(1)
		return r.Value, nil
	}
	t0 := c.now()
	v, err := c.obj.Evaluate(ctx, x)
	if err != nil {
		return v, err
	}
	c.misses.Add(1)
	t1 := c.now()
	if err := c.store.Put(k, Record{Value: v, Time: t1, Duration: max(t1.Sub(t0), 0), Source: c.source}); err != nil {
		return v, err
	}
	return v, nil
}

// Hits is how many evaluations were answered from the store.
func (c *Cached) Hits() int64 { return c.hits.Load() }

// Misses is how many evaluations went to the wrapped objective (and were
// stored).
func (c *Cached) Misses() int64 { return c.misses.Load() }

// Memo is Cached as the search.ResultStore interface wants it, so that
// search.Recommend can use a Store without importing this package.
func (s *Store) Memo(system, objective, source string, obj search.Objective) (search.Memo, error) {
	c, err := s.Cached(system, objective, source, obj)
	if err != nil {
		return nil, err
	}
	return c, nil
}

var _ search.ResultStore = (*Store)(nil)
