package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// unquotedSemicolon reports whether a shell command line has a ';'
// outside quotes and before a comment: pasted, it would end the command
// there.
func unquotedSemicolon(line string) bool {
	var quote rune
	prev := ' '
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return false
		case r == ';':
			return true
		}
		prev = r
	}
	return false
}

// TestHelpExamplesPaste: every example command line in the help texts
// (a line starting with "pario ") can be pasted into a shell as one
// command. cp's had an unquoted ';' in a varstrip hint.
func TestHelpExamplesPaste(t *testing.T) {
	for _, c := range []string{"a;b", "x 'a;b'", `x "a;b"`, "x # a;b"} {
		if got, want := unquotedSemicolon(c), c == "a;b"; got != want {
			t.Fatalf("unquotedSemicolon(%q) = %v", c, got)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Long+"\n"+c.Example, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "pario ") && unquotedSemicolon(line) {
				t.Errorf("pario %s --help: %q has an unquoted ';'", c.CommandPath(), line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}
