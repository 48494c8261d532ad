package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// farmUsage runs `pario farm args` in a directory holding in.txt, io.ann
// (Lines in, ordered out) and the extra files, and checks that it is
// refused as a usage error (exit 2) saying each of want, before any rank
// starts: no rank's line, and the command never ran.
func farmUsage(t *testing.T, files map[string]string, args []string, want ...string) {
	t.Helper()
	dir := t.TempDir()
	files = mergeFiles(map[string]string{"in.txt": "a\nb\nc\nd\n", "io.ann": "in NEWSPAPER ro wo b farm=Lines\nout NEWSPAPER rc wo b farm=0\n"}, files)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args = append(append([]string{"farm"}, args...), "--", "sh", "-c", "touch ran; cat")
	msg, err := farmCLI(t, dir, "", args...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("pario %s: %v, want exit status 2\n%.2000s", strings.Join(args, " "), err, msg)
		return
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("pario %s: the error does not say %q:\n%s", strings.Join(args, " "), w, msg)
		}
	}
	if strings.Contains(msg, "[rank ") || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
		t.Errorf("pario %s: want one line from the launcher, before any rank started:\n%s", strings.Join(args, " "), msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Errorf("pario %s: the command ran", strings.Join(args, " "))
	}
}

func mergeFiles(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// TestFarmBadSegmentationFunction: an input line naming a function the
// registry lacks is a usage error naming the file, the line and the
// functions there are. Before, it failed with exit 1 once the ranks had
// met, naming no line.
func TestFarmBadSegmentationFunction(t *testing.T) {
	bad := map[string]string{"bad.ann": "# farm\nin NEWSPAPER ro wo b farm=Nope\nout NEWSPAPER rc wo b farm=0\n"}
	farmUsage(t, bad, []string{"-N", "2", "--in", "in.txt", "--out", "o.txt", "--annotations", "bad.ann"},
		`bad.ann:2:`, `no segmentation function "Nope"`, "FASTA, LenPrefix32, Lines")
}

// TestFarmLaunchLimits: a rank count this host cannot start is a usage
// error naming the limit, before any rank starts, for each command that
// launches ranks. Before, farm -N 9223372036854775807 said only "rank:
// launch: 9223372036854775807 ranks" (exit 1), and -N 100000 started ranks
// until fork failed and crashed the launcher.
func TestFarmLaunchLimits(t *testing.T) {
	farmUsage(t, nil, []string{"-N", "9223372036854775807", "--in", "in.txt", "--out", "o.txt", "--annotations", "io.ann"},
		"farm: -N: 9223372036854775807 ranks: want 1 to 1048576 (rank.MaxSize)")

	// Under RLIMIT_NPROC 50, 40 ranks (80 tasks at least) cannot start.
	dir := t.TempDir()
	for name, body := range map[string]string{"in.txt": "a\nb\n", "io.ann": "in NEWSPAPER ro wo b farm=Lines\nout NEWSPAPER rc wo b farm=0\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-c", `ulimit -u 50 && exec "$0" "$@"`, parioBin, "farm", "-N", "40", "--in", "in.txt", "--out", "o.txt",
		"--annotations", "io.ann", "--", "cat")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "farm: -N: 40 ranks: this host has room for at most") ||
		!strings.Contains(string(out), "RLIMIT_NPROC (ulimit -u) is 50") {
		t.Errorf("farm -N 40 under ulimit -u 50: %v, want exit 2 naming RLIMIT_NPROC\n%s", err, out)
	}

	for _, args := range [][]string{
		{"bench", "-N", "2000000", "-a", "POSIX", "-o", filepath.Join(dir, "f"), "-b", "8", "-t", "8"},
		{"bench", "-N", "2000000", "-b", "8", "-t", "8"}, // the default run: refused before its cluster starts
		{"mcmc", "--np", "2000000", "--runs", "500000"},
	} {
		cmd := exec.Command(parioBin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "2000000 ranks: want 1 to 1048576 (rank.MaxSize)") ||
			strings.Contains(string(out), "[rank ") || strings.Contains(string(out), "embedded cluster") {
			t.Errorf("pario %s: %v, want exit 2 naming rank.MaxSize before anything starts\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestFarmOutputIsDirectory: an output that is a directory is refused
// before any segment runs. Before, every segment ran and the final rename
// failed ("rename .d.farm-... d: file exists").
func TestFarmOutputIsDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	farmUsage(t, nil, []string{"-N", "2", "--in", "in.txt", "--out", dir + "/d", "--annotations", "io.ann"},
		"farm: --out: "+dir+"/d is a directory")
	// With groups, each group's file: d.1 of two.
	if err := os.Mkdir(filepath.Join(dir, "g.1"), 0o755); err != nil {
		t.Fatal(err)
	}
	farmUsage(t, nil, []string{"-N", "4", "--group", "2", "--in", "in.txt", "--out", dir + "/g", "--annotations", "io.ann"},
		"farm: --out: "+dir+"/g.1 is a directory")

	// A directory in the store.
	cf := up(t)
	run(t, cf, "mkdir", "/runs")
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "io.ann"), []byte(farmOrdered), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err := farmCLI(t, dir, cf, "farm", "-N", "2", "--in", "in.txt", "--out", "pario:/runs", "--annotations", "io.ann", "--", "sh", "-c", "touch ran; cat")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(msg, "farm: --out: /runs is a directory") || strings.Contains(msg, "[rank ") {
		t.Errorf("--out pario:/runs, a directory: %v, want exit 2 before any rank starts\n%s", err, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("--out pario:/runs: the command ran")
	}
}

// TestFarmOutputDirectoryMissing: an output in a directory that does
// not exist (local or in the store), or under a file, is a usage error
// naming the user's output and the directory, before any rank starts.
// Before, rank 0 failed with exit 1 naming only the hidden temporary file
// (".x.farm-...: no such file or directory").
func TestFarmOutputDirectoryMissing(t *testing.T) {
	dir := t.TempDir()
	farmUsage(t, nil, []string{"-N", "2", "--in", "in.txt", "--out", dir + "/nodir/x", "--annotations", "io.ann"},
		"farm: --out: the directory "+dir+"/nodir of the output "+dir+"/nodir/x does not exist")
	farmUsage(t, map[string]string{"f": ""}, []string{"--in", "in.txt", "--out", "f/x", "--annotations", "io.ann"},
		"farm: --out: f, the directory of the output f/x, is not a directory")

	cf := up(t)
	for name, body := range map[string]string{"in.txt": "a\nb\n", "io.ann": farmOrdered} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := farmCLI(t, dir, cf, "farm", "-N", "2", "--in", "in.txt", "--out", "pario:/nodir/x", "--annotations", "io.ann", "--", "sh", "-c", "touch ran; cat")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(msg, "farm: --out: the directory /nodir of the output /nodir/x does not exist") ||
		strings.Contains(msg, ".farm-") || strings.Contains(msg, "[rank ") {
		t.Errorf("--out pario:/nodir/x: %v, want exit 2 naming /nodir before any rank starts\n%s", err, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("--out pario:/nodir/x: the command ran")
	}
}

// TestFarmFlagMistakes: --layout with a local output (ignored before;
// mcmc refuses the same), and a --rendezvous no rank could use (each rank
// failed with exit 1 before), are usage errors before any rank starts.
func TestFarmFlagMistakes(t *testing.T) {
	base := []string{"-N", "2", "--in", "in.txt", "--out", "o.txt", "--annotations", "io.ann"}
	farmUsage(t, nil, append(base, "--layout", "simple_stripe:strip_size=1m"),
		"farm: --layout is for an output in the store (--out pario:/path), not o.txt")
	farmUsage(t, nil, append(base, "--rendezvous", "1.2.3.4:99999"),
		`farm: --rendezvous: rendezvous address "1.2.3.4:99999": bad port "99999"`)
}

// TestFarmHelpSaysWhatNZeroIs: -N 0, as IOR's, is one rank.
func TestFarmHelpSaysWhatNZeroIs(t *testing.T) {
	out, err := exec.Command(parioBin, "farm", "--help").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "0 or 1: one rank") {
		t.Errorf("farm --help does not say what -N 0 means:\n%s", out)
	}
}
