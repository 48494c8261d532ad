package main

import (
	"context"
	"os"
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

// pario cp pario:/f /dev/null works, as cp(1) does (it is how one times a
// read): the sync of a device that cannot be synced (EINVAL) is skipped.
// layout set -c -1 is lfs setstripe's every server, not a usage error.
func TestCpToDevNullAndStripeCountAll(t *testing.T) {
	cf := up(t)
	src := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(src, make([]byte, 200000), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, cf, "cp", "-q", src, "pario:/f")
	if out, failed := cpWithin(t, cf, time.Minute, "pario:/f", "/dev/null"); failed {
		t.Errorf("pario cp pario:/f /dev/null failed:\n%s", out)
	}
	run(t, cf, "mkdir", "/d")
	if out := run(t, cf, "layout", "set", "/d", "-c", "-1", "-S", "1m"); !strings.Contains(out, "/d: simple_stripe:strip_size=1048576\n") {
		t.Errorf("layout set /d -c -1 -S 1m: %q, want 1 MiB strips on every server", out)
	}
}
