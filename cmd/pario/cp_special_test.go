package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpWithin runs pario cp with cf, killing it if it runs longer than limit
// (a copy that hangs is the failure these tests look for), and returns
// its combined output and whether it failed.
func cpWithin(t *testing.T, cf string, limit time.Duration, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, parioBin, append([]string{"--cluster", cf, "cp", "-q"}, args...)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("pario cp %v: still running after %v (killed):\n%s", args, limit, out)
	}
	return string(out), err != nil
}

// A FIFO with no writer is refused at once, as /dev/zero and a directory
// are: cp copies regular files only, and used to block in open(2) until a
// writer came (SIGTERM did not end it: the open cannot be cancelled).
func TestCpRefusesSpecialFilesAtOnce(t *testing.T) {
	cf := up(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{fifo, "/dev/zero", t.TempDir()} {
		out, failed := cpWithin(t, cf, 20*time.Second, src, "pario:/x")
		if !failed || !strings.Contains(out, src) || !strings.Contains(out, "not a regular file") {
			t.Errorf("pario cp %s: failed=%v, output %q; want a failure naming it as not a regular file", src, failed, out)
		}
	}
	if out := run(t, cf, "ls", "/"); strings.TrimSpace(out) != "" {
		t.Fatalf("refused copies left %q in the store", out)
	}
}
