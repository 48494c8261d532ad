package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// exitCode runs pario (no cluster needed) and returns its combined output
// and exit status.
func exitCode(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := runErr("", args...)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out, 0
	case errors.As(err, &ee):
		return out, ee.ExitCode()
	}
	t.Fatalf("pario %v: %v", args, err)
	return "", -1
}

// TestBenchRefusesBeforeStarting: bad bench options fail once, with exit
// status 2, before an embedded cluster or any rank starts; a transfer size
// that cannot fit in memory is one of them (it died with "fatal error:
// runtime: out of memory" and a goroutine dump).
func TestBenchRefusesBeforeStarting(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-a", "DUMMY", "-t", "1t", "-b", "1t"}, "of memory is available"},
		{[]string{"bench", "-a", "DUMMY", "-N", "3", "-t", "1t", "-b", "1t", "-o", "x"}, "3 ranks on this host would need"},
		{[]string{"bench", "-t", "1t", "-b", "1t"}, "4 ranks on this host would need"},
		{[]string{"bench", "-i", "0"}, "too few test repetitions (-i 0)"},
		{[]string{"bench", "-N", "3", "-t", "3m"}, "block size must be a multiple of transfer size"},
		{[]string{"bench", "-a", "DUMMY", "-N", "3", "-i", "0", "-o", "x"}, "too few test repetitions (-i 0)"},
	}
	for _, tc := range cases {
		out, code := exitCode(t, tc.args...)
		if code != 2 || strings.Count(out, tc.want) != 1 {
			t.Errorf("pario %s: exit %d, want 2 and %q once:\n%s", strings.Join(tc.args, " "), code, tc.want, out)
		}
		for _, bad := range []string{"fatal error", "goroutine", "embedded cluster", "[rank"} {
			if strings.Contains(out, bad) {
				t.Errorf("pario %s: output has %q; the options must be refused before anything starts:\n%s", strings.Join(tc.args, " "), bad, out)
			}
		}
	}
}
