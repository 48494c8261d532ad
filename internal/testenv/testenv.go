// Package testenv is what tests of several packages share about the
// machine they run on: whether a missing prerequisite (a program, a device,
// root) may skip a test, and whether the race detector is on.
//
// Only test code imports it (test/layering checks that).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where .ci/run has
// installed every prerequisite.
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips the test for a missing prerequisite, or fails it under
// CI, where a skip would hide that the test never ran. The message should
// say what is missing and how to get it.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true: a missing prerequisite fails the test instead of skipping it)", msg)
		return
	}
	t.Skip(msg)
}

// Tmpfs mounts a tmpfs of size (mount(8)'s size=, e.g. "24m") on a new
// temporary directory and returns it: a small disk to fill. It needs
// root (SkipOrFail otherwise). The unmount is a cleanup registered first,
// so it runs after the test's own, which stop what uses the disk.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		SkipOrFail(t, "mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Alive reports whether process pid runs: it exists and is not a zombie
// waiting for a reaper (what a test that killed a process group asks of
// each member).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
