// Package sweep varies benchmark parameters over a grid (strip size x
// transfer size, ranks, servers, ...), collects the bandwidth of each
// point, and writes them as CSV and as a heat map (two parameters) or a
// line plot (one) in PNG and SVG with gonum/plot, like the stripe-size x
// transfer-size figures of the calibration study (seed 001, figures 5-8).
//
// Run runs `pario bench` once per point, in its own process (the binary
// is the caller's to name), and reads the point's bandwidths from the run's
// JSON summary with bench.ReadSummary; WriteFiles writes the table and the
// figures.
package sweep

import (
	"encoding/csv"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pario/pario/internal/atomicfile"
	"github.com/pario/pario/internal/heatmap"
)

// Param is one varied parameter.
type Param struct {
	Name   string   // as given: "t", "strip-size", ...
	Flag   string   // the `pario bench` flag that sets it
	Values []string // in sweep order
}

// Flags maps the parameter names a sweep accepts to `pario bench` flags.
var Flags = map[string]string{
	"t": "-t", "transfer-size": "-t",
	"b": "-b", "block-size": "-b",
	"s": "-s", "segments": "-s",
	"N": "-N", "ranks": "-N",
	"strip-size":    "--pario.strip-size",
	"pario-servers": "--pario.servers",
	"servers":       "--servers",
	"layout":        "--pario.layout",
}

// ParseParam parses "name=v1,v2,...".
func ParseParam(s string) (Param, error) {
	name, vals, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(vals) == "" {
		return Param{}, fmt.Errorf("--vary %q: want name=value,value,... (e.g. t=64k,256k,1m)", s)
	}
	flag, known := Flags[name]
	if !known {
		return Param{}, fmt.Errorf("--vary %q: unknown parameter %q (known: t, b, s, N, strip-size, pario-servers, servers, layout)", s, name)
	}
	p := Param{Name: name, Flag: flag}
	for _, v := range strings.Split(vals, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return Param{}, fmt.Errorf("--vary %q: empty value", s)
		}
		p.Values = append(p.Values, v)
	}
	return p, nil
}

// MaxPoints is the largest grid Validate accepts: each point is a run of
// pario bench in a process of its own (an embedded cluster started and
// removed, at least a second here), and a heat map of more cells than
// this is no longer readable. A larger one was a typo, or days of runs.
const MaxPoints = 4096

// Validate refuses, before anything runs, two parameters that set the
// same flag (t and transfer-size: the second would silently override the
// first, and the figure would plot a parameter that did not vary) and a
// grid of more than MaxPoints points.
func Validate(params []Param) error {
	seen := map[string]string{}
	n := 1
	for _, p := range params {
		if prev, ok := seen[p.Flag]; ok {
			return fmt.Errorf("--vary %s: %s is varied already (both set %s)", p.Name, prev, p.Flag)
		}
		seen[p.Flag] = p.Name
		if len(p.Values) > MaxPoints || n*len(p.Values) > MaxPoints {
			return fmt.Errorf("--vary %s: a grid of %s points, more than %d (each a run of pario bench): vary fewer values", p.Name, gridSize(params), MaxPoints)
		}
		n *= len(p.Values)
	}
	return nil
}

// gridSize is the grid's size written as a product, "300 x 400 = 120000".
func gridSize(params []Param) string {
	var f []string
	n := 1.0
	for _, p := range params {
		f = append(f, strconv.Itoa(len(p.Values)))
		n *= float64(len(p.Values))
	}
	if len(f) == 1 {
		return f[0]
	}
	return strings.Join(f, " x ") + " = " + strconv.FormatFloat(n, 'f', 0, 64)
}

// Combos is the grid: every combination of the parameters' values, the
// last parameter varying fastest.
func Combos(params []Param) [][]string {
	out := [][]string{{}}
	for _, p := range params {
		var next [][]string
		for _, c := range out {
			for _, v := range p.Values {
				next = append(next, append(append([]string(nil), c...), v))
			}
		}
		out = next
	}
	return out
}

// Args are the `pario bench` arguments that set one point.
func Args(params []Param, values []string) []string {
	var a []string
	for i, p := range params {
		a = append(a, p.Flag, values[i])
	}
	return a
}

// Point is one measured combination.
type Point struct {
	Values            []string // one per parameter
	WriteMiB, ReadMiB float64  // mean over the repetitions, MiB/s; NaN if not measured
	WriteSD, ReadSD   float64
	Err               string // why the point failed, if it did
}

// WriteCSV writes the points with a header naming the parameters.
func WriteCSV(w io.Writer, params []Param, pts []Point) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, p := range params {
		head = append(head, p.Name)
	}
	head = append(head, "write_MiBps", "write_sd", "read_MiBps", "read_sd", "error")
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	for _, pt := range pts {
		row := append(append([]string(nil), pt.Values...), f(pt.WriteMiB), f(pt.WriteSD), f(pt.ReadMiB), f(pt.ReadSD), pt.Err)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// value picks the operation's figure of a point.
func value(pt Point, op string) float64 {
	if op == "read" {
		return pt.ReadMiB
	}
	return pt.WriteMiB
}

// categorical ticks: one per value, labelled with it.
func ticks(values []string) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(values))
	for i, v := range values {
		t[i] = plot.Tick{Value: float64(i), Label: v}
	}
	return t
}

// Plot renders op's bandwidth: a heat map with the MiB/s in each cell for
// two parameters, a line for one. It returns the plot to save.
func Plot(params []Param, pts []Point, op, title string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	switch len(params) {
	case 1:
		xys := make(plotter.XYs, 0, len(pts))
		for i, pt := range pts {
			if v := value(pt, op); !math.IsNaN(v) {
				xys = append(xys, plotter.XY{X: float64(i), Y: v})
			}
		}
		if len(xys) == 0 {
			return nil, errors.New("sweep: no point was measured")
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		l.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
		s.Color = l.Color
		p.Add(l, s, plotter.NewGrid())
		p.X.Label.Text = params[0].Name
		p.X.Tick.Marker = ticks(params[0].Values)
		p.Y.Label.Text = op + " MiB/s"
		p.Y.Min = 0
	case 2:
		cols, rows := params[0].Values, params[1].Values
		m := heatmap.Map{XLabel: params[0].Name, YLabel: params[1].Name, Cols: cols, Rows: rows, Z: make([][]float64, len(rows))}
		for r := range m.Z {
			m.Z[r] = make([]float64, len(cols))
		}
		for i, pt := range pts {
			m.Z[i%len(rows)][i/len(rows)] = value(pt, op)
		}
		m.Lo, m.Hi = heatmap.Range(m)
		m.Title = fmt.Sprintf("%s (%s MiB/s, %.0f to %.0f)", title, op, m.Lo, m.Hi)
		return m.Plot()
	default:
		return nil, fmt.Errorf("sweep: can plot one or two varied parameters, not %d", len(params))
	}
	return p, nil
}

// Save writes the plot as base.png and base.svg, each under its name only
// once complete (package atomicfile): a full disk leaves no half-written
// figure, and an earlier one whole.
func Save(p *plot.Plot, base string) error {
	for _, ext := range []string{"png", "svg"} {
		path := base + "." + ext
		wt, err := p.WriterTo(16*vg.Centimeter, 12*vg.Centimeter, ext)
		if err != nil {
			return fmt.Errorf("sweep: save %s: %w", path, err)
		}
		if err := writeFile(path, func(w io.Writer) error { _, err := wt.WriteTo(w); return err }); err != nil {
			return fmt.Errorf("sweep: save %s: %w", path, err)
		}
	}
	return nil
}

// writeFile writes path with write, under a temporary name renamed into
// place once complete.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
