package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pario/pario/mfg"
)

// A sweep is one of the experiments after speedup-against-runs: points of
// `pario mcmc` runs, each an MFG run timed against a serial baseline, on
// the same emulated cluster. Each experiment (exp_*.go) only lists its
// points; the sweep runs them, writes docs/mfg-<name>.csv and plots one
// column of it.
type sweep struct {
	name   string // file names: mfg-<name>.csv, .png
	title  string
	xLabel string
	logX   bool
	// y is what the figure shows: "speedup" or "delta_perf" (eq. 7.3
	// against the series' first point, positive when faster).
	y      string
	points []point
	// diskRate, if set, is the emulated disks' rate this sweep needs
	// (pario up --disk-rate), instead of --disk-rate.
	diskRate string
}

// point is one MFG run and the serial run it is measured against.
type point struct {
	series string
	x      float64
	serial []string // pario mcmc arguments of the baseline, without --io and -o
	mfg    []string // pario mcmc arguments of the MFG run, without --io and -o
}

// result is one measured point.
type result struct {
	series    string
	x         float64
	serial    float64
	parallel  float64
	speedup   float64
	deltaPerf float64
	ioShare   string
}

// runner runs `pario mcmc` with args and returns the median time and the
// report; tests replace it.
type runner func(ctx context.Context, args []string) (float64, string, error)

// mcmcArgs builds the arguments every point shares.
func mcmcArgs(runs, chains, np, taxa int, gens int64, nodes int, extra ...string) []string {
	a := []string{"mcmc", "--runs", strconv.Itoa(runs), "--chains", strconv.Itoa(chains), "--np", strconv.Itoa(np),
		"--taxa", strconv.Itoa(taxa), "--gens", strconv.FormatInt(gens, 10)}
	if nodes > 0 {
		a = append(a, "--nodes", strconv.Itoa(nodes))
	}
	return append(a, extra...)
}

// measure runs every point of s, the serial baselines once each.
func (s sweep) measure(ctx context.Context, dir string, run runner) ([]result, error) {
	serialOf := map[string]float64{}
	first := map[string]float64{}
	var rows []result
	for i, p := range s.points {
		key := strings.Join(p.serial, " ")
		base, ok := serialOf[key]
		if !ok {
			t, _, err := run(ctx, append(clone(p.serial), "--io", "serial", "-o", filepath.Join(dir, fmt.Sprintf("serial%d", i))))
			if err != nil {
				return nil, err
			}
			base, serialOf[key] = t, t
		}
		target := fmt.Sprintf("pario:/%s-%d.mfg", s.name, i)
		t, out, err := run(ctx, append(clone(p.mfg), "--io", "mfg", "-o", target,
			"--baseline", strconv.FormatFloat(base, 'f', -1, 64)))
		if err != nil {
			return nil, err
		}
		sp, err := mfg.Speedup(base, t)
		if err != nil {
			return nil, fmt.Errorf("%s point %d: %w", s.name, i, err)
		}
		ref, ok := first[p.series]
		if !ok {
			ref, first[p.series] = t, t
		}
		dp, err := mfg.DeltaPerf(ref, t)
		if err != nil {
			return nil, fmt.Errorf("%s point %d: %w", s.name, i, err)
		}
		r := result{series: p.series, x: p.x, serial: base, parallel: t, speedup: sp, deltaPerf: dp, ioShare: reportIOShare(out)}
		rows = append(rows, r)
		slog.Info("measured", "exp", s.name, "series", r.series, "x", r.x, "serial_s", r.serial, "mfg_s", r.parallel, "speedup", r.speedup, "delta_perf", r.deltaPerf)
	}
	return rows, nil
}

func clone(a []string) []string { return append([]string(nil), a...) }

var sweepHeader = []string{"series", "x", "serial_s", "mfg_s", "speedup", "delta_perf_pct", "mfg_io_share_pct"}

func writeSweepCSV(path string, rows []result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(sweepHeader)
	ff := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, r := range rows {
		_ = w.Write([]string{r.series, strconv.FormatFloat(r.x, 'f', -1, 64), ff(r.serial), ff(r.parallel), ff(r.speedup), ff(r.deltaPerf), r.ioShare})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func readSweepCSV(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var rows []result
	for i, r := range recs {
		if i == 0 {
			continue
		}
		if len(r) != len(sweepHeader) {
			return nil, fmt.Errorf("%s line %d: %d fields, want %d", path, i+1, len(r), len(sweepHeader))
		}
		x := result{series: r[0], ioShare: r[6]}
		var errs [5]error
		x.x, errs[0] = strconv.ParseFloat(r[1], 64)
		x.serial, errs[1] = strconv.ParseFloat(r[2], 64)
		x.parallel, errs[2] = strconv.ParseFloat(r[3], 64)
		x.speedup, errs[3] = strconv.ParseFloat(r[4], 64)
		x.deltaPerf, errs[4] = strconv.ParseFloat(r[5], 64)
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		rows = append(rows, x)
	}
	return rows, nil
}

func (s sweep) plot(path string, rows []result) error {
	p := plot.New()
	p.Title.Text = s.title
	p.X.Label.Text = s.xLabel
	p.Y.Label.Text = "speedup over serial I/O (eq. 7.1)"
	if s.y == "delta_perf" {
		p.Y.Label.Text = "Delta_perf against the series' first point, % (eq. 7.3)"
	}
	if s.logX {
		p.X.Scale = plot.LogScale{}
	}
	// A tick at every x measured: the sweeps have a handful, and log
	// ticks would label only the powers of ten.
	var ticks []plot.Tick
	for _, r := range rows {
		if !slicesContainsX(ticks, r.x) {
			ticks = append(ticks, plot.Tick{Value: r.x, Label: strconv.FormatFloat(r.x, 'g', -1, 64)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if s.y == "speedup" {
		p.Y.Min = 0
	}
	var names []string
	for _, r := range rows {
		if !contains(names, r.series) {
			names = append(names, r.series)
		}
	}
	var args []any
	for _, n := range names {
		var xy plotter.XYs
		for _, r := range rows {
			if r.series == n {
				y := r.speedup
				if s.y == "delta_perf" {
					y = r.deltaPerf
				}
				xy = append(xy, plotter.XY{X: r.x, Y: y})
			}
		}
		args = append(args, n, xy)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return err
	}
	p.Legend.Top = true
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

func contains(a []string, s string) bool {
	for _, v := range a {
		if v == s {
			return true
		}
	}
	return false
}

// sweeps are the experiments by name (--exp).
var sweeps = map[string]func() sweep{
	"np":     npSweep,
	"strip":  stripSweep,
	"lambda": lambdaSweep,
	"iter":   iterSweep,
	"cmp128": cmp128Sweep,
}

// runSweep measures s on the cluster of cf and writes its CSV and plot.
func runSweep(ctx context.Context, s sweep, out, dir string, run runner) error {
	rows, err := s.measure(ctx, dir, run)
	if err != nil {
		return err
	}
	if err := writeSweepCSV(filepath.Join(out, "mfg-"+s.name+".csv"), rows); err != nil {
		return err
	}
	if err := s.plot(filepath.Join(out, "mfg-"+s.name+".png"), rows); err != nil {
		return err
	}
	if s.name == "np" {
		reportSaturation(rows)
	}
	return nil
}

// reportSaturation logs the process saturation number of every series.
func reportSaturation(rows []result) {
	curves := map[string][]mfg.ScalePoint{}
	var names []string
	for _, r := range rows {
		if _, ok := curves[r.series]; !ok {
			names = append(names, r.series)
		}
		curves[r.series] = append(curves[r.series], mfg.ScalePoint{Procs: int(r.x), Speedup: r.speedup})
	}
	for _, n := range names {
		sat, err := mfg.SaturationNumber(curves[n])
		slog.Info("process saturation number", "series", n, "np", sat.Procs, "speedup", sat.Speedup, "err", err)
	}
}

func slicesContainsX(ticks []plot.Tick, x float64) bool {
	for _, t := range ticks {
		if t.Value == x {
			return true
		}
	}
	return false
}
