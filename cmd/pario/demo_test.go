package main

import (
	"os/exec"
	"strings"
	"testing"
)

// pario demo refuses flags it cannot run with, before it starts a cluster:
// --size 1p was a Go panic (makeslice), a size whose two copies do not fit
// in memory an OOM kill, --writers 0 or -3 ran as 1 without a word, and
// --servers beyond the descriptor limit failed with status 1.
func TestDemoRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "1p"}, "--size 1p: the demo holds each file and its read-back copy in memory"},
		{[]string{"--writers", "0", "--size", "1m"}, "--writers 0: want 1 to 1024"},
		{[]string{"--writers", "-3", "--size", "1m"}, "--writers -3"},
		{[]string{"--writers", "100000000", "--size", "1m"}, "--writers 100000000"},
		{[]string{"--servers", "100000"}, "--servers 100000"},
	} {
		out, err := exec.Command(parioBin, append([]string{"demo"}, tc.args...)...).CombinedOutput()
		if statusOf(err) != 2 || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "panic") {
			t.Errorf("pario demo %s: %v, want exit status 2 and %q:\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
}

func TestCheckDemoMemory(t *testing.T) {
	const gib = 1 << 30
	if err := checkDemoMemory(20*gib, 24*gib); err == nil || !strings.Contains(err.Error(), "24.0 GiB is available") {
		t.Errorf("20 GiB twice in 24 GiB: %v, want a refusal saying what is available", err)
	}
	if err := checkDemoMemory(64<<20, 24*gib); err != nil {
		t.Errorf("64 MiB twice in 24 GiB: %v", err)
	}
	if err := checkDemoMemory(64<<20, 0); err != nil {
		t.Errorf("64 MiB, memory unknown: %v", err)
	}
	if err := checkDemoMemory(1<<50, 0); err == nil {
		t.Error("1 PiB, memory unknown: accepted")
	}
}
