// Command hdf5plot draws a CSV of scripts/hdf5-thesis.sh as a bar chart:
// for each configuration the median MiB/s of its repetitions, one bar per
// operation (write, read). It also prints the medians as a table, which
// docs/hdf5.md quotes.
//
//	hdf5plot -in docs/hdf5-patterns.csv -out docs/hdf5-patterns.png
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// run is one CSV row: one repetition of one configuration's operation.
type run struct {
	config, op string
	mibps      float64
}

func main() {
	in := flag.String("in", "", "CSV written by scripts/hdf5-thesis.sh")
	out := flag.String("out", "", "PNG to write")
	flag.Parse()
	if err := do(*in, *out); err != nil {
		slog.Error("hdf5plot", "err", err)
		os.Exit(1)
	}
}

func do(in, out string) error {
	runs, err := load(in)
	if err != nil {
		return err
	}
	configs, med := medians(runs)
	fmt.Printf("%-28s %10s %10s %s\n", "config", "write", "read", "(median MiB/s, runs)")
	for _, c := range configs {
		fmt.Printf("%-28s %10s %10s\n", c, cell(med, c, "write"), cell(med, c, "read"))
	}
	if out == "" {
		return nil
	}
	return save(out, in, configs, med)
}

type key struct{ config, op string }

type stat struct {
	median float64
	n      int
}

func cell(med map[key]stat, c, op string) string {
	s, ok := med[key{c, op}]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f (%d)", s.median, s.n)
}

func load(path string) ([]run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var runs []run
	for i, r := range recs {
		if i == 0 {
			continue
		}
		if len(r) < 6 {
			return nil, fmt.Errorf("%s line %d: %d fields, want at least 6", path, i+1, len(r))
		}
		v, err := strconv.ParseFloat(r[5], 64)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: MiBps: %w", path, i+1, err)
		}
		runs = append(runs, run{config: r[1], op: r[2], mibps: v})
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no runs, only a header (did every run of the stage fail?)", path)
	}
	return runs, nil
}

// medians returns the configurations in first-seen order and each one's
// median per operation.
func medians(runs []run) ([]string, map[key]stat) {
	var order []string
	vals := map[key][]float64{}
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.config] {
			seen[r.config] = true
			order = append(order, r.config)
		}
		k := key{r.config, r.op}
		vals[k] = append(vals[k], r.mibps)
	}
	med := map[key]stat{}
	for k, v := range vals {
		sort.Float64s(v)
		m := v[len(v)/2]
		if len(v)%2 == 0 {
			m = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		med[k] = stat{m, len(v)}
	}
	return order, med
}

func save(out, in string, configs []string, med map[key]stat) error {
	p := plot.New()
	p.Title.Text = in + ": median MiB/s, emulated 10-server pario cluster via the mount"
	p.Y.Label.Text = "MiB/s"
	w := vg.Points(7)
	for i, op := range []string{"write", "read"} {
		vs := make(plotter.Values, len(configs))
		have := false
		for j, c := range configs {
			if s, ok := med[key{c, op}]; ok {
				vs[j], have = s.median, true
			}
		}
		if !have {
			continue
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return fmt.Errorf("%s bars: %w", op, err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(2*i-1) / 2
		p.Add(b)
		p.Legend.Add(op, b)
	}
	p.Legend.Top = true
	p.NominalX(configs...)
	p.X.Tick.Label.Rotation = 0.9
	p.X.Tick.Label.XAlign = -1
	p.X.Tick.Label.YAlign = -0.5
	width := vg.Length(len(configs))*0.35*vg.Inch + 2*vg.Inch
	if width < 6*vg.Inch {
		width = 6 * vg.Inch
	}
	return p.Save(width, 5*vg.Inch, out)
}
