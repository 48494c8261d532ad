package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tune tests run the binary (parioBin, built by TestMain) like the
// other CLI tests; only TestTuneApply needs a cluster.

func checkFigure(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 5000 {
		t.Errorf("%s: only %d bytes", path, len(b))
	}
	switch filepath.Ext(path) {
	case ".png":
		if !strings.HasPrefix(string(b), "\x89PNG\r\n\x1a\n") {
			t.Errorf("%s is not a PNG", path)
		}
	case ".svg":
		if !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "</svg>") {
			t.Errorf("%s is not an SVG", path)
		}
	}
}

func TestTuneModel(t *testing.T) {
	// Table III's 10 GB case by the paper's printed formula...
	out := run(t, "", "tune", "model", "--lambda", "0.1", "--gamma", "0.125", "--v", "0.0625", "--size", "10", "--paper")
	if !strings.Contains(out, "N=4") || !strings.Contains(out, "T=117.3120") {
		t.Errorf("tune model --paper, 10 GB: want N=4, T=117.3120:\n%s", out)
	}
	// ...and by the exact one, with the figures.
	dir := filepath.Join(t.TempDir(), "figs")
	out = run(t, "", "tune", "model", "--size", "10", "--plot", dir)
	if !strings.Contains(out, "optimum: N=5  T=114.4081") || !regexp.MustCompile(`(?m)^\s*5 \*\s+114\.4081`).MatchString(out) {
		t.Errorf("tune model, 10 GB: want the exact optimum N=5, T=114.4081 marked in the table:\n%s", out)
	}
	for _, f := range []string{"fig3.png", "fig3.svg", "fig4.png", "fig4.svg"} {
		checkFigure(t, filepath.Join(dir, f))
	}
	// Table III's largest case needs --max-n above the default.
	if out := run(t, "", "tune", "model", "--size", "1000", "--paper", "--max-n", "500"); !strings.Contains(out, "N=399  T=302.6972") {
		t.Errorf("tune model --paper, 1000 GB: want N=399, T=302.6972:\n%s", out)
	}
}

func TestTuneSimulate(t *testing.T) {
	out := run(t, "", "tune", "simulate", "--size", "10", "--n", "4", "--seed", "1")
	m := regexp.MustCompile(`mean E\(T\):\s+([0-9.]+) s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("tune simulate: no mean:\n%s", out)
	}
	mean, _ := strconv.ParseFloat(m[1], 64)
	// The exact model says 114.4107 s; the 99% interval is within 2%.
	if mean < 114.4107*0.98 || mean > 114.4107*1.02 {
		t.Errorf("tune simulate: mean %v, want within 2%% of 114.4107", mean)
	}
	for _, want := range []string{"99% CI:", "experiments:", "required", "exact model:   114.4107 s, relative error", "precision goal met"} {
		if !strings.Contains(out, want) {
			t.Errorf("tune simulate output lacks %q:\n%s", want, out)
		}
	}
	// The same seed gives the same result.
	if again := run(t, "", "tune", "simulate", "--size", "10", "--n", "4", "--seed", "1"); !strings.Contains(again, m[0]) {
		t.Errorf("tune simulate is not reproducible: %q then\n%s", m[0], again)
	}
}

var totalsRE = regexp.MustCompile(`database .*: (\d+) hits, (\d+) misses`)

func TestTuneSearch(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "tune.db")
	args := []string{"tune", "search", "--method", "all", "--size", "10g", "--objective", "model", "--db", db}
	out := run(t, "", append(args, "--plot", filepath.Join(dir, "figs"))...)
	for _, m := range []string{"neldermead", "annealing", "genetic", "swarm", "orthogonal", "random", "lhs"} {
		if !regexp.MustCompile(`(?m)^\s*` + m + `\s+\d+\s+\d+ [KMG]iB\s+\d+ [KMG]iB\s+[0-9.]+\s+[0-9.]+\s+1944\s`).MatchString(out) {
			t.Errorf("tune search: no result row with 1944 evaluations for %s:\n%s", m, out)
		}
	}
	// On the model objective every heuristic finds the optimum of
	// QUALITY.md's 10 GB case: 5 targets, 128 MiB strips and transfers.
	for _, want := range []string{
		"recommendation: stripe count 5, strip size 128 MiB, transfer size 128 MiB",
		"lfs setstripe -c 5 -S 128M DIR",
		"pario layout set DIR simple_stripe:strip_size=128m,num_datafiles=5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tune search output lacks %q:\n%s", want, out)
		}
	}
	first := totalsRE.FindStringSubmatch(out)
	if first == nil || first[2] == "0" {
		t.Fatalf("tune search: first run should evaluate new points:\n%s", out)
	}
	for _, f := range []string{"search-trace.png", "search-trace.svg"} {
		checkFigure(t, filepath.Join(dir, "figs", f))
	}
	// The same search again: everything comes from the database.
	out = run(t, "", args...)
	again := totalsRE.FindStringSubmatch(out)
	if again == nil || again[2] != "0" {
		t.Fatalf("repeated tune search: want 0 misses:\n%s", out)
	}
	h1, _ := strconv.Atoi(first[1])
	m1, _ := strconv.Atoi(first[2])
	if h2, _ := strconv.Atoi(again[1]); h2 != h1+m1 {
		t.Errorf("repeated tune search: %d hits, want %d (the first run's hits and misses)", h2, h1+m1)
	}
	if !strings.Contains(out, "pario layout set DIR simple_stripe:strip_size=128m,num_datafiles=5") {
		t.Errorf("repeated tune search recommends something else:\n%s", out)
	}
}

func TestTuneSearchSimulated(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	out := run(t, "", "tune", "search", "--objective", "sim", "--method", "genetic,lhs", "--budget", "300",
		"--stripe-count", "1:32", "--experiments", "1000", "--db", db)
	if !strings.Contains(out, "objective sim") || !regexp.MustCompile(`(?m)^\s*genetic\s+\d+\s.*\s300\s+\d+\s+\d+\s*$`).MatchString(out) {
		t.Errorf("tune search --objective sim:\n%s", out)
	}
	if !strings.Contains(out, "lfs setstripe -c ") {
		t.Errorf("tune search --objective sim gives no recommendation:\n%s", out)
	}
}

func TestTuneApply(t *testing.T) {
	cf := up(t)
	run(t, cf, "mkdir", "/runs")
	db := filepath.Join(t.TempDir(), "tune.db")
	out := run(t, cf, "tune", "search", "--size", "10g", "--stripe-count", "1:4", "--method", "genetic", "--budget", "100", "--db", db, "--apply", "/runs")
	m := regexp.MustCompile(`lfs setstripe -c (\d+) -S (\d+)M /runs`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "pario layout set /runs simple_stripe:strip_size="+m[2]+"m,num_datafiles="+m[1]) {
		t.Fatalf("tune search --apply /runs: no recommendation for /runs:\n%s", out)
	}
	if m[1] == "1" {
		t.Errorf("tune search --size 10g: a single stripe recommended:\n%s", out)
	}
	mib, _ := strconv.Atoi(m[2])
	want := fmt.Sprintf("simple_stripe:strip_size=%d,num_datafiles=%s", mib<<20, m[1])
	if !strings.Contains(out, "applied: /runs: "+want) {
		t.Errorf("tune search --apply: want %q applied:\n%s", want, out)
	}
	if got := run(t, cf, "layout", "get", "/runs"); !strings.Contains(got, want) {
		t.Errorf("layout get /runs after --apply: %s, want %s", got, want)
	}
	// Applying to a directory that does not exist fails before the search.
	if out, err := runErr(cf, "tune", "search", "--size", "1g", "--stripe-count", "1:4", "--method", "genetic", "--budget", "100", "--db", db, "--apply", "/nope"); err == nil || strings.Contains(out, "recommendation") {
		t.Errorf("tune search --apply /nope: %v, want an error before any search:\n%s", err, out)
	}
	// Without --stripe-count the search keeps to the cluster's 4 servers
	// (10 GiB would want 5 targets).
	out = run(t, cf, "tune", "search", "--size", "10g", "--method", "genetic", "--budget", "100", "--db", db, "--apply", "/runs")
	if !strings.Contains(out, "stripe count limited to 4 (of 160 asked): the cluster has 4 I/O servers") ||
		!regexp.MustCompile(`applied: /runs: simple_stripe:strip_size=\d+,num_datafiles=[1-4]\n`).MatchString(out) {
		t.Errorf("tune search --apply on 4 servers, default stripe counts:\n%s", out)
	}
}

// TestTuneBadInput checks exit statuses and messages end to end, a few
// per command; the checks themselves are tested in process: tune model's
// in tune/model (TestFindOptimumErrors), tune search's in tune/search
// (TestParseRequest, TestRecommendErrors).
func TestTuneBadInput(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	fifo := filepath.Join(t.TempDir(), "fifo.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args  []string
		wants string
		code  int
	}{
		// Values out of range are bad usage (2), as every command's, and
		// name the flag; failures at run time are 1.
		{[]string{"tune", "model", "--lambda", "0.2", "--gamma", "0.125"}, "rho = lambda/gamma = 1.6 >= 1", 2},
		{[]string{"tune", "model", "--size", "ten"}, "invalid argument", 2},
		{[]string{"tune", "model", "--max-n", "0"}, "--max-n: model: maxN = 0 is not positive", 2},
		{[]string{"tune", "model", "--size", "1e308"}, "--size: model: M = 1e+308 is too large", 2},
		{[]string{"tune", "simulate", "--lambda", "1", "--gamma", "0.5"}, "unstable", 2},
		{[]string{"tune", "simulate", "--n", "-1"}, "--n: sim: Stripes = -1 is not positive", 2},
		{[]string{"tune", "simulate", "--experiments", "-5"}, "--experiments: sim: Experiments = -5 is negative", 2},
		{[]string{"tune", "simulate", "--groups", "2", "--targets", "1", "--n", "5"}, "--targets: sim: Targets = 1 is less than Stripes = 5", 2},
		{[]string{"tune", "search", "--db", db, "--stripe-count", "160:1"}, "inverted bounds", 2},
		{[]string{"tune", "search", "--db", db, "--method", "hillclimb"}, "known: neldermead, annealing, genetic, swarm, orthogonal, random, lhs", 2},
		{[]string{"tune", "search", "--db", db, "--lambda", "0.3"}, "unstable", 2},
		{[]string{"tune", "search", "--db", db, "--v", "-1"}, "--v: model: V = -1 is not positive", 2},
		{[]string{"tune", "search", "--db", db, "--objective", "sim", "--experiments", "-1"}, "--experiments -1: want a count of simulated experiments", 2},
		{[]string{"tune", "search", "--db", db, "--objective", "oracle"}, "want model, sim, bench or farm", 2},
		{[]string{"tune", "groups", "--db", db, "--lambda", "5"}, "unstable", 2},
		{[]string{"tune", "search", "--db", t.TempDir()}, "results", 1},
		// --plot under a file fails before the work, naming the flag.
		{[]string{"tune", "model", "--plot", "/dev/null/figs"}, "--plot: mkdir /dev/null: not a directory", 1},
		{[]string{"tune", "search", "--db", db, "--plot", "/dev/null/figs"}, "--plot: mkdir /dev/null: not a directory", 1},
		{[]string{"tune", "search", "--db", fifo}, "results: open " + fifo + ": is a named pipe, not a regular file", 1},
		{[]string{"tune", "groups", "--db", fifo}, "is a named pipe, not a regular file", 1},
		{[]string{"tune", "estimate", "../../tune/estimate/testdata/nosuch.csv"}, "no such file", 1},
	}
	for _, tc := range cases {
		out, err := runErr("", tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("pario %v: err %v, want an exit status", tc.args, err)
			continue
		}
		if ee.ExitCode() != tc.code || !strings.Contains(out, tc.wants) {
			t.Errorf("pario %v: exit %d, output %q; want exit %d mentioning %q", tc.args, ee.ExitCode(), out, tc.code, tc.wants)
		}
	}
}

func TestTuneHelp(t *testing.T) {
	for _, c := range [][]string{{"tune"}, {"tune", "model"}, {"tune", "simulate"}, {"tune", "search"}} {
		out, err := runErr("", append(c, "--help")...)
		if err != nil || !strings.Contains(out, "Usage:") || !strings.Contains(out, "pario tune") {
			t.Errorf("pario %v --help: %v\n%s", c, err, out)
		}
	}
	if out, _ := runErr("", "tune", "model", "--help"); !strings.Contains(out, "TABLES.md") || !strings.Contains(out, "--paper") {
		t.Errorf("tune model --help does not explain the two formulas:\n%s", out)
	}
}

func TestTuneEstimate(t *testing.T) {
	// The paper's figure 2 from a CSV file...
	out := run(t, "", "tune", "estimate", "../../tune/estimate/testdata/figure2.csv")
	if !strings.Contains(out, "lambda = 0.05/s") || !strings.Contains(out, "gamma  = 0.375/s") || !strings.Contains(out, "(csv)") {
		t.Errorf("tune estimate figure2.csv:\n%s", out)
	}
	// ...and Slurm's sacct on stdin.
	sacct, err := os.Open("../../tune/estimate/testdata/sacct.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer sacct.Close()
	cmd := exec.Command(parioBin, "tune", "estimate", "-")
	cmd.Stdin = sacct
	b, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "- (sacct), 2 line(s) skipped") || !strings.Contains(string(b), "gamma  = 0.230769/s") {
		t.Errorf("sacct | tune estimate -: %v\n%s", err, b)
	}
	cases := []struct {
		args  []string
		wants string
		code  int
	}{
		{[]string{"tune", "estimate"}, "no log given", 2},
		{[]string{"tune", "estimate", "no-such.csv"}, "no-such.csv", 1},
		// Bad flags are usage errors, found before the log is read.
		{[]string{"tune", "estimate", "--format", "json", "../../tune/estimate/testdata/figure2.csv"}, `--format: format "json"`, 2},
		{[]string{"tune", "estimate", "--simultaneous", "-1", "no-such.csv"}, "--simultaneous: window -1", 2},
	}
	for _, tc := range cases {
		out, err := runErr("", tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(out, tc.wants) {
			t.Errorf("pario %v: err %v, output %q; want exit %d mentioning %q", tc.args, err, out, tc.code, tc.wants)
		}
	}
}

func TestTuneGroups(t *testing.T) {
	out := run(t, "", "tune", "simulate", "--size", "100", "--groups", "4", "--n", "5", "--targets", "40", "--experiments", "500")
	if !strings.Contains(out, "4 files of 25 GB (100 GB in all), each on 5 of 40 targets") || !strings.Contains(out, "the simulator is the model") {
		t.Errorf("tune simulate --groups:\n%s", out)
	}
	db := filepath.Join(t.TempDir(), "tune.db")
	out = run(t, "", "tune", "groups", "--db", db, "--size", "10", "--targets", "12", "--max-groups", "3", "--experiments", "200")
	if !strings.Contains(out, "m 1..3 x n 1..12 (36 points)") || !strings.Contains(out, "recommendation: ") || !strings.Contains(out, "0 hits, 36 misses") {
		t.Errorf("tune groups:\n%s", out)
	}
	out = run(t, "", "tune", "search", "--db", db, "--size", "10g", "--stripe-count", "1:8", "--files", "1:4", "--procs-per-file", "1:16", "--method", "random", "--budget", "50")
	if !strings.Contains(out, "files 1..4, processes per file 1..16 on 8 targets") || !regexp.MustCompile(`write \d+ file\(s\) of`).MatchString(out) {
		t.Errorf("tune search --files --procs-per-file:\n%s", out)
	}
	cases := []struct {
		args  []string
		wants string
	}{
		{[]string{"tune", "simulate", "--groups", "4"}, "--groups 4: give --targets"},
		{[]string{"tune", "simulate", "--groups", "-1"}, "must not be negative"},
		{[]string{"tune", "groups", "--db", db, "--targets", "0"}, "--targets 0"},
		{[]string{"tune", "search", "--db", db, "--files", "1:4", "--objective", "sim"}, "only --objective model prices them"},
	}
	for _, tc := range cases {
		out, err := runErr("", tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, tc.wants) {
			t.Errorf("pario %v: err %v, output %q; want exit 2 mentioning %q", tc.args, err, out, tc.wants)
		}
	}
}

// TestTuneSearchBench: --objective bench measures each point with a real
// pario bench run on an embedded cluster and keeps it in the database: the
// same search again runs nothing.
func TestTuneSearchBench(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tune.db")
	args := []string{"tune", "search", "--db", db, "--objective", "bench", "--size", "4m", "--stripe-count", "1:2", "--strip-size", "1m",
		"--transfer-size", "1m", "--method", "exhaustive", "--budget", "2", "--bench-servers", "2", "--bench-repetitions", "2"}
	out := run(t, "", args...)
	if !strings.Contains(out, "objective: measured: the mean write time of pario bench on an embedded cluster of 2 I/O servers") ||
		!strings.Contains(out, "0 hits, 2 misses") || !strings.Contains(out, " s measured, ") {
		t.Errorf("tune search --objective bench:\n%s", out)
	}
	if out := run(t, "", args...); !strings.Contains(out, "2 hits, 0 misses") {
		t.Errorf("repeated: want every point from the database:\n%s", out)
	}
	if out, err := runErr("", "tune", "search", "--db", db, "--objective", "bench"); err == nil || !strings.Contains(out, "give --budget as a count") {
		t.Errorf("bench with a fraction budget: %v\n%s", err, out)
	}
}

// TestTuneReadsFIFOWithoutHanging: `pario tune estimate FIFO` and `pario
// tune calibrate --results FIFO` hung forever in open when nothing wrote
// the FIFO; both now fail at once, naming it.
func TestTuneReadsFIFOWithoutHanging(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "log.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	for _, args := range [][]string{{"tune", "estimate", fifo}, {"tune", "calibrate", "--results", fifo}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, parioBin, args...)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		var ee *exec.ExitError
		if timedOut {
			t.Errorf("pario %v: still running after 20 s", args)
		} else if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), fifo) {
			t.Errorf("pario %v: %v, %q; want exit 1 naming the FIFO", args, err, out)
		}
	}
}

// TestTuneHelpExamplesUseRealFlags: tune search --help's farm example
// passed --farm-n, which does not exist ("unknown flag: --farm-n" when
// pasted); the flag is --farm-ranks. Every --flag of every example line
// of the tune commands' help must be one of the command's flags.
func TestTuneHelpExamplesUseRealFlags(t *testing.T) {
	root := newRootCommand()
	for _, sub := range newTuneCommand().Commands() {
		for _, line := range strings.Split(sub.Long, "\n") {
			line = strings.TrimSpace(line)
			for _, part := range strings.Split(line, "&&") {
				part = strings.TrimSpace(part)
				if !strings.HasPrefix(part, "pario tune "+sub.Name()) {
					continue
				}
				part, _, _ = strings.Cut(part, " -- ")
				part, _, _ = strings.Cut(part, "#")
				for _, tok := range strings.Fields(part) {
					if !strings.HasPrefix(tok, "--") {
						continue
					}
					name, _, _ := strings.Cut(strings.TrimPrefix(tok, "--"), "=")
					if sub.Flags().Lookup(name) == nil && root.PersistentFlags().Lookup(name) == nil {
						t.Errorf("pario tune %s --help: example %q uses --%s, not a flag of the command", sub.Name(), part, name)
					}
				}
			}
		}
	}
}
