package search

import (
	"context"
	"math"
)

// Annealing is simulated annealing on the grid. A move changes one or a few
// coordinates by a random number of grid steps (large while hot, small when
// cold); a worse point is accepted with probability exp(-d/T), where d is the
// relative worsening against the best value so far, so the temperature does
// not depend on the objective's units. T falls geometrically from T0 to T1
// over the budget. After Patience new evaluations without a better best, or
// when the neighbourhood is used up, the walk restarts from the best point
// or, every other time, from a random point.
type Annealing struct {
	T0, T1   float64 // default 0.05 and 0.0005 (relative worsening)
	Patience int     // default budget/8, at least 30
}

// Name is "annealing".
func (Annealing) Name() string { return "annealing" }

// Search implements Method.
func (a Annealing) Search(ctx context.Context, e *Evaluator) error {
	t0, t1 := a.T0, a.T1
	if t0 <= 0 {
		t0 = 0.05
	}
	if t1 <= 0 || t1 > t0 {
		t1 = t0 / 100
	}
	budget := e.Remaining()
	patience := a.Patience
	if patience <= 0 {
		patience = max(budget/8, 30)
	}
	s := e.Space()
	rng := e.Rand()

	cur := e.Start()
	if cur == nil {
		cur = e.RandomPoint()
	}
	fcur, err := e.Eval(ctx, cur)
	if err != nil {
		return err
	}
	used0 := budget - e.Remaining()
	lastImprove := used0
	_, bestVal := e.Best()
	revisits := 0
	restarts := 0
	for {
		used := budget - e.Remaining()
		frac := float64(used) / float64(max(budget, 1))
		temp := t0 * math.Pow(t1/t0, frac)
		heat := temp / t0 // 1 when hot, t1/t0 when cold

		next := cur.Clone()
		k := 1
		if rng.Float64() < 0.3 {
			k = 1 + rng.IntN(s.Len())
		}
		for range k {
			d := rng.IntN(s.Len())
			card := s.Card(d)
			if card == 1 {
				continue
			}
			reach := max(1, int(math.Round(float64(card-1)*0.5*math.Sqrt(heat))))
			step := 1 + rng.IntN(reach)
			if rng.IntN(2) == 0 {
				step = -step
			}
			next[d] = reflect(next[d]+step, card)
		}
		_, known := e.Lookup(next)
		fnext, err := e.Eval(ctx, next)
		if err != nil {
			return err
		}
		if known {
			revisits++
		} else {
			revisits = 0
		}
		if fnext < bestVal {
			bestVal = fnext
			lastImprove = budget - e.Remaining()
		}
		scale := math.Max(math.Abs(bestVal), 1e-300)
		if d := (fnext - fcur) / scale; d <= 0 || rng.Float64() < math.Exp(-d/temp) {
			cur, fcur = next, fnext
		}
		used = budget - e.Remaining()
		if used-lastImprove >= patience || revisits > 50*s.Len() {
			restarts++
			if restarts%2 == 1 {
				cur, fcur = e.Best()
			} else {
				cur = e.RandomPoint()
				if fcur, err = e.Eval(ctx, cur); err != nil {
					return err
				}
			}
			lastImprove = budget - e.Remaining()
			revisits = 0
		}
	}
}

// reflect folds c back into [0, card).
func reflect(c, card int) int {
	if card == 1 {
		return 0
	}
	period := 2 * (card - 1)
	c %= period
	if c < 0 {
		c += period
	}
	if c >= card {
		c = period - c
	}
	return c
}

// Orthogonal is coordinate (orthogonal) search: from the current point it
// evaluates every value of one dimension with the others held, moves to the
// best, and cycles through the dimensions in random order until a whole
// cycle brings no improvement; then it restarts from a random point.
type Orthogonal struct{}

// Name is "orthogonal".
func (Orthogonal) Name() string { return "orthogonal" }

// Search implements Method.
func (Orthogonal) Search(ctx context.Context, e *Evaluator) error {
	s := e.Space()
	rng := e.Rand()
	cur := e.Start()
	if cur == nil {
		cur = e.RandomPoint()
	}
	for {
		fcur, err := e.Eval(ctx, cur)
		if err != nil {
			return err
		}
		for improved := true; improved; {
			improved = false
			for _, d := range rng.Perm(s.Len()) {
				line := make([]Point, s.Card(d))
				for c := range line {
					line[c] = cur.Clone()
					line[c][d] = c
				}
				vals, err := e.EvalBatch(ctx, line)
				if err != nil {
					return err
				}
				for c, v := range vals {
					if v < fcur {
						cur, fcur, improved = line[c], v, true
					}
				}
			}
		}
		cur = e.RandomPoint()
	}
}
