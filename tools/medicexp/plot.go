package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"

	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/units"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

type crossing struct {
	a, b                string
	predicted, measured float64 // x units of the sweep (ms or MB/s); NaN if none
}

// xOf is a point's position on the sweep's axis: RTT in ms, or MB/s.
func xOf(sweep string, p point) float64 {
	if sweep == "latency" {
		return p.link.RTT * 1e3
	}
	return p.link.B / 1e6
}

// measuredCrossing interpolates where series a's and b's measured times
// cross (first sign change of a-b along the axis).
func measuredCrossing(sweep string, a, b []point) float64 {
	n := min(len(a), len(b))
	for i := 1; i < n; i++ {
		d0 := a[i-1].measured - b[i-1].measured
		d1 := a[i].measured - b[i].measured
		if d0 == 0 {
			return xOf(sweep, a[i-1])
		}
		if d0*d1 < 0 {
			x0, x1 := xOf(sweep, a[i-1]), xOf(sweep, a[i])
			if sweep == "bandwidth" { // interpolate on the log axis
				l0, l1 := math.Log(x0), math.Log(x1)
				return math.Exp(l0 + (l1-l0)*d0/(d0-d1))
			}
			return x0 + (x1-x0)*d0/(d0-d1)
		}
	}
	return math.NaN()
}

// predictedCrossing is where the cost model says a and b take equally
// long, on the sweep's axis.
func predictedCrossing(sweep string, D float64, a, b cost.Estimate, link cost.Link) float64 {
	// The bandwidth at which they meet.
	var bs float64
	if b.Name == "raw" {
		// raw is a measured estimate too (sealing and hashing cost).
		bs = cost.CrossoverPair(a, b)
	} else if a.X <= b.X {
		bs = cost.CrossoverPair(a, b)
	} else {
		bs = cost.CrossoverPair(b, a)
	}
	if bs == 0 || math.IsInf(bs, 0) || math.IsNaN(bs) {
		return math.NaN()
	}
	if sweep == "bandwidth" {
		return bs / 1e6
	}
	// Latency: one stream moves min(B, W/RTT); they meet where W/RTT = bs.
	if bs >= link.B || link.Window <= 0 {
		return math.NaN()
	}
	return link.Window / bs * 1e3
}

func (l *lab) render(c config, sweep string, pts []point) error {
	series := map[string][]point{}
	var order []string
	for _, p := range pts {
		k := p.plugin + "/" + p.cipher
		if _, ok := series[k]; !ok {
			order = append(order, k)
		}
		series[k] = append(series[k], p)
	}
	for _, s := range series {
		sort.Slice(s, func(i, j int) bool { return xOf(sweep, s[i]) < xOf(sweep, s[j]) })
	}
	if len(series) > 0 && len(series[order[0]]) < 2 {
		// One point per series (a single bandwidth or RTT): nothing to plot.
		fmt.Printf("%s: one point per series, no plot\n", sweep)
		return nil
	}

	p := gplot.New()
	p.Add(plotter.NewGrid())
	p.Y.Label.Text = "end-to-end time (s): encode + transfer + regenerate"
	ymin, ymax := math.Inf(1), 0.0
	for _, pt := range pts {
		ymin = math.Min(ymin, math.Min(pt.measured, pt.predicted))
		ymax = math.Max(ymax, math.Max(pt.measured, pt.predicted))
	}
	if sweep == "latency" {
		win := fmt.Sprintf("a %d KiB window", c.latWindow>>10)
		if c.latWindow == 0 {
			win = "window and socket buffers of the bandwidth-delay product"
		}
		p.Title.Text = fmt.Sprintf("medic: latency sweep at %s, one stream with %s, D = %.1f MB", units.FormatRate(c.latBW), win, float64(l.D)/1e6)
		p.X.Label.Text = "round-trip time (ms)"
	} else {
		p.Title.Text = fmt.Sprintf("medic: bandwidth sweep, RTT %v, D = %.1f MB", c.bwRTT, float64(l.D)/1e6)
		p.X.Label.Text = "bandwidth (MB/s)"
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	p.Y.Scale = gplot.LogScale{}
	p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(7)

	pluginIdx := map[string]int{}
	for i, pl := range c.plugins {
		pluginIdx[pl] = i
	}
	for _, k := range order {
		s := series[k]
		pl, ci := s[0].plugin, s[0].cipher
		col := plotutil.Color(pluginIdx[pl])
		var mxy, pxy plotter.XYs
		for _, pt := range s {
			mxy = append(mxy, plotter.XY{X: xOf(sweep, pt), Y: pt.measured})
			pxy = append(pxy, plotter.XY{X: xOf(sweep, pt), Y: pt.predicted})
		}
		line, pnts, err := plotter.NewLinePoints(mxy)
		if err != nil {
			return err
		}
		line.Color, pnts.Color = col, col
		line.Width = vg.Points(1.5)
		if ci != c.ciphers[0] {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			pnts.Shape = draw.BoxGlyph{}
		}
		p.Add(line, pnts)
		p.Legend.Add(fmt.Sprintf("%s, %s: measured", pl, ci), line, pnts)
		if ci == c.ciphers[0] {
			pl2, err := plotter.NewLine(pxy)
			if err != nil {
				return err
			}
			pl2.Color = col
			pl2.Width = vg.Points(0.8)
			pl2.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2)}
			p.Add(pl2)
			p.Legend.Add(fmt.Sprintf("%s: cost model", pl), pl2)
		}
	}

	// Crossovers, for the first cipher: each plugin against raw, and the
	// plugins against each other.
	ci := c.ciphers[0]
	var xs []crossing
	for i, a := range c.plugins {
		for _, b := range c.plugins[i+1:] {
			sa, sb := series[a+"/"+ci], series[b+"/"+ci]
			if len(sa) == 0 || len(sb) == 0 {
				continue
			}
			ea, eb := l.est[a+"/"+ci], l.est[b+"/"+ci]
			if a == "raw" {
				ea, eb = eb, ea
			}
			pc := predictedCrossing(sweep, float64(l.D), ea, eb, sa[0].link)
			xs = append(xs, crossing{a: ea.Name, b: eb.Name, predicted: pc, measured: measuredCrossing(sweep, sa, sb)})
		}
	}
	unit := "MB/s"
	if sweep == "latency" {
		unit = "ms"
	}
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, pt := range pts {
		xlo, xhi = math.Min(xlo, xOf(sweep, pt)), math.Max(xhi, xOf(sweep, pt))
	}
	for i, x := range xs {
		fmt.Printf("%s crossover %s vs %s: predicted %.3g %s, measured %.3g %s\n", sweep, x.a, x.b, x.predicted, unit, x.measured, unit)
		if math.IsNaN(x.predicted) || x.predicted < xlo || x.predicted > xhi {
			continue
		}
		v, err := plotter.NewLine(plotter.XYs{{X: x.predicted, Y: ymin * 0.8}, {X: x.predicted, Y: ymax * 1.2}})
		if err != nil {
			return err
		}
		v.Color = color.Gray{Y: uint8(60 + 50*i)}
		v.Width = vg.Points(1)
		v.Dashes = []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)}
		p.Add(v)
		p.Legend.Add(fmt.Sprintf("predicted crossover %s/%s: %.3g %s (measured %.3g)", x.a, x.b, x.predicted, unit, x.measured), v)
	}
	// Room above the curves for the legend.
	p.Y.Min, p.Y.Max = ymin*0.7, ymax*8
	path := filepath.Join(c.out, "medic-"+sweep+".png")
	if err := p.Save(22*vg.Centimeter, 15*vg.Centimeter, path); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}
