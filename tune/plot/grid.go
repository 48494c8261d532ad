package plot

import (
	"fmt"
	"path/filepath"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pario/pario/internal/atomicfile"
)

// SaveGrid lays out ready-made plots (for instance bench/sweep's heat maps)
// in a grid, rows[r][c] at row r and column c, each panel w x h, and writes
// DIR/BASE.png and DIR/BASE.svg, each under its name only once complete
// (package atomicfile). It returns the two paths. A nil panel leaves its
// cell empty.
func SaveGrid(dir, base string, rows [][]*gplot.Plot, w, h vg.Length) ([]string, error) {
	if len(rows) == 0 || len(rows[0]) == 0 {
		return nil, fmt.Errorf("plot: no panel to lay out")
	}
	cols := len(rows[0])
	for i, r := range rows {
		if len(r) != cols {
			return nil, fmt.Errorf("plot: row %d has %d panels, row 0 has %d", i, len(r), cols)
		}
	}
	if w <= 0 {
		w = DefaultWidth
	}
	if h <= 0 {
		h = DefaultHeight
	}
	width, height := w*vg.Length(cols), h*vg.Length(len(rows))
	var paths []string
	for _, f := range []Format{PNG, SVG} {
		path := filepath.Join(dir, base+"."+string(f))
		var canvas vg.CanvasWriterTo
		switch f {
		case PNG:
			canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(144))}
		case SVG:
			canvas = vgsvg.New(width, height)
		}
		tiles := draw.Tiles{Rows: len(rows), Cols: cols, PadX: vg.Millimeter, PadY: vg.Millimeter,
			PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
		canvases := gplot.Align(rows, tiles, draw.New(canvas))
		for r := range rows {
			for c, p := range rows[r] {
				if p != nil {
					p.Draw(canvases[r][c])
				}
			}
		}
		out, err := atomicfile.Create(path)
		if err != nil {
			return paths, fmt.Errorf("plot: %w", err)
		}
		if _, err := canvas.WriteTo(out); err != nil {
			out.Abort()
			return paths, fmt.Errorf("plot: writing %s: %w", path, err)
		}
		if err := out.Commit(); err != nil {
			return paths, fmt.Errorf("plot: %w", err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
