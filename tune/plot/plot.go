// Package plot renders the tuner's figures with gonum/plot: the model's
// curves (the paper's figure 3, E(T) against the stripe count n for one
// file size, and figure 4, the optimal n against the file size) and the
// trace of a search (the best value so far against the number of
// evaluations, one line per heuristic).
//
// Building a figure is pure: TimeCurve, OptimalNCurve and SearchTrace turn
// data into a Figure, which Render writes to an io.Writer as PNG or SVG and
// Save writes to a file (the format taken from the extension). Nothing here
// computes model values or runs searches; the callers (cmd/pario's `tune`
// commands) pass the data in.
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pario/pario/internal/atomicfile"
)

// Format is an output format.
type Format string

// The supported formats.
const (
	PNG Format = "png"
	SVG Format = "svg"
)

// Default size of a rendered figure.
const (
	DefaultWidth  = 16 * vg.Centimeter
	DefaultHeight = 11 * vg.Centimeter
)

// Series is one line of a figure: points (X[i], Y[i]). Points with a
// non-finite coordinate (or, on a log axis, a non-positive one) are left
// out.
type Series struct {
	Label string
	X, Y  []float64
}

// Figure is a line chart ready to render.
type Figure struct {
	Title, XLabel, YLabel string
	Series                []Series
	// LogX puts the x axis on a logarithmic scale.
	LogX bool
	// LegendLeft and LegendBottom move the legend from the top right
	// corner to the left, the bottom or the bottom left one.
	LegendLeft, LegendBottom bool
	// Width and Height default to DefaultWidth and DefaultHeight.
	Width, Height vg.Length
}

// TimeCurve is the paper's figure 3: the expected system time E(T) of a file
// of sizeGB gigabytes against the stripe count n. Each curve maps a label
// (say "exact" or "paper formula") to E(T) for n = 1..len(curve), element
// n-1; curves are drawn in the order given.
func TimeCurve(sizeGB float64, labels []string, curves [][]float64) (Figure, error) {
	if len(labels) != len(curves) {
		return Figure{}, fmt.Errorf("plot: %d labels for %d curves", len(labels), len(curves))
	}
	fig := Figure{
		Title:      fmt.Sprintf("E(T) against stripe count, %g GB file", sizeGB),
		XLabel:     "stripe count n",
		YLabel:     "expected system time E(T) (s)",
		LegendLeft: true,
	}
	for i, c := range curves {
		s := Series{Label: labels[i], X: make([]float64, len(c)), Y: append([]float64(nil), c...)}
		for n := range c {
			s.X[n] = float64(n + 1)
		}
		fig.Series = append(fig.Series, s)
	}
	return fig, nil
}

// OptimalNCurve is the paper's figure 4: the optimal stripe count against
// the file size (GB). ns[i][j] is the optimum of curve i at sizes[j].
func OptimalNCurve(sizes []float64, labels []string, ns [][]int) (Figure, error) {
	if len(labels) != len(ns) {
		return Figure{}, fmt.Errorf("plot: %d labels for %d curves", len(labels), len(ns))
	}
	fig := Figure{
		Title:      "Optimal stripe count against file size",
		XLabel:     "file size M (GB)",
		YLabel:     "optimal stripe count n",
		LegendLeft: true,
	}
	for i, c := range ns {
		if len(c) != len(sizes) {
			return Figure{}, fmt.Errorf("plot: curve %q has %d values for %d sizes", labels[i], len(c), len(sizes))
		}
		s := Series{Label: labels[i], X: append([]float64(nil), sizes...), Y: make([]float64, len(c))}
		for j, n := range c {
			s.Y[j] = float64(n)
		}
		fig.Series = append(fig.Series, s)
	}
	return fig, nil
}

// Trace is the best value so far of one search after each evaluation
// (search.Result.BestSoFar), labelled by its method.
type Trace struct {
	Method    string
	BestSoFar []float64
}

// SearchTrace plots the best value so far against the number of
// evaluations, one line per method, on a logarithmic evaluation axis (the
// interesting part of a search is its beginning). yLabel names the
// objective, e.g. "predicted write time (s)".
func SearchTrace(title, yLabel string, traces []Trace) Figure {
	fig := Figure{Title: title, XLabel: "evaluations", YLabel: yLabel, LogX: true, LegendLeft: true, LegendBottom: true}
	for _, tr := range traces {
		s := Series{Label: tr.Method, X: make([]float64, len(tr.BestSoFar)), Y: append([]float64(nil), tr.BestSoFar...)}
		for i := range s.X {
			s.X[i] = float64(i + 1)
		}
		fig.Series = append(fig.Series, s)
	}
	return fig
}

// Render writes the figure to w in format f.
func (fig Figure) Render(w io.Writer, f Format) error {
	if f != PNG && f != SVG {
		return fmt.Errorf("plot: unknown format %q (known: png, svg)", f)
	}
	p, err := fig.build()
	if err != nil {
		return err
	}
	width, height := fig.Width, fig.Height
	if width <= 0 {
		width = DefaultWidth
	}
	if height <= 0 {
		height = DefaultHeight
	}
	wt, err := p.WriterTo(width, height, string(f))
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("plot: writing %s: %w", f, err)
	}
	return nil
}

// Save renders the figure to the file at path, in the format named by its
// extension (.png or .svg). The file appears under its name only once it
// is complete (package atomicfile).
func (fig Figure) Save(path string) (err error) {
	f := Format(strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")))
	if f != PNG && f != SVG {
		return fmt.Errorf("plot: %s: unknown format (use .png or .svg)", path)
	}
	// Under a temporary name until complete: a full disk or an
	// interrupt leaves no half-written figure, and an older one whole.
	out, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := fig.Render(out, f); err != nil {
		out.Abort()
		return err
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// SaveAll renders the figure to DIR/BASE.png and DIR/BASE.svg and returns
// the two paths.
func (fig Figure) SaveAll(dir, base string) ([]string, error) {
	var paths []string
	for _, f := range []Format{PNG, SVG} {
		p := filepath.Join(dir, base+"."+string(f))
		if err := fig.Save(p); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func (fig Figure) build() (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = fig.Title
	p.X.Label.Text = fig.XLabel
	p.Y.Label.Text = fig.YLabel
	p.Add(plotter.NewGrid())
	if fig.LogX {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	p.Legend.Top = !fig.LegendBottom
	p.Legend.Left = fig.LegendLeft
	drawn := 0
	for i, s := range fig.Series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("plot: series %q has %d x and %d y values", s.Label, len(s.X), len(s.Y))
		}
		var xys plotter.XYs
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) || (fig.LogX && x <= 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plot: series %q: %w", s.Label, err)
		}
		l.Color = seriesColor(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		if s.Label != "" {
			p.Legend.Add(s.Label, l)
		}
		drawn++
	}
	if drawn == 0 {
		return nil, errors.New("plot: nothing to draw: no series has a finite point")
	}
	return p, nil
}

func seriesColor(i int) color.Color { return plotutil.Color(i) }
