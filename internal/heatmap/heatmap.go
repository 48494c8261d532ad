// Package heatmap draws the categorical heat maps pario's sweeps and
// calibration figures share: one labelled cell per (column, row) value,
// NaN cells grey, and a colour scale that several maps can share.
package heatmap

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
)

// Map is a categorical heat map: Z[r][c] is the value at column Cols[c]
// and row Rows[r]; NaN cells are drawn grey and unlabelled. The colour
// scale runs from Lo to Hi, so that several maps (measured and simulated)
// can share one: set both from Range.
type Map struct {
	Title, XLabel, YLabel string
	Cols, Rows            []string
	Z                     [][]float64
	Lo, Hi                float64
}

type hmGrid struct{ z [][]float64 }

func (g hmGrid) Dims() (int, int)   { return len(g.z[0]), len(g.z) }
func (g hmGrid) Z(c, r int) float64 { return g.z[r][c] }
func (g hmGrid) X(c int) float64    { return float64(c) }
func (g hmGrid) Y(r int) float64    { return float64(r) }

// Range returns the smallest and largest finite value of the maps.
func Range(maps ...Map) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, m := range maps {
		for _, row := range m.Z {
			for _, v := range row {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if lo > hi {
		return 0, 1
	}
	return lo, hi
}

// Plot builds the heat map, each cell labelled with its value.
func (m Map) Plot() (*gplot.Plot, error) {
	if len(m.Rows) == 0 || len(m.Cols) == 0 || len(m.Z) != len(m.Rows) {
		return nil, fmt.Errorf("heatmap: %q: %d rows of values for %d row labels", m.Title, len(m.Z), len(m.Rows))
	}
	for r, row := range m.Z {
		if len(row) != len(m.Cols) {
			return nil, fmt.Errorf("heatmap: %q: row %d has %d values for %d columns", m.Title, r, len(row), len(m.Cols))
		}
	}
	lo, hi := m.Lo, m.Hi
	if !(hi > lo) {
		hi = lo + 1
	}
	// The palette reaches a quarter past hi; past what a float64 holds,
	// gonum's palette panics on the NaN its scaling makes.
	if top := hi + (hi-lo)/4; math.IsInf(top, 0) || math.IsNaN(top) || math.IsInf(top-lo, 0) || math.IsInf(lo, 0) {
		return nil, fmt.Errorf("heatmap: %q: values from %g to %g are too large to draw on one scale", m.Title, lo, hi)
	}
	p := gplot.New()
	p.Title.Text = m.Title
	// Kindlmann runs from black to white: stop at about 80% so the best
	// cell stays visible on a white page.
	pal := moreland.Kindlmann()
	pal.SetMin(lo)
	pal.SetMax(hi + (hi-lo)/4)
	colors := pal.Palette(64).Colors()
	h := plotter.NewHeatMap(hmGrid{m.Z}, pal.Palette(64))
	h.Min, h.Max = lo, hi+(hi-lo)/4 // the shared scale, not this map's data
	h.NaN = color.Gray{Y: 0xdd}
	h.Underflow, h.Overflow = colors[0], colors[len(colors)-1]
	p.Add(h)
	var labels plotter.XYLabels
	var light []bool
	for r, row := range m.Z {
		for c, v := range row {
			if !math.IsNaN(v) {
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(c), Y: float64(r)})
				labels.Labels = append(labels.Labels, strconv.FormatFloat(v, 'f', 0, 64))
				light = append(light, (v-lo)/(hi-lo) > 0.55)
			}
		}
	}
	if len(labels.XYs) > 0 {
		lb, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Color = color.White
			if light[i] {
				lb.TextStyle[i].Color = color.Black
			}
			lb.TextStyle[i].XAlign = -0.5
			lb.TextStyle[i].YAlign = -0.5
		}
		p.Add(lb)
	}
	tick := func(vals []string) gplot.ConstantTicks {
		t := make(gplot.ConstantTicks, len(vals))
		for i, v := range vals {
			t[i] = gplot.Tick{Value: float64(i), Label: v}
		}
		return t
	}
	p.X.Label.Text, p.Y.Label.Text = m.XLabel, m.YLabel
	p.X.Tick.Marker, p.Y.Tick.Marker = tick(m.Cols), tick(m.Rows)
	p.X.Min, p.X.Max = -0.5, float64(len(m.Cols))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(m.Rows))-0.5
	return p, nil
}
