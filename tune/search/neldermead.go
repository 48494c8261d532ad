package search

import (
	"context"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// NelderMead is the Nelder-Mead simplex method of gonum/optimize, run in
// continuous coordinates that map each dimension's grid indices onto [0, 1]
// (so Pow2 and LogInt dimensions are searched on a log scale); a vertex is
// evaluated at its nearest grid point, and a vertex outside the unit box at
// the nearest point inside plus a penalty that grows with the distance. The
// rounding makes the landscape a staircase on which a simplex soon stalls,
// so when it converges the method restarts: alternately around the best
// point with a small simplex and from a random point with a large one.
type NelderMead struct {
	// Size is the initial simplex edge in unit coordinates; default 0.25.
	// Restarts around the best point use a third of it.
	Size float64
}

// Name is "neldermead".
func (NelderMead) Name() string { return "neldermead" }

// Search implements Method.
func (nm NelderMead) Search(ctx context.Context, e *Evaluator) error {
	s := e.Space()
	var free []int // dimensions with more than one value
	for d := range s.Len() {
		if s.Card(d) > 1 {
			free = append(free, d)
		}
	}
	size := nm.Size
	if size <= 0 || size > 1 {
		size = 0.25
	}
	cur := e.Start()
	if cur == nil {
		cur = e.RandomPoint()
	}
	if len(free) == 0 {
		_, err := e.Eval(ctx, cur)
		return err
	}
	toUnit := func(p Point) []float64 {
		x := make([]float64, len(free))
		for i, d := range free {
			x[i] = float64(p[d]) / float64(s.Card(d)-1)
		}
		return x
	}
	// toPoint returns the grid point nearest x clamped to the unit box, and
	// how far outside the box x is.
	toPoint := func(x []float64) (Point, float64) {
		p := make(Point, s.Len()) // dimensions with one value stay at 0
		out := 0.0
		for i, d := range free {
			u := x[i]
			if u < 0 {
				out += -u
				u = 0
			} else if u > 1 {
				out += u - 1
				u = 1
			}
			p[d] = int(math.Round(u * float64(s.Card(d)-1)))
		}
		return p, out
	}
	var stopErr error
	f := func(x []float64) float64 {
		if stopErr != nil {
			return math.Inf(1)
		}
		p, out := toPoint(x)
		v, err := e.Eval(ctx, p)
		if err != nil {
			stopErr = err
			return math.Inf(1)
		}
		if out > 0 {
			v += (math.Abs(v) + 1) * out
		}
		return v
	}
	status := func() (optimize.Status, error) {
		if stopErr != nil {
			return optimize.Failure, stopErr
		}
		return optimize.NotTerminated, nil
	}
	for restart := 0; ; restart++ {
		edge := size
		switch {
		case restart == 0:
		case restart%2 == 1:
			cur, _ = e.Best()
			edge = size / 3
		default:
			cur = e.RandomPoint()
		}
		// Build the initial simplex inside the box: from x0 one edge along
		// each axis, towards the side with room.
		x0 := toUnit(cur)
		verts := [][]float64{x0}
		for i := range free {
			v := append([]float64(nil), x0...)
			if v[i]+edge > 1 && v[i]-edge >= 0 {
				v[i] -= edge
			} else {
				v[i] += edge
			}
			verts = append(verts, v)
		}
		pts := make([]Point, len(verts))
		outs := make([]float64, len(verts))
		for i, v := range verts {
			pts[i], outs[i] = toPoint(v)
		}
		vals, err := e.EvalBatch(ctx, pts)
		if err != nil {
			return err
		}
		for i := range vals {
			vals[i] += (math.Abs(vals[i]) + 1) * outs[i]
		}
		settings := &optimize.Settings{
			Converger:       &optimize.FunctionConverge{Relative: 1e-9, Iterations: 10 + 2*len(free)},
			FuncEvaluations: 200 * (len(free) + 1),
		}
		method := &optimize.NelderMead{InitialVertices: verts, InitialValues: vals}
		prob := optimize.Problem{Func: f, Status: status}
		_, err = optimize.Minimize(prob, x0, settings, method)
		if stopErr != nil {
			return stopErr
		}
		if err != nil {
			return err
		}
	}
}
