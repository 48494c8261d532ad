// Command mfgexp runs the thesis' speedup-against-runs experiment (figures
// 7.3-7.5) on the emulated cluster: `pario up` with 8 I/O servers, each a
// node with its own disk rate, and links of a lower rate between nodes;
// `pario mcmc` with 8 ranks (one per node, --nodes 8) in its serial
// version (rank 0 writes the 2 x nruns files onto node 0's emulated disk)
// and its MFG version, for three series:
//
//   - pi_1, varstrip: nruns a multiple of 8, each rank's bytes on its node
//   - Complete-1 (pi_1 with simple_stripe, 64 KiB strips)
//   - Complete+1: one run more, simple_stripe (the last rank writes two)
//
// It writes the times and speedups (eq. 7.1) to CSV and plots speedup
// against nruns (PNG), both into --out.
//
//	go build -o /tmp/pario ./cmd/pario && go run ./tools/mfgexp --pario /tmp/pario --out docs
package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pario/pario/mfg"
)

type options struct {
	pario     string
	out       string
	runs      []int
	chains    int
	taxa      int
	gens      int
	diskRate  string
	netRate   string
	localRate string
	reps      int
	chainWork string
}

// series is one line of the figure.
type series struct {
	name   string
	extra  int    // runs added to nruns (Complete+1: one)
	layout string // --layout of the parallel file
}

var allSeries = []series{
	{"pi_1 varstrip", 0, "varstrip"},
	{"Complete-1 simple_stripe", 0, "simple_stripe"},
	{"Complete+1 simple_stripe", 1, "simple_stripe"},
}

// row is one measurement.
type row struct {
	series   string
	runs     int
	pattern  string
	serial   float64
	parallel float64
	speedup  float64
	ioShare  string
}

func main() {
	var o options
	var runs string
	flag.StringVar(&o.pario, "pario", "pario", "the pario binary")
	flag.StringVar(&o.out, "out", "docs", "directory for mfg-speedup-runs.csv and .png")
	flag.StringVar(&runs, "runs", "8,16,32,64", "nruns values (multiples of 8: pi_1 on 8 ranks)")
	flag.IntVar(&o.chains, "chains", 3, "chains per run (the thesis' figure 7.3: 3)")
	flag.IntVar(&o.taxa, "taxa", 1024, "taxa: about 24 B per taxon per run and generation")
	flag.IntVar(&o.gens, "gens", 20, "generations")
	flag.StringVar(&o.diskRate, "disk-rate", "5MB/s", "each emulated node's disk, decimal (slow, so that the disks and not this machine's 8 rank processes decide)")
	flag.StringVar(&o.netRate, "net-rate", "2MB/s", "a link between nodes, decimal (the thesis' 100 Mbit/s Ethernet was about a third of its disks)")
	flag.StringVar(&o.chainWork, "chain-work", "2ms", "runs experiment: emulated compute per chain per generation (pario mcmc --chain-work); at 1024 taxa 2ms makes the MFG version's time mostly compute, as the thesis' 8/3/8 against 9/3/8 implies (3.86/2.85, about 4/3 chains); 0 for none")
	flag.IntVar(&o.reps, "reps", 3, "runs of every point; the median time counts")
	flag.StringVar(&o.localRate, "net-rate-local", "1GB/s", "a link within a node, decimal")
	replot := flag.String("replot", "", "only draw the plot again from this CSV (into --out)")
	exp := flag.String("exp", "runs", "experiment: runs (speedup against nruns), np (7.6.2), strip (7.7.1), lambda (7.7.2), iter (7.8) or cmp128 (7.9)")
	flag.Parse()
	if *exp != "runs" {
		mk, ok := sweeps[*exp]
		if !ok {
			fail(fmt.Errorf("--exp %q: want runs, np, strip, lambda, iter or cmp128", *exp))
		}
		s := mk()
		if s.diskRate != "" {
			o.diskRate = s.diskRate
		}
		if *replot != "" {
			rows, err := readSweepCSV(*replot)
			if err == nil {
				err = s.plot(filepath.Join(o.out, "mfg-"+s.name+".png"), rows)
			}
			if err != nil {
				fail(err)
			}
			return
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := onCluster(ctx, o, func(dir, cf string) error {
			return runSweep(ctx, s, o.out, dir, func(ctx context.Context, args []string) (float64, string, error) {
				return median(ctx, o, cf, args)
			})
		}); err != nil {
			fail(err)
		}
		return
	}
	if *replot != "" {
		rows, err := readCSV(*replot)
		if err == nil {
			err = savePlot(filepath.Join(o.out, "mfg-speedup-runs.png"), rows)
		}
		if err != nil {
			fail(err)
		}
		return
	}
	var err error
	if o.runs, err = parseInts(runs); err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mfgexp:", err)
	os.Exit(1)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("--runs: %q is not a count of runs >= 1", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// onCluster starts the emulated cluster, calls f with its directory and
// cluster file, and stops it.
func onCluster(ctx context.Context, o options, f func(dir, cf string) error) error {
	dir, err := os.MkdirTemp("", "mfgexp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cf, stopUp, err := up(ctx, o, dir)
	if err != nil {
		return err
	}
	defer stopUp()
	return f(dir, cf)
}

func run(ctx context.Context, o options) error {
	return onCluster(ctx, o, func(dir, cf string) error { return runRuns(ctx, o, dir, cf) })
}

func runRuns(ctx context.Context, o options, dir, cf string) error {
	const procs, nodes = 8, 8
	var rows []row
	serialOf := map[int]float64{}
	for _, n := range o.runs {
		for _, s := range allSeries {
			runs := n + s.extra
			c := mfg.Config{Runs: runs, Chains: o.chains, Procs: procs}
			pat, err := c.Classify(c.Initial())
			if err != nil {
				return fmt.Errorf("%d/%d/%d: %w", runs, o.chains, procs, err)
			}
			common := []string{"mcmc", "--runs", strconv.Itoa(runs), "--chains", strconv.Itoa(o.chains), "--np", strconv.Itoa(procs),
				"--taxa", strconv.Itoa(o.taxa), "--gens", strconv.Itoa(o.gens), "--nodes", strconv.Itoa(nodes), "--chain-work", o.chainWork}
			if _, ok := serialOf[runs]; !ok {
				t, _, err := median(ctx, o, cf, append(common, "--io", "serial", "-o", filepath.Join(dir, fmt.Sprintf("serial%d", runs))))
				if err != nil {
					return err
				}
				serialOf[runs] = t
			}
			target := fmt.Sprintf("pario:/r%d-%s.mfg", runs, strings.Fields(s.name)[0])
			t, out, err := median(ctx, o, cf, append(common, "--io", "mfg", "-o", target, "--layout", s.layout,
				"--baseline", strconv.FormatFloat(serialOf[runs], 'f', -1, 64)))
			if err != nil {
				return err
			}
			sp, err := mfg.Speedup(serialOf[runs], t)
			if err != nil {
				return err
			}
			name := pat.String()
			if c.Pi1() {
				name = "pi_1"
			}
			r := row{series: s.name, runs: runs, pattern: name, serial: serialOf[runs], parallel: t, speedup: sp, ioShare: reportIOShare(out)}
			rows = append(rows, r)
			slog.Info("measured", "series", r.series, "runs", r.runs, "pattern", r.pattern, "serial_s", r.serial, "mfg_s", r.parallel, "speedup", r.speedup)
		}
	}
	if err := writeCSV(filepath.Join(o.out, "mfg-speedup-runs.csv"), rows); err != nil {
		return err
	}
	return savePlot(filepath.Join(o.out, "mfg-speedup-runs.png"), rows)
}

// median runs a pario command o.reps times and returns the median of the
// reported times and the report of that run. An MFG target is removed
// before each run.
func median(ctx context.Context, o options, cf string, args []string) (float64, string, error) {
	type result struct {
		t   float64
		out string
	}
	var rs []result
	for range max(o.reps, 1) {
		for i, a := range args {
			if a == "-o" && strings.HasPrefix(args[i+1], "pario:") {
				_, _ = pario(ctx, o.pario, cf, "rm", strings.TrimPrefix(args[i+1], "pario:"))
			}
		}
		out, err := pario(ctx, o.pario, cf, args...)
		if err != nil {
			return 0, "", err
		}
		t, err := reportTime(out)
		if err != nil {
			return 0, "", err
		}
		rs = append(rs, result{t, out})
	}
	slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.t, b.t) })
	m := rs[len(rs)/2]
	return m.t, m.out, nil
}

// up starts the emulated cluster and returns its cluster file.
func up(ctx context.Context, o options, dir string) (string, func(), error) {
	cmd := exec.CommandContext(ctx, o.pario, "up", "--dir", dir, "--servers", "8",
		"--disk-rate", o.diskRate, "--net-rate", o.netRate, "--net-rate-local", o.localRate)
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("pario up: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	cf := filepath.Join(dir, "cluster")
	for range 400 {
		if _, err := os.Stat(cf); err == nil {
			return cf, stop, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	stop()
	return "", nil, errors.New("pario up did not write its cluster file in 10 s")
}

func pario(ctx context.Context, bin, cf string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cluster", cf}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pario %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

var (
	timeLine  = regexp.MustCompile(`(?m)^time\s+([0-9.]+) s`)
	shareLine = regexp.MustCompile(`I/O share ([0-9.]+)%`)
)

// reportTime is the slowest rank's seconds in a pario mcmc report.
func reportTime(out string) (float64, error) {
	m := timeLine.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no time line in the report:\n%s", out)
	}
	return strconv.ParseFloat(m[1], 64)
}

func reportIOShare(out string) string {
	if m := shareLine.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

func writeCSV(path string, rows []row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"series", "nruns", "pattern", "serial_s", "mfg_s", "speedup", "mfg_io_share_pct"})
	for _, r := range rows {
		_ = w.Write([]string{r.series, strconv.Itoa(r.runs), r.pattern,
			strconv.FormatFloat(r.serial, 'f', 3, 64), strconv.FormatFloat(r.parallel, 'f', 3, 64),
			strconv.FormatFloat(r.speedup, 'f', 3, 64), r.ioShare})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readCSV reads what writeCSV wrote.
func readCSV(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var rows []row
	for i, r := range recs {
		if i == 0 {
			continue
		}
		if len(r) != 7 {
			return nil, fmt.Errorf("%s line %d: %d fields, want 7", path, i+1, len(r))
		}
		var x row
		x.series, x.pattern, x.ioShare = r[0], r[2], r[6]
		var errs [4]error
		x.runs, errs[0] = strconv.Atoi(r[1])
		x.serial, errs[1] = strconv.ParseFloat(r[3], 64)
		x.parallel, errs[2] = strconv.ParseFloat(r[4], 64)
		x.speedup, errs[3] = strconv.ParseFloat(r[5], 64)
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		rows = append(rows, x)
	}
	return rows, nil
}

func savePlot(path string, rows []row) error {
	p := plot.New()
	p.Title.Text = "MFG speedup (eq. 7.1) against nruns, emulated 8-node cluster"
	p.X.Label.Text = "nruns"
	p.Y.Label.Text = "speedup over serial I/O"
	var args []any
	for _, s := range allSeries {
		var xy plotter.XYs
		for _, r := range rows {
			if r.series == s.name {
				xy = append(xy, plotter.XY{X: float64(r.runs), Y: r.speedup})
			}
		}
		args = append(args, s.name, xy)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return err
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min = 0
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}
