package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/cluster"
)

// exitCode runs pario with its data directory in a fresh temporary
// directory (a command that wrongly starts a cluster stays out of the
// user's) and returns its combined output and exit status. A command
// still running after a minute is killed and fails the test.
func exitCode(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, parioBin, args...)
	cmd.Env = append(os.Environ(), "PARIO_HOME="+t.TempDir(), "PARIO_CLUSTER=")
	// As Ctrl-C would: a server or a mount cleans up on SIGTERM.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Errorf("pario %v: still running after a minute:\n%s", args, out)
		return string(out), -1
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
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

// TestUsageErrorsExit2: every mistake in how pario is called exits with
// status 2, argument counts and unknown subcommands included (they exited
// 1, or 0 with the group's help); --servers 0 and -1 are refused instead
// of meaning 4.
func TestUsageErrorsExit2(t *testing.T) {
	cases := [][]string{
		{"frobnicate"},
		{"tune", "frobnicate"},
		{"layout", "frob", "/"},
		{"medic", "x"},
		{"bench", "extra"},
		{"cp", "onlyone"},
		{"secret"},
		{"mv", "a"},
		{"viewdist"},
		{"df", "x"},
		{"layout", "set", "/"},
		{"up", "--servers", "0"},
		{"up", "--servers", "-1"},
		{"cp", "--workers", "0", "a", "pario:/b"},
		{"cp", "--hint", "strip_size=0", "a", "pario:/b"},
		{"cp", "--hint", "no_such_hint=1", "a", "pario:/b"},
		{"layout", "set", "/", "-c", "-2"},
		{"up", "--layout", "simple_stripe:num_datafiles=9"},
		{"up", "--port", "65535"},
		{"up", "--port", "70000"},
		{"up", "--port", "-5"},
		{"up", "--port", "65000", "--servers", "600"},
		{"up", "--servers", "100000"},
		{"mount", "--embedded", "--servers", "0", t.TempDir()},
		{"bench", "--servers", "0"},
		{"medic", "serve", "--key", "k", "--dir", t.TempDir(), "--max-regens", "0"},
		{"medic", "serve", "--key", "k", "--dir", t.TempDir(), "--max-conns-per-peer", "-1"},
		{"medic", "serve", "--key", "k", "--dir", t.TempDir(), "--staging-ttl", "0s"},
		{"medic", "send", "--key", "k", "--stall-timeout", "0s", "f", "127.0.0.1:1"},
		{"mcmc", "--io", "none", "--chain-work", "-1s"},
	}
	for _, args := range cases {
		out, code := exitCode(t, args...)
		if code != 2 || !strings.HasPrefix(out, "pario: ") {
			t.Errorf("pario %s: exit %d, want 2 and a message:\n%s", strings.Join(args, " "), code, out)
		}
		if args[0] == "up" && args[1] == "--layout" && !strings.Contains(out, "--layout simple_stripe:num_datafiles=9 with --servers 4: ") {
			t.Errorf("pario %s: %q does not name --layout and --servers", strings.Join(args, " "), out)
		}
		if args[0] == "up" && args[1] == "--port" && !strings.Contains(out, "--port "+args[2]+": ") {
			t.Errorf("pario %s: %q does not name --port", strings.Join(args, " "), out)
		}
		if args[0] == "up" && args[2] == "100000" && !strings.Contains(out, "--servers 100000: 100000 I/O servers in one process need at least") {
			t.Errorf("pario %s: %q does not say why so many servers cannot run", strings.Join(args, " "), out)
		}
		if strings.Contains(out, "servers 0") || strings.Contains(out, "servers -1") {
			if !strings.Contains(out, "want at least 1") {
				t.Errorf("pario %s: %q does not say what is wrong", strings.Join(args, " "), out)
			}
		}
	}
	// --data is named, with the value at fault; it is no cluster file,
	// and its errors said "cluster file line 4" of one built from it.
	for _, data := range []string{"a=h:1,a=h:2", "a=h:1,b=h:1", "a=h:1,b=h:x", "a=h:1,=h:2"} {
		out, code := exitCode(t, "meta", "--listen", "127.0.0.1:1", "--secret-file", "s", "--dir", t.TempDir(), "--data", data)
		if code != 2 || !strings.Contains(out, `pario: --data "`) || strings.Contains(out, "cluster file") {
			t.Errorf("pario meta --data %s: exit %d, want 2 and an error quoting the --data value:\n%s", data, code, out)
		}
	}
	// Help is not an error.
	for _, args := range [][]string{{"tune"}, {"--help"}, {"layout", "--help"}} {
		if out, code := exitCode(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("pario %s: exit %d, want 0 and the help:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

func TestUsePercent(t *testing.T) {
	cases := []struct {
		total, free, avail uint64
		want               string
	}{
		{100, 40, 30, "67%"}, // 60 / 90 rounded up; (total-free)/total said 60%
		{100, 5, 0, "100%"},  // only reserved blocks left
		{1000, 1000, 950, "0%"},
		{1000, 999, 949, "1%"}, // any use rounds up to 1%
		{0, 0, 0, "-"},
		{252 << 30, 92 << 30, 76 << 30, "68%"},
	}
	for _, tc := range cases {
		if got := usePercent(tc.total, tc.free, tc.avail); got != tc.want {
			t.Errorf("usePercent(%d, %d, %d) = %s, want %s", tc.total, tc.free, tc.avail, got, tc.want)
		}
	}
}

// TestDfMatchesDf: pario df's use% of an I/O server is what df(1) prints
// for the file system of its data directory.
func TestDfMatchesDf(t *testing.T) {
	dfPath, err := exec.LookPath("df")
	if err != nil {
		t.Skip("no df(1) to compare with")
	}
	cf := up(t, "--servers", "1")
	dir := filepath.Join(filepath.Dir(cf), "data0")
	var ours, theirs string
	// Other processes write to the same file system: retry until two
	// readings agree with each other.
	for try := 0; try < 5; try++ {
		out := run(t, cf, "df")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == "data0" {
				for _, w := range f {
					if strings.HasSuffix(w, "%") {
						ours = w
					}
				}
			}
		}
		b, err := exec.Command(dfPath, "--output=pcent", dir).Output()
		if err != nil {
			t.Skipf("df --output=pcent %s: %v", dir, err)
		}
		f := strings.Fields(string(b))
		theirs = f[len(f)-1]
		if ours == theirs {
			return
		}
	}
	t.Fatalf("pario df says use%% %s for data0, df(1) says %s for %s", ours, theirs, dir)
}

// TestLoadClusterFileWaitsForUp: a command waits for the cluster file of a
// `pario up` that holds its directory, and refuses the file a killed one
// left (its lock no longer held); with neither it fails after appearWait,
// telling the user to run pario up.
func TestLoadClusterFileWaitsForUp(t *testing.T) {
	const text = "secret-file secret\nmeta 127.0.0.1:7000\ndata data0 127.0.0.1:7001\n"
	saved := []any{globalClusterFile, appearWait, startWait}
	t.Cleanup(func() {
		globalClusterFile, appearWait, startWait = saved[0].(string), saved[1].(time.Duration), saved[2].(time.Duration)
	})
	appearWait, startWait = 200*time.Millisecond, 20*time.Second
	ctx := context.Background()

	globalClusterFile = filepath.Join(t.TempDir(), "cluster")
	began := time.Now()
	if _, err := loadClusterFile(ctx); err == nil || !strings.Contains(err.Error(), "pario up") {
		t.Errorf("no cluster: %v, want one telling to run pario up", err)
	}
	if d := time.Since(began); d < appearWait || d > 10*appearWait {
		t.Errorf("no cluster: gave up after %v, want about %v", d, appearWait)
	}

	// A starting `pario up` (this process stands for it) writes the file
	// later than appearWait.
	dir := t.TempDir()
	globalClusterFile = filepath.Join(dir, "cluster")
	lock, err := cluster.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(4 * appearWait)
		os.WriteFile(globalClusterFile, []byte(text), 0o644)
		lock.Serving()
	}()
	cf, err := loadClusterFile(ctx)
	if err != nil || cf.Meta != "127.0.0.1:7000" {
		t.Errorf("cluster starting: %v, %+v; want the file it wrote", err, cf)
	}

	// Its process gone (the lock let go, as the kernel does for a killed
	// process), the file it left names dead servers: refused, not dialled.
	lock.Unlock()
	if _, err := loadClusterFile(ctx); err == nil || !strings.Contains(err.Error(), "no longer running") || !strings.Contains(err.Error(), "pario up") {
		t.Errorf("file of a gone pario up: %v, want an error saying its cluster is no longer running", err)
	}
}
