package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchSweepMistakes: a sweep's mistakes are usage errors (exit 2),
// found before any point runs and naming what is wrong: a value only one
// point has wrong, a combination bench refuses, two parameters setting
// one flag, a grid of days, an --out that cannot be a directory. Before,
// each bad point ran (and failed) in its turn after the points before it,
// the duplicate plotted a parameter that never varied, the grid started
// 10000 runs, and --out said only "mkdir afile: not a directory" (exit 1).
func TestBenchSweepMistakes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var hundred []string
	for i := range 100 {
		hundred = append(hundred, strings.Repeat("1", 1+i%3)+"k")
	}
	dummy := []string{"--", "-a", "DUMMY", "-o", "/dev/null", "-b", "1m", "-N", "1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"--vary", "t=64k,256k,6q"}, dummy...), `bench sweep: the point -t 6q: invalid argument "6q" for "-t, --transfer-size" flag`},
		{append([]string{"--vary", "t=64k,3m"}, dummy...), "bench sweep: the point -t 3m: block size must not be smaller than transfer size"},
		{[]string{"--vary", "t=64k,3m", "--", "-N", "2", "-b", "4m"}, "bench sweep: the point -t 3m: block size must be a multiple of transfer size"},
		{append([]string{"--vary", "t=64k", "--vary", "transfer-size=128k"}, dummy...), "--vary transfer-size: t is varied already (both set -t)"},
		{append([]string{"--vary", "t=" + strings.Join(hundred, ","), "--vary", "s=" + strings.Join(hundred, ",")}, dummy...), "a grid of 100 x 100 = 10000 points, more than 4096"},
		{append([]string{"--vary", "t=64k", "--out", "afile/sub"}, dummy...), "bench sweep: --out afile/sub: mkdir afile: not a directory"},
	} {
		cmd := exec.Command(parioBin, append([]string{"bench", "sweep", "--out", "out"}, tc.args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("pario bench sweep %s: %v, want exit status 2 saying %q:\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "out", "sweep.csv")); err == nil {
			t.Errorf("pario bench sweep %s: wrote sweep.csv", strings.Join(tc.args, " "))
		}
	}
}

// TestBenchSweepInterruptKeepsPoints: a Ctrl-C writes the points measured
// so far, the others marked not run, and exits 130. Before, it exited 1
// with "context canceled" and wrote nothing, whatever the points before
// it had cost.
func TestBenchSweepInterruptKeepsPoints(t *testing.T) {
	dir := t.TempDir()
	// The first point takes one 0.2 s transfer, the second a thousand.
	cmd := exec.Command(parioBin, "bench", "sweep", "--show-runs", "--out", "out", "--vary", "s=1,1000",
		"--", "-a", "DUMMY", "-o", "/dev/null", "-b", "1m", "-t", "1m", "-N", "1", "-w", "--dummy.delay-xfer", "200000")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var said strings.Builder
	firstDone, scanned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			said.WriteString(sc.Text() + "\n")
			if sc.Text() == "== -s 1" {
				close(firstDone)
			}
		}
	}()
	select {
	case <-firstDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the first point never ended")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-scanned // Wait closes the pipe: read it to the end first
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("sweep after Ctrl-C: %v, want exit status 130\n%s", err, said.String())
	}
	if !strings.Contains(said.String(), "interrupted after 1 of 2 points") {
		t.Errorf("stderr %q does not say how far the sweep got", said.String())
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "sweep.csv"))
	if err != nil {
		t.Fatalf("the measured point was not written: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "1,") || !strings.HasSuffix(lines[1], ",") || !strings.HasSuffix(lines[2], "not run: the sweep was interrupted") {
		t.Errorf("sweep.csv:\n%s\nwant the first point measured and the second marked not run", csv)
	}
}
