package search

import (
	"context"
	"slices"
)

// batchSize is how many points the sampling methods propose at a time.
const batchSize = 64

// Exhaustive evaluates every point in row-major order (the last dimension
// fastest) until the budget is spent: the reference the heuristics are
// measured against. It uses no randomness. It is exhaustive only with a
// budget of the space's size, which Recommend gives it whatever the other
// methods' budget.
type Exhaustive struct{}

// Name is "exhaustive".
func (Exhaustive) Name() string { return "exhaustive" }

// Search implements Method.
func (Exhaustive) Search(ctx context.Context, e *Evaluator) error {
	n := e.Space().Size()
	for idx := int64(0); idx < n; {
		var batch []Point
		for ; idx < n && len(batch) < batchSize; idx++ {
			batch = append(batch, e.Space().At(idx))
		}
		if _, err := e.EvalBatch(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

// Random samples points uniformly at random, without repetition, until the
// budget is spent.
type Random struct{}

// Name is "random".
func (Random) Name() string { return "random" }

// Search implements Method.
func (Random) Search(ctx context.Context, e *Evaluator) error {
	for {
		batch := make([]Point, batchSize)
		for i := range batch {
			batch[i] = e.RandomPoint()
		}
		if _, err := e.EvalBatch(ctx, batch); err != nil {
			return err
		}
	}
}

// LatinHypercube evaluates a Latin hypercube design as large as the
// remaining budget: along every dimension the design's points fall evenly
// into equal strata of the grid, so even a small design spreads over every
// dimension's whole range. Points that coincide on a coarse grid are
// evaluated once, and the budget left over goes to a further design.
type LatinHypercube struct{}

// Name is "lhs".
func (LatinHypercube) Name() string { return "lhs" }

// Search implements Method.
func (LatinHypercube) Search(ctx context.Context, e *Evaluator) error {
	s := e.Space()
	rng := e.Rand()
	for {
		n := e.Remaining()
		if n == 0 {
			// Let the evaluator say why (budget or space).
			_, err := e.Eval(ctx, e.RandomPoint())
			if err != nil {
				return err
			}
			continue
		}
		design := make([]Point, n)
		for i := range design {
			design[i] = make(Point, s.Len())
		}
		for d := range s.Len() {
			card := float64(s.Card(d))
			for i, stratum := range rng.Perm(n) {
				c := int((float64(stratum) + rng.Float64()) * card / float64(n))
				design[i][d] = min(c, s.Card(d)-1)
			}
		}
		// Skip points already known so that the design's new points are
		// proposed in one batch.
		design = slices.DeleteFunc(design, func(p Point) bool {
			_, ok := e.Lookup(p)
			return ok
		})
		if len(design) == 0 {
			design = []Point{e.RandomPoint()}
		}
		if _, err := e.EvalBatch(ctx, design); err != nil {
			return err
		}
	}
}
