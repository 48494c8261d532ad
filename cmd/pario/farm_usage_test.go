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
		t.Fatalf("pario %s: %v, want exit status 2\n%s", strings.Join(args, " "), err, msg)
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
