package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
