package calib

import (
	"fmt"
	"math"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/pario/pario/internal/heatmap"
	"github.com/pario/pario/tune/plot"
	"github.com/pario/pario/units"
)

// SavePlot writes dir/calibration.png and .svg: one row per (servers,
// size), measured | simulated bandwidth over strip size x transfer size,
// on one colour scale. It returns the paths written.
func SavePlot(r Report, dir string) ([]string, error) {
	type key struct {
		n int
		m int64
	}
	var keys []key
	groups := map[key][]Compared{}
	for _, c := range r.Points {
		k := key{c.Targets, c.Size}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	var rows [][]*gplot.Plot
	for _, k := range keys {
		cs := groups[k]
		var ss, ts []int64
		for _, c := range cs {
			if !slices.Contains(ss, c.Strip) {
				ss = append(ss, c.Strip)
			}
			if !slices.Contains(ts, c.Transfer) {
				ts = append(ts, c.Transfer)
			}
		}
		slices.Sort(ss)
		slices.Sort(ts)
		names := func(v []int64) []string {
			var out []string
			for _, x := range v {
				out = append(out, units.FormatSize(x))
			}
			return out
		}
		meas := heatmap.Map{XLabel: "strip size", YLabel: "transfer size", Cols: names(ss), Rows: names(ts)}
		simu := meas
		meas.Z, simu.Z = make([][]float64, len(ts)), make([][]float64, len(ts))
		for r, t := range ts {
			meas.Z[r], simu.Z[r] = make([]float64, len(ss)), make([]float64, len(ss))
			for c, s := range ss {
				meas.Z[r][c], simu.Z[r][c] = math.NaN(), math.NaN()
				for _, p := range cs {
					if p.Strip == s && p.Transfer == t {
						meas.Z[r][c], simu.Z[r][c] = p.MeasuredMiB, p.SimMiB
					}
				}
			}
		}
		lo, hi := heatmap.Range(meas, simu)
		meas.Lo, meas.Hi, simu.Lo, simu.Hi = lo, hi, lo, hi
		what := fmt.Sprintf("%d server(s), %s file, write MiB/s", k.n, units.FormatSize(k.m))
		meas.Title, simu.Title = "measured, "+what, "simulated, "+what
		pm, err := meas.Plot()
		if err != nil {
			return nil, err
		}
		ps, err := simu.Plot()
		if err != nil {
			return nil, err
		}
		rows = append(rows, []*gplot.Plot{pm, ps})
	}
	return plot.SaveGrid(dir, "calibration", rows, 14*vg.Centimeter, 11*vg.Centimeter)
}
