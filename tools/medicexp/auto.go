package main

// The send --auto sweep (issue 16, item 2): at every point of a grid of
// bandwidths and round trips, the output is sent raw, with zstd and with
// each semantic plugin, and then as `pario medic send --auto` does it
// (measure the link, ask the receiver for its rates, calibrate, choose,
// send). Each run appends its rows to medic-auto.csv, so that a script
// can run it once per report size and load, and renders medic-auto.png
// from all the rows.

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/pario/pario/internal/benchutil"
	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/units"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var autoHeader = []string{"label", "query_bytes", "D", "bandwidth_Bps", "rtt_ms", "load", "plugin", "seconds",
	"auto_choice", "auto_plan_s", "auto_send_s", "auto_total_s", "best", "best_s", "auto_send_vs_best", "auto_total_vs_best", "measured_Bps", "predicted_s",
	"repeat_plan_s", "repeat_total_s", "repeat_total_vs_best", "repeat_choice", "auto_first", "auto_switched"}

// autoHeaderV1 is the number of columns before the repeated send's,
// autoHeaderV2 before SendAuto's (auto_plan_s was the plan's time; it is
// now the whole time less the chosen send's).
const (
	autoHeaderV1 = 18
	autoHeaderV2 = 21
)

// autoPoints are the sweep's links: every bandwidth at the bandwidth
// sweep's RTT, and every RTT at the latency sweep's bandwidth.
func autoPoints(c config) []cost.Link {
	var out []cost.Link
	seen := map[[2]float64]bool{}
	add := func(b, rtt float64) {
		if k := [2]float64{b, rtt}; !seen[k] {
			seen[k] = true
			out = append(out, cost.Link{B: b, RTT: rtt})
		}
	}
	for _, b := range c.bws {
		add(b, c.bwRTT.Seconds())
	}
	for _, r := range c.rtts {
		add(c.latBW, r.Seconds())
	}
	return out
}

// shortSend is the send time under which a point of the auto sweep runs
// three times the repetitions.
const shortSend = 0.1

func (l *lab) autoSweep(ctx context.Context, c config) error {
	cp, err := medic.ParseCipher(c.ciphers[0])
	if err != nil {
		return err
	}
	path := filepath.Join(c.out, c.autoName+".csv")
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if statErr != nil {
		w.Write(autoHeader)
	}
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	var semantic []string
	for _, p := range c.plugins {
		if p != "raw" {
			semantic = append(semantic, p)
		}
	}
	for _, link := range autoPoints(c) {
		if err := l.setLink(link); err != nil {
			return err
		}
		buffer := cost.SocketBuffer(link.B, link.RTT)
		// Repetitions in turn, in ABBA order (raw, zstd, blast, auto,
		// auto, blast, zstd, raw, ...), so that a spell of load or a
		// drift on this shared machine falls on all of them alike;
		// the median of each is kept, and of auto the repetition with
		// the median whole time.
		all := map[string][]float64{}
		type autoRun struct {
			rep   *medic.AutoReport
			planT float64 // the whole time less the chosen send's
			sendT float64 // the chosen send's (its encode, transfer, regeneration)
		}
		var runs, repeats []autoRun
		// A point whose best named send takes under shortSend runs
		// three times the repetitions: there the receiver's two fsyncs
		// (0-3 ms in some repetitions, 14-16 ms in others for the same
		// bytes) are more than 10% of a send, and five repetitions put
		// the same send anywhere from -22% to +46% of itself.
		short := func() bool {
			best := math.Inf(1)
			for _, ts := range all {
				best = min(best, benchutil.Median(ts))
			}
			return best < shortSend
		}
		for r := 0; r < max(c.reps, 1) || (r < 3*max(c.reps, 1) && short()); r++ {
			named := func() error {
				order := slices.Clone(c.plugins)
				if r%2 == 1 {
					slices.Reverse(order)
				}
				for _, p := range order {
					t, _, err := l.sendOnce(ctx, c, p, cp, buffer, false, nil)
					if err != nil {
						return fmt.Errorf("%s at %s, RTT %v: %w", p, units.FormatRate(link.B), link.RTT, err)
					}
					all[p] = append(all[p], t)
				}
				return nil
			}
			// ABBA: raw, zstd, blast, auto, then auto, blast, zstd, raw.
			if r%2 == 0 {
				if err := named(); err != nil {
					return err
				}
			}
			// As send --auto: medic.SendAuto over the emulated link, a
			// first send (nothing remembered of the link) and a repeated
			// one (the link the first measured from its own bytes).
			links := medic.LinkCache{Dir: filepath.Join(l.tmp, "links")}
			os.RemoveAll(links.Dir)
			for i := range 2 {
				os.RemoveAll(l.spool())
				settle()
				t0 := time.Now()
				rep, err := medic.SendAuto(ctx, l.input, medic.AutoOptions{Plugins: semantic,
					Encode:   medic.EncodeOptions{Params: c.params, Cipher: cp, Key: l.key},
					Send:     medic.SendOptions{Addr: l.proxy.Listen, Key: l.key, Name: "out"},
					SpoolDir: l.spool(), Links: links})
				if err != nil {
					return fmt.Errorf("auto at %s: %w", units.FormatRate(link.B), err)
				}
				total := time.Since(t0).Seconds()
				os.Remove(filepath.Join(l.dest, "out"))
				sendT := rep.File.Wall.Seconds()
				run := autoRun{rep, total - sendT, sendT}
				rep.WriteText(os.Stdout)
				if i == 0 {
					runs = append(runs, run)
				} else {
					repeats = append(repeats, run)
				}
			}
			if r%2 == 1 {
				if err := named(); err != nil {
					return err
				}
			}
		}
		times := map[string]float64{}
		for p, ts := range all {
			times[p] = benchutil.Median(ts)
		}
		sort.Slice(runs, func(i, j int) bool { return runs[i].planT+runs[i].sendT < runs[j].planT+runs[j].sendT })
		mid := runs[len(runs)/2]
		sort.Slice(repeats, func(i, j int) bool {
			return repeats[i].planT+repeats[i].sendT < repeats[j].planT+repeats[j].sendT
		})
		again := repeats[len(repeats)/2]
		arep, planT, sendT := mid.rep, mid.planT, mid.sendT
		best := ""
		for _, p := range c.plugins {
			if best == "" || times[p] < times[best] {
				best = p
			}
		}
		fmt.Printf("auto %-8s B=%-10s RTT=%4.0fms load=%d  raw/zstd/...:", c.label, units.FormatRate(link.B), link.RTT*1e3, c.load)
		for _, p := range c.plugins {
			fmt.Printf(" %s %.2fs", p, times[p])
		}
		fmt.Printf("  auto chose %s (measured %s): plan %.2fs + send %.2fs = %.2fs; best %s %.2fs (send %+.0f%%, total %+.0f%%)\n",
			arep.Chosen, units.FormatRate(arep.Link.B), planT, sendT, planT+sendT, best, times[best],
			100*(sendT/times[best]-1), 100*((planT+sendT)/times[best]-1))
		fmt.Printf("    repeated send: chose %s, before its send %.2fs (link %s) + send %.2fs = %.2fs (total %+.0f%%)\n", again.rep.Chosen, again.planT, again.rep.LinkSource,
			again.sendT, again.planT+again.sendT, 100*((again.planT+again.sendT)/times[best]-1))
		for _, p := range c.plugins {
			w.Write([]string{c.label, strconv.FormatInt(c.queryBytes, 10), strconv.FormatInt(l.D, 10), ff(link.B), ff(link.RTT * 1e3), strconv.Itoa(c.load), p, ff(times[p]),
				arep.Chosen, ff(planT), ff(sendT), ff(planT + sendT), best, ff(times[best]), ff(sendT / times[best]), ff((planT + sendT) / times[best]),
				ff(arep.Link.B), ff(0), ff(again.planT), ff(again.planT + again.sendT), ff((again.planT + again.sendT) / times[best]),
				again.rep.Chosen, arep.First, strconv.FormatBool(len(arep.Abandoned) > 0)})
		}
		w.Flush()
	}
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return err
	}
	if c.autoPlot == "query" {
		return renderScenario(c.out, c.autoName, c.autoTitle)
	}
	return renderAuto(c.out, c.autoName)
}

// sendOnce sends the output with plugin over the proxy, with socket
// buffers and window of the link's bandwidth-delay product, and returns
// the whole send's seconds (encode, transfer, regenerate).
// sendOnce sends l.input with plugin, as send does: from an empty spool,
// or with reuse from the container a plan left there (send --auto).
func (l *lab) sendOnce(ctx context.Context, c config, plugin string, cp medic.Cipher, buffer int, reuse bool, sess *medic.Session) (float64, *medic.FileReport, error) {
	spool := l.spool()
	if !reuse {
		os.RemoveAll(spool)
	}
	settle()
	t0 := time.Now()
	rep, err := medic.SendFile(ctx, l.input, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: plugin, Params: c.params, Cipher: cp, Key: l.key},
		Send:     medic.SendOptions{Addr: l.proxy.Listen, Key: l.key, Name: "out", Buffer: buffer, Session: sess},
		SpoolDir: spool,
	})
	if err != nil {
		return 0, nil, err
	}
	el := time.Since(t0).Seconds()
	os.Remove(filepath.Join(l.dest, "out"))
	return el, rep, nil
}

func (l *lab) spool() string { return filepath.Join(l.tmp, "spool") }

// settle waits before a timed send until the receiver's speed probe after
// the last send's answer (medic.SpeedProbeTime on every CPU) is over: the
// receiver runs on this machine, and a send started at once competed
// with it for the CPUs for its first 50 ms, which is all of a short
// send's time; a receiver at another site would not slow the sender.
func settle() { time.Sleep(2 * medic.SpeedProbeTime) }

type autoRow struct {
	label             string
	query, D, B, rtt  float64
	load              int
	plugin            string
	seconds           float64
	choice            string
	autoSend, autoAll float64
}

func readAuto(path string) ([]autoRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	if _, err := r.Read(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []autoRow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) != len(autoHeader) && len(rec) != autoHeaderV1 && len(rec) != autoHeaderV2 {
			return nil, fmt.Errorf("%s: %d columns, want %d", path, len(rec), len(autoHeader))
		}
		num := func(i int) float64 { v, _ := strconv.ParseFloat(rec[i], 64); return v }
		load, _ := strconv.Atoi(rec[5])
		out = append(out, autoRow{label: rec[0], query: num(1), D: num(2), B: num(3), rtt: num(4), load: load, plugin: rec[6], seconds: num(7),
			choice: rec[8], autoSend: num(10), autoAll: num(11)})
	}
}

// renderAuto draws medic-auto.png: one panel per report (label), time
// against bandwidth (at the smallest RTT, no load), a line per plugin and
// auto's send and whole time (planning included) as marks.
func renderAuto(dir, name string) error {
	rows, err := readAuto(filepath.Join(dir, name+".csv"))
	if err != nil {
		return err
	}
	var labels []string
	sizes := map[string]float64{}
	minRTT := map[string]float64{}
	for _, r := range rows {
		if _, ok := sizes[r.label]; !ok {
			labels = append(labels, r.label)
			minRTT[r.label] = r.rtt
		}
		sizes[r.label] = r.D
		minRTT[r.label] = math.Min(minRTT[r.label], r.rtt)
	}
	sort.Slice(labels, func(i, j int) bool { return sizes[labels[i]] < sizes[labels[j]] })
	if len(labels) == 0 {
		return errors.New("medic-auto.csv has no rows")
	}
	plots := [][]*gplot.Plot{make([]*gplot.Plot, len(labels))}
	for j, lb := range labels {
		p := gplot.New()
		p.Title.Text = fmt.Sprintf("%s: %s report (RTT %.0f ms)", lb, units.FormatBytes(int64(sizes[lb])), minRTT[lb])
		p.X.Label.Text = "bandwidth (MB/s)"
		p.Y.Label.Text = "seconds, end to end"
		p.X.Scale, p.X.Tick.Marker = gplot.LogScale{}, gplot.LogTicks{}
		p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, gplot.LogTicks{}
		p.Legend.Top, p.Legend.TextStyle.Font.Size = true, vg.Points(7)
		series := map[string]plotter.XYs{}
		var names []string
		var autoSend, autoAll plotter.XYs
		seenAuto := map[float64]bool{}
		for _, r := range rows {
			if r.label != lb || r.rtt != minRTT[lb] || r.load != 0 {
				continue
			}
			if _, ok := series[r.plugin]; !ok {
				names = append(names, r.plugin)
			}
			series[r.plugin] = append(series[r.plugin], plotter.XY{X: r.B / 1e6, Y: r.seconds})
			if !seenAuto[r.B] {
				seenAuto[r.B] = true
				autoSend = append(autoSend, plotter.XY{X: r.B / 1e6, Y: r.autoSend})
				autoAll = append(autoAll, plotter.XY{X: r.B / 1e6, Y: r.autoAll})
			}
		}
		for i, n := range names {
			xy := series[n]
			sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
			line, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			line.Color = plotutil.Color(i)
			line.Width = vg.Points(1.5)
			p.Add(line)
			p.Legend.Add(n, line)
		}
		for _, m := range []struct {
			name  string
			xy    plotter.XYs
			shape draw.GlyphDrawer
			col   color.Color
		}{{"auto: the send it chose", autoSend, draw.CircleGlyph{}, color.Black}, {"auto: whole time (first send)", autoAll, draw.CrossGlyph{}, color.RGBA{R: 200, A: 255}}} {
			sc, err := plotter.NewScatter(m.xy)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Shape, sc.GlyphStyle.Color, sc.GlyphStyle.Radius = m.shape, m.col, vg.Points(3)
			p.Add(sc)
			p.Legend.Add(m.name, sc)
		}
		// A log axis over one value (a sweep of one bandwidth), or none,
		// has no ticks: gonum/plot panics on it.
		for _, ax := range []*gplot.Axis{&p.X, &p.Y} {
			if ax.Max <= 0 {
				ax.Min, ax.Max = 0.01, 1
			} else if ax.Min <= 0 || ax.Min == ax.Max {
				ax.Min, ax.Max = ax.Max/2, ax.Max*2
			}
		}
		plots[0][j] = p
	}
	img := vgimg.New(vg.Points(360*float64(len(labels))), vg.Points(340))
	dc := draw.New(img)
	canvases := gplot.Align(plots, draw.Tiles{Rows: 1, Cols: len(labels), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}, dc)
	for j := range labels {
		plots[0][j].Draw(canvases[0][j])
	}
	return savePNG(img, filepath.Join(dir, name+".png"))
}

func savePNG(img *vgimg.Canvas, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// renderScenario draws NAME.png for one link and several query sizes, as
// the paper's figures 9 and 10: seconds against the query's size (KB), a
// line per plugin and auto's send and whole time as marks.
func renderScenario(dir, name, title string) error {
	rows, err := readAuto(filepath.Join(dir, name+".csv"))
	if err != nil {
		return err
	}
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = "query size (KB)"
	p.Y.Label.Text = "seconds, end to end"
	p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, gplot.LogTicks{}
	p.Legend.Top, p.Legend.Left, p.Legend.TextStyle.Font.Size = true, true, vg.Points(8)
	series := map[string]plotter.XYs{}
	var names []string
	var autoSend, autoAll plotter.XYs
	seen := map[float64]bool{}
	for _, r := range rows {
		if r.load != 0 {
			continue
		}
		x := r.query / 1e3
		if _, ok := series[r.plugin]; !ok {
			names = append(names, r.plugin)
		}
		series[r.plugin] = append(series[r.plugin], plotter.XY{X: x, Y: r.seconds})
		if !seen[x] {
			seen[x] = true
			autoSend = append(autoSend, plotter.XY{X: x, Y: r.autoSend})
			autoAll = append(autoAll, plotter.XY{X: x, Y: r.autoAll})
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%s.csv has no rows", name)
	}
	for i, n := range names {
		xy := series[n]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		line, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		line.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		line.Width = vg.Points(1.5)
		p.Add(line, pts)
		p.Legend.Add(n, line, pts)
	}
	for _, m := range []struct {
		name  string
		xy    plotter.XYs
		shape draw.GlyphDrawer
		col   color.Color
	}{{"auto: the send it chose", autoSend, draw.CircleGlyph{}, color.Black}, {"auto: whole time (first send)", autoAll, draw.CrossGlyph{}, color.RGBA{R: 200, A: 255}}} {
		sc, err := plotter.NewScatter(m.xy)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape, sc.GlyphStyle.Color, sc.GlyphStyle.Radius = m.shape, m.col, vg.Points(3)
		p.Add(sc)
		p.Legend.Add(m.name, sc)
	}
	return p.Save(16*vg.Centimeter, 12*vg.Centimeter, filepath.Join(dir, name+".png"))
}
