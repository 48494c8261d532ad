package main

import (
	"fmt"
	"image/color"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotFig7 draws the speedup over the sequential program against the
// number of processes: ours solid, the seed's dashed, one colour per
// granularity. Speedup, not seconds, since ours are scaled down.
func plotFig7(path string, seq []time.Duration, ours map[int][]time.Duration) error {
	p := gplot.New()
	p.Title.Text = "Figure 7: speedup by ComputeMolecule processes"
	p.X.Label.Text = "processes"
	p.Y.Label.Text = "speedup over the sequential program"
	p.Add(plotter.NewGrid())
	for gi, g := range seedGrans {
		var mine, seed plotter.XYs
		for _, n := range seedProcs {
			mine = append(mine, plotter.XY{X: float64(n), Y: seq[gi].Seconds() / ours[n][gi].Seconds()})
			seed = append(seed, plotter.XY{X: float64(n), Y: seedSeq[gi] / seedFig7[n][gi]})
		}
		col := plotutil.Color(gi)
		for _, s := range []struct {
			xy     plotter.XYs
			name   string
			dashed bool
		}{{mine, fmt.Sprintf("ours, %v s", g), false}, {seed, fmt.Sprintf("seed, %v s", g), true}} {
			l, pts, err := plotter.NewLinePoints(s.xy)
			if err != nil {
				return err
			}
			l.Color, pts.Color = col, col
			if s.dashed {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l, pts)
			p.Legend.Add(s.name, l, pts)
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(18*vg.Centimeter, 12*vg.Centimeter, path)
}

// plotFig10 draws each split's time relative to 10/0, seed beside ours.
func plotFig10(path string, ours []time.Duration) error {
	p := gplot.New()
	p.Title.Text = "Figure 10: composed newspapers, time relative to 10/0"
	p.Y.Label.Text = "time / time of 10/0"
	p.Add(plotter.NewGrid())
	var seed, mine plotter.Values
	var names []string
	for i, s := range seedSplit {
		seed = append(seed, s.secs/seedSplit[0].secs)
		mine = append(mine, ours[i].Seconds()/ours[0].Seconds())
		names = append(names, fmt.Sprintf("%d/%d", s.cm, s.cede))
	}
	w := vg.Points(18)
	for i, s := range []struct {
		v    plotter.Values
		name string
		c    color.Color
	}{{seed, "seed", plotutil.Color(0)}, {mine, "ours", plotutil.Color(1)}} {
		bc, err := plotter.NewBarChart(s.v, w)
		if err != nil {
			return err
		}
		bc.Color = s.c
		bc.Offset = vg.Length(2*i-1) * w / 2
		p.Add(bc)
		p.Legend.Add(s.name, bc)
	}
	p.NominalX(names...)
	p.Legend.Top = true
	return p.Save(14*vg.Centimeter, 10*vg.Centimeter, path)
}
