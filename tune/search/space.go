package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is how a dimension's grid is laid out between its bounds.
type Kind int

const (
	// Int is every Step-th integer from Min to Max (Step 0 means 1); Max is
	// included even when Max-Min is not a multiple of Step.
	Int Kind = iota
	// Pow2 is the powers of two from Min to Max, plus Min and Max themselves
	// when they are not powers of two (1M..256M is 9 values; 1..12K is
	// 1, 2, 4, ..., 8192, 12288). Min must be at least 1.
	Pow2
	// LogInt is Steps integers spaced geometrically from Min to Max (rounded,
	// duplicates dropped, both bounds included). Min must be at least 1.
	LogInt
)

func (k Kind) String() string {
	switch k {
	case Int:
		return "int"
	case Pow2:
		return "pow2"
	case LogInt:
		return "logint"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Dim is one dimension of a search space: a named integer parameter and the
// grid of values it may take. Searches move over grid indices, so a Pow2 or
// LogInt dimension is searched on a logarithmic scale.
type Dim struct {
	Name string
	Kind Kind
	Min  int64
	Max  int64
	// Step is the spacing of an Int grid (0 means 1).
	Step int64
	// Steps is the number of values of a LogInt grid (at least 2 when
	// Min < Max).
	Steps int
	// Values, when not nil, is the grid itself (strictly increasing); Min,
	// Max, Step and Steps are then ignored, and Kind only says whether
	// Space.Nearest measures distance on a log scale (Pow2, LogInt) or not.
	Values []int64
}

// grid returns the dimension's values, or an error naming the dimension.
func (d Dim) grid() ([]int64, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("search: dimension %q: %s", d.Name, fmt.Sprintf(format, args...))
	}
	if d.Values != nil {
		if len(d.Values) == 0 {
			return nil, bad("empty list of values")
		}
		for i := 1; i < len(d.Values); i++ {
			if d.Values[i] <= d.Values[i-1] {
				return nil, bad("values must be strictly increasing: %d follows %d", d.Values[i], d.Values[i-1])
			}
		}
		return slices.Clone(d.Values), nil
	}
	if d.Min > d.Max {
		return nil, bad("inverted bounds: min %d > max %d", d.Min, d.Max)
	}
	switch d.Kind {
	case Int:
		step := d.Step
		if step == 0 {
			step = 1
		}
		if step < 0 {
			return nil, bad("negative step %d", step)
		}
		n := (uint64(d.Max)-uint64(d.Min))/uint64(step) + 1
		if n > maxDimValues {
			return nil, bad("%d values is more than the %d a dimension may have", n, maxDimValues)
		}
		var g []int64
		for v := d.Min; ; v += step {
			g = append(g, v)
			if d.Max-v < step {
				break
			}
		}
		if g[len(g)-1] != d.Max {
			g = append(g, d.Max)
		}
		return g, nil
	case Pow2:
		if d.Min < 1 {
			return nil, bad("a pow2 dimension needs min >= 1, got %d", d.Min)
		}
		g := []int64{d.Min}
		for p := int64(1); p > 0 && p <= d.Max; p <<= 1 {
			if p > d.Min {
				g = append(g, p)
			}
		}
		if g[len(g)-1] != d.Max {
			g = append(g, d.Max)
		}
		return g, nil
	case LogInt:
		if d.Min < 1 {
			return nil, bad("a logint dimension needs min >= 1, got %d", d.Min)
		}
		if d.Min == d.Max {
			return []int64{d.Min}, nil
		}
		if d.Steps < 2 {
			return nil, bad("a logint dimension needs steps >= 2, got %d", d.Steps)
		}
		if d.Steps > maxDimValues {
			return nil, bad("%d steps is more than the %d a dimension may have", d.Steps, maxDimValues)
		}
		lo, hi := math.Log(float64(d.Min)), math.Log(float64(d.Max))
		g := []int64{d.Min}
		for i := 1; i < d.Steps-1; i++ {
			v := int64(math.Round(math.Exp(lo + (hi-lo)*float64(i)/float64(d.Steps-1))))
			if v > g[len(g)-1] && v < d.Max {
				g = append(g, v)
			}
		}
		return append(g, d.Max), nil
	}
	return nil, bad("unknown kind %d", int(d.Kind))
}

// maxDimValues bounds one dimension's grid, and maxSpaceSize the whole
// space, so that point indices fit an int64 and grids fit memory.
const (
	maxDimValues = 1 << 24
	maxSpaceSize = 1 << 62
)

// Space is a validated search space: the product of its dimensions' grids.
// Build one with NewSpace; a Space is immutable and safe for concurrent use.
type Space struct {
	dims  []Dim
	grids [][]int64
	size  int64
}

// ErrEmptySpace is returned (wrapped) by NewSpace for a space without
// dimensions.
var ErrEmptySpace = errors.New("search: empty search space: no dimensions")

// NewSpace validates dims and builds their grids. Errors name the offending
// dimension: an empty or duplicate name, inverted bounds, a grid with no
// values or unsorted explicit values, a log-scaled dimension reaching below
// 1, or a space too large to index.
func NewSpace(dims ...Dim) (*Space, error) {
	if len(dims) == 0 {
		return nil, ErrEmptySpace
	}
	s := &Space{dims: slices.Clone(dims), size: 1}
	seen := map[string]bool{}
	for i, d := range dims {
		if d.Name == "" {
			return nil, fmt.Errorf("search: dimension %d has no name", i)
		}
		if strings.ContainsAny(d.Name, "= \t\n") {
			return nil, fmt.Errorf("search: dimension %q: name may not contain '=' or white space", d.Name)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("search: dimension %q appears twice", d.Name)
		}
		seen[d.Name] = true
		g, err := d.grid()
		if err != nil {
			return nil, err
		}
		if s.size > maxSpaceSize/int64(len(g)) {
			return nil, fmt.Errorf("search: dimension %q: the space would have more than 2^62 points", d.Name)
		}
		s.size *= int64(len(g))
		s.grids = append(s.grids, g)
		s.dims[i].Values = g
	}
	return s, nil
}

// Dims returns the dimensions, each with Values set to its grid.
func (s *Space) Dims() []Dim {
	out := slices.Clone(s.dims)
	for i := range out {
		out[i].Values = slices.Clone(out[i].Values)
	}
	return out
}

// Len is the number of dimensions.
func (s *Space) Len() int { return len(s.dims) }

// Size is the number of points.
func (s *Space) Size() int64 { return s.size }

// Card is the number of values of dimension i.
func (s *Space) Card(i int) int { return len(s.grids[i]) }

// Point is a point of a Space as grid coordinates: Point[i] indexes the grid
// of dimension i. Every search method proposes Points, so every proposal is
// on the grid.
type Point []int

// Equal reports whether p and q are the same point.
func (p Point) Equal(q Point) bool { return slices.Equal(p, q) }

// Clone returns a copy of p.
func (p Point) Clone() Point { return slices.Clone(p) }

// Param is the value of one named parameter.
type Param struct {
	Name  string
	Value int64
}

// Params are the parameter values of a point, in the space's dimension
// order. They are what an Objective sees.
type Params []Param

// Get returns the value of the named parameter.
func (ps Params) Get(name string) (int64, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p.Value, true
		}
	}
	return 0, false
}

// String formats the parameters as "name=value name=value".
func (ps Params) String() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(p.Value, 10))
	}
	return b.String()
}

// Contains reports whether p is a point of s.
func (s *Space) Contains(p Point) bool {
	if len(p) != len(s.grids) {
		return false
	}
	for i, c := range p {
		if c < 0 || c >= len(s.grids[i]) {
			return false
		}
	}
	return true
}

func (s *Space) check(p Point) error {
	if !s.Contains(p) {
		return fmt.Errorf("search: point %v is not in the space (%d dimensions, grid sizes %v)", []int(p), len(s.grids), s.cards())
	}
	return nil
}

func (s *Space) cards() []int {
	c := make([]int, len(s.grids))
	for i, g := range s.grids {
		c[i] = len(g)
	}
	return c
}

// Params returns the parameter values at p. It panics if p is not in s.
func (s *Space) Params(p Point) Params {
	if err := s.check(p); err != nil {
		panic(err)
	}
	ps := make(Params, len(p))
	for i, c := range p {
		ps[i] = Param{Name: s.dims[i].Name, Value: s.grids[i][c]}
	}
	return ps
}

// PointOf returns the grid point with exactly the values of ps (in any
// order; every dimension must be given once and no other name).
func (s *Space) PointOf(ps Params) (Point, error) {
	if len(ps) != len(s.dims) {
		return nil, fmt.Errorf("search: %d parameters for a %d-dimensional space", len(ps), len(s.dims))
	}
	p := make(Point, len(s.dims))
	for i, d := range s.dims {
		v, ok := ps.Get(d.Name)
		if !ok {
			return nil, fmt.Errorf("search: no value for dimension %q", d.Name)
		}
		c, found := slices.BinarySearch(s.grids[i], v)
		if !found {
			return nil, fmt.Errorf("search: dimension %q: %d is not on the grid %v", d.Name, v, s.grids[i])
		}
		p[i] = c
	}
	return p, nil
}

// Nearest returns the grid point closest to ps, dimension by dimension
// (on a log scale for Pow2 and LogInt dimensions). Missing dimensions take
// their middle value; unknown names are an error. It turns a model's
// proposal into a search's starting point.
func (s *Space) Nearest(ps Params) (Point, error) {
	for _, p := range ps {
		if !slices.ContainsFunc(s.dims, func(d Dim) bool { return d.Name == p.Name }) {
			return nil, fmt.Errorf("search: no dimension %q in the space", p.Name)
		}
	}
	p := make(Point, len(s.dims))
	for i, d := range s.dims {
		g := s.grids[i]
		v, ok := ps.Get(d.Name)
		if !ok {
			p[i] = len(g) / 2
			continue
		}
		logScale := d.Kind != Int && v > 0 && g[0] > 0
		dist := func(x int64) float64 {
			if logScale {
				return math.Abs(math.Log(float64(x)) - math.Log(float64(v)))
			}
			return math.Abs(float64(x) - float64(v))
		}
		best := 0
		for c := range g {
			if dist(g[c]) < dist(g[best]) {
				best = c
			}
		}
		p[i] = best
	}
	return p, nil
}

// Index returns p's position in the row-major enumeration of s (the last
// dimension varies fastest), in [0, Size). It panics if p is not in s.
func (s *Space) Index(p Point) int64 {
	if err := s.check(p); err != nil {
		panic(err)
	}
	var idx int64
	for i, c := range p {
		idx = idx*int64(len(s.grids[i])) + int64(c)
	}
	return idx
}

// At returns the point at position idx of the row-major enumeration.
func (s *Space) At(idx int64) Point {
	if idx < 0 || idx >= s.size {
		panic(fmt.Sprintf("search: index %d out of range [0, %d)", idx, s.size))
	}
	p := make(Point, len(s.grids))
	for i := len(s.grids) - 1; i >= 0; i-- {
		n := int64(len(s.grids[i]))
		p[i] = int(idx % n)
		idx /= n
	}
	return p
}

// String describes the space, one dimension per line.
func (s *Space) String() string {
	var b strings.Builder
	for i, d := range s.dims {
		g := s.grids[i]
		fmt.Fprintf(&b, "%s: %d values %d..%d", d.Name, len(g), g[0], g[len(g)-1])
		if i < len(s.dims)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
