package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var calibErrorsRE = regexp.MustCompile(`error1 = -?\d+\.\d+  error2 = \d+\.\d+`)

func TestTuneCalibrateRun(t *testing.T) {
	// A 2x2 grid ((64k,64k), (256k,64k), (256k,256k)) of 8 MiB files on
	// one server, end to end through pario bench; 3 repetitions, the first
	// set aside as warm-up.
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	out := run(t, "", "tune", "calibrate", "--run", "-q", "--strip-sizes", "64k,256k", "--transfer-sizes", "64k,256k",
		"--size", "8m", "--repetitions", "3", "--experiments", "2000", "--keep-results", res, "--plot", dir)
	for _, want := range []string{"calibrate: 3 points from 3 pario bench runs", "fitted: V = ", "gamma = ", "lambda = ", "use: pario tune model --lambda"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !calibErrorsRE.MatchString(out) {
		t.Errorf("no error1/error2 line:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^\s+1\s+256k\s+64k\s+8m\s+2\s`).MatchString(out) {
		t.Errorf("no table row for strip 256k, transfer 64k:\n%s", out)
	}
	for _, f := range []string{"calibration.png", "calibration.svg"} {
		checkFigure(t, filepath.Join(dir, f))
	}
	// The kept results refit to the same parameters.
	files, _ := filepath.Glob(filepath.Join(res, "*.json"))
	if len(files) != 3 {
		t.Fatalf("kept %d results, want 3", len(files))
	}
	again := run(t, "", append([]string{"tune", "calibrate", "--experiments", "2000", "--results"}, files...)...)
	fit := func(s string) string { return regexp.MustCompile(`fitted: .*`).FindString(s) }
	if fit(again) != fit(out) || fit(out) == "" {
		t.Errorf("refit from the kept results: %q, the run: %q", fit(again), fit(out))
	}
}

func TestTuneCalibrateParioBenchJSON(t *testing.T) {
	// A summary written by pario bench itself (on its embedded cluster).
	dir := t.TempDir()
	js := filepath.Join(dir, "one.json")
	run(t, "", "bench", "--servers", "1", "-N", "1", "-b", "4m", "-t", "64k", "--pario.strip-size", "256k",
		"-w", "-i", "2", "-O", "summaryFormat=JSON", "-O", "summaryFile="+js)
	csv := filepath.Join(dir, "more.csv")
	os.WriteFile(csv, []byte("strip,transfer,servers,size,seconds\n1m,1m,1,4m,0.01\n1m,1m,1,4m,0.012\n1m,256k,1,4m,0.02\n"), 0o644)
	out := run(t, "", "tune", "calibrate", "--experiments", "1000", "--results", js, csv)
	// The first repetition of the bench run and of the CSV's 1m,1m point
	// are set aside as warm-up.
	if !strings.Contains(out, "calibrate: 3 points from 2 results file(s)") || !regexp.MustCompile(`(?m)^\s+1\s+256k\s+64k\s+4m\s+1\s`).MatchString(out) ||
		!strings.Contains(out, "warm-up: the first repetition of each run set aside (2, ") {
		t.Errorf("want the bench point (256k strip, 64k transfers, 4m, 1 rep after the warm-up) and 2 CSV points:\n%s", out)
	}
	if !strings.Contains(out, "95% intervals (bootstrap over repetitions, 100 rounds, seed 1): V ") {
		t.Errorf("no confidence intervals:\n%s", out)
	}
	kept := run(t, "", "tune", "calibrate", "--experiments", "1000", "--keep-warmup", "--bootstrap", "0", "--results", js, csv)
	if !regexp.MustCompile(`(?m)^\s+1\s+256k\s+64k\s+4m\s+2\s`).MatchString(kept) || strings.Contains(kept, "warm-up") || strings.Contains(kept, "95% intervals") {
		t.Errorf("--keep-warmup --bootstrap 0: want 2 reps, no warm-up line, no intervals:\n%s", kept)
	}
	if !calibErrorsRE.MatchString(out) {
		t.Errorf("no error1/error2 line:\n%s", out)
	}
}

// TestTuneCalibrateBadInput checks a few bad invocations end to end; the
// grid checks are tested in tune/calib (TestParseGrid, TestParseDefaults).
func TestTuneCalibrateBadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("{\"tests\": [\n oops\n"), 0o644)
	unreadable := filepath.Join(dir, "noperm.json")
	os.WriteFile(unreadable, []byte("{}"), 0o000)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--results", filepath.Join(dir, "nope.json")}, 1, "calibrate: " + filepath.Join(dir, "nope.json") + ": open"},
		{[]string{"--results", garbage}, 1, "calibrate: " + garbage + ": line 2: not valid JSON"},
		{[]string{}, 2, "give either --run or --results"},
		{[]string{"--run", "--results", garbage}, 2, "give either --run or --results"},
		{[]string{"--run", "--strip-sizes", "64k", "--transfer-sizes", "1m"}, 2, "no grid point with transfer size <= strip size"},
		{[]string{"--run", "--size", "big"}, 2, "--size"},
		{[]string{"--results", garbage, "--bootstrap", "1"}, 2, "--bootstrap 1: want 0 (none) or at least 2 rounds"},
	}
	if os.Geteuid() != 0 { // root reads anything
		cases = append(cases, struct {
			args []string
			code int
			want string
		}{[]string{"--results", unreadable}, 1, "calibrate: " + unreadable + ": open"})
	}
	for _, c := range cases {
		out, err := runErr("", append([]string{"tune", "calibrate"}, c.args...)...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code {
			t.Errorf("calibrate %v: %v, want exit status %d\n%s", c.args, err, c.code, out)
			continue
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("calibrate %v: %q, want %q", c.args, out, c.want)
		}
	}
}
