package search

import (
	"context"
	"math"
	"slices"
)

// Genetic is a generational genetic algorithm on the grid with elitism:
// tournament selection, uniform crossover, and mutation that moves a gene by
// a normally distributed number of grid steps or, now and then, resets it.
// A child identical to an evaluated point is mutated again, so every
// generation spends its budget on new points.
type Genetic struct {
	Population int     // default 24
	Elite      int     // best individuals kept unchanged; default 2
	Tournament int     // default 3
	Crossover  float64 // probability of crossover; default 0.9
	Mutation   float64 // probability per gene; default 1/dimensions
}

// Name is "genetic".
func (Genetic) Name() string { return "genetic" }

type individual struct {
	p Point
	f float64
}

// Search implements Method.
func (g Genetic) Search(ctx context.Context, e *Evaluator) error {
	s := e.Space()
	rng := e.Rand()
	size := g.Population
	if size <= 0 {
		size = 24
	}
	elite := g.Elite
	if elite <= 0 {
		elite = 2
	}
	elite = min(elite, size-1)
	tour := g.Tournament
	if tour <= 0 {
		tour = 3
	}
	pc := g.Crossover
	if pc <= 0 {
		pc = 0.9
	}
	pm := g.Mutation
	if pm <= 0 {
		pm = 1 / float64(s.Len())
	}

	moveGene := func(p Point, d int) {
		card := s.Card(d)
		if rng.Float64() < 0.2 {
			p[d] = rng.IntN(card)
			return
		}
		step := int(math.Round(rng.NormFloat64() * math.Max(1, 0.1*float64(card))))
		if step == 0 {
			step = 1 - 2*rng.IntN(2)
		}
		p[d] = reflect(p[d]+step, card)
	}
	var mutable []int
	for d := range s.Len() {
		if s.Card(d) > 1 {
			mutable = append(mutable, d)
		}
	}
	// mutate moves each gene with probability pm; remutate moves one.
	mutate := func(p Point) {
		for _, d := range mutable {
			if rng.Float64() < pm {
				moveGene(p, d)
			}
		}
	}
	remutate := func(p Point) {
		if len(mutable) > 0 {
			moveGene(p, mutable[rng.IntN(len(mutable))])
		}
	}

	// Initial population: the start point, if any, and random points.
	pts := make([]Point, 0, size)
	if st := e.Start(); st != nil {
		pts = append(pts, st)
	}
	for len(pts) < size {
		pts = append(pts, e.RandomPoint())
	}
	vals, err := e.EvalBatch(ctx, pts)
	if err != nil {
		return err
	}
	pop := make([]individual, size)
	for i := range pop {
		pop[i] = individual{pts[i], vals[i]}
	}

	pick := func() Point {
		best := pop[rng.IntN(size)]
		for range tour - 1 {
			if c := pop[rng.IntN(size)]; c.f < best.f {
				best = c
			}
		}
		return best.p
	}
	for {
		slices.SortStableFunc(pop, func(a, b individual) int { return cmpFloat(a.f, b.f) })
		children := make([]Point, 0, size-elite)
		seen := map[int64]bool{}
		for len(children) < size-elite {
			a, b := pick(), pick()
			c := a.Clone()
			if rng.Float64() < pc {
				for d := range c {
					if rng.IntN(2) == 0 {
						c[d] = b[d]
					}
				}
			}
			mutate(c)
			for try := 0; try < 10; try++ {
				_, known := e.Lookup(c)
				if !known && !seen[s.Index(c)] {
					break
				}
				remutate(c)
			}
			seen[s.Index(c)] = true
			children = append(children, c)
		}
		vals, err := e.EvalBatch(ctx, children)
		if err != nil {
			return err
		}
		next := slices.Clone(pop[:elite])
		for i, c := range children {
			next = append(next, individual{c, vals[i]})
		}
		pop = next
	}
}

// cmpFloat orders floats with NaN last.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case math.IsNaN(a) && !math.IsNaN(b):
		return 1
	case !math.IsNaN(a) && math.IsNaN(b):
		return -1
	}
	return 0
}

// Swarm is particle swarm optimisation (global-best topology, constriction
// coefficients w = 0.7298, c1 = c2 = 1.4962) in continuous grid-index
// coordinates; each particle is evaluated at its nearest grid point. When a
// whole step proposes no new point, or the swarm's best has not improved for
// Patience steps, the half of the swarm with the worst personal bests is
// scattered to random positions.
type Swarm struct {
	Particles int // default 20
	Patience  int // default 10
}

// Name is "swarm".
func (Swarm) Name() string { return "swarm" }

// Search implements Method.
func (sw Swarm) Search(ctx context.Context, e *Evaluator) error {
	s := e.Space()
	rng := e.Rand()
	n := sw.Particles
	if n <= 0 {
		n = 20
	}
	patience := sw.Patience
	if patience <= 0 {
		patience = 10
	}
	const w, c1, c2 = 0.7298, 1.4962, 1.4962
	dims := s.Len()

	type particle struct {
		x, v  []float64
		pbest []float64
		pval  float64
	}
	ps := make([]particle, n)
	scatter := func(p *particle) {
		p.x = make([]float64, dims)
		p.v = make([]float64, dims)
		for d := range dims {
			hi := float64(s.Card(d) - 1)
			p.x[d] = rng.Float64() * hi
			p.v[d] = (rng.Float64() - 0.5) * hi * 0.5
		}
		p.pbest = nil
		p.pval = math.Inf(1)
	}
	for i := range ps {
		scatter(&ps[i])
	}
	if st := e.Start(); st != nil {
		for d := range dims {
			ps[0].x[d] = float64(st[d])
		}
	}
	toPoint := func(x []float64) Point {
		p := make(Point, dims)
		for d := range dims {
			p[d] = min(max(int(math.Round(x[d])), 0), s.Card(d)-1)
		}
		return p
	}
	var gbest []float64
	gval := math.Inf(1)
	stale := 0
	for {
		pts := make([]Point, n)
		fresh := 0
		for i := range ps {
			pts[i] = toPoint(ps[i].x)
			if _, ok := e.Lookup(pts[i]); !ok {
				fresh++
			}
		}
		vals, err := e.EvalBatch(ctx, pts)
		if err != nil {
			return err
		}
		improved := false
		for i := range ps {
			if vals[i] < ps[i].pval || ps[i].pbest == nil {
				ps[i].pval = vals[i]
				ps[i].pbest = slices.Clone(ps[i].x)
			}
			if vals[i] < gval {
				gval, gbest = vals[i], slices.Clone(ps[i].x)
				improved = true
			}
		}
		if improved {
			stale = 0
		} else {
			stale++
		}
		if fresh == 0 || stale >= patience {
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(ps[a].pval, ps[b].pval) })
			for _, i := range order[n/2:] {
				scatter(&ps[i])
			}
			stale = 0
			continue
		}
		for i := range ps {
			p := &ps[i]
			for d := range dims {
				hi := float64(s.Card(d) - 1)
				v := w * p.v[d]
				v += c1 * rng.Float64() * (p.pbest[d] - p.x[d])
				v += c2 * rng.Float64() * (gbest[d] - p.x[d])
				vmax := math.Max(hi*0.5, 1)
				v = math.Max(-vmax, math.Min(vmax, v))
				x := p.x[d] + v
				if x < 0 {
					x, v = 0, 0
				} else if x > hi {
					x, v = hi, 0
				}
				p.x[d], p.v[d] = x, v
			}
		}
	}
}
