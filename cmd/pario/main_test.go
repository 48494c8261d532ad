package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/internal/testbin"
)

// The CLI tests run the pario binary as a user would: `pario up` in the
// background, then the tools against it.

var parioBin string

func TestMain(m *testing.M) { testbin.Main(m, &parioBin) }

// up starts `pario up` on a fresh directory and returns the cluster file.
func up(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	var out bytes.Buffer
	cmd := exec.Command(parioBin, append([]string{"up", "--dir", dir}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	cf := filepath.Join(dir, "cluster")
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(cf); err == nil {
			return cf
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("pario up did not write %s:\n%s", cf, out.String())
	return ""
}

// run runs pario with the cluster file and returns stdout; it fails the
// test on a non-zero exit unless wantErr.
func run(t *testing.T, cf string, args ...string) string {
	t.Helper()
	out, err := runErr(cf, args...)
	if err != nil {
		t.Fatalf("pario %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(cf string, args ...string) (string, error) {
	cmd := exec.Command(parioBin, append([]string{"--cluster", cf}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

func TestCopyInOutAndTools(t *testing.T) {
	cf := up(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "in.dat")
	data := make([]byte, 5<<20+12345)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, cf, "mkdir", "-p", "/runs/today")
	run(t, cf, "layout", "set", "/runs", "-c", "3", "-S", "256k")
	if out := run(t, cf, "layout", "get", "/runs"); !strings.Contains(out, "simple_stripe:strip_size=262144,num_datafiles=3") {
		t.Fatalf("layout get /runs: %s", out)
	}
	run(t, cf, "cp", "-q", src, "pario:/runs/today/")
	// The file inherited the directory's layout.
	if out := run(t, cf, "layout", "get", "/runs/today/in.dat"); !strings.Contains(out, "strip_size=262144,num_datafiles=3") {
		t.Fatalf("copied file did not inherit: %s", out)
	}
	// viewdist: bytes per datafile match the distribution's arithmetic.
	out := run(t, cf, "viewdist", "/runs/today/in.dat")
	d, _ := dist.New(dist.SimpleStripe, "strip_size=262144", 3)
	rows := regexp.MustCompile(`(?m)^\s*(\d+)\s+(data\d)\s+\S+\s+(\d+)\s*$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 3 {
		t.Fatalf("viewdist: want 3 datafile rows:\n%s", out)
	}
	for _, r := range rows {
		df, _ := strconv.Atoi(r[1])
		got, _ := strconv.ParseInt(r[3], 10, 64)
		if want := d.PhysicalSize(df, int64(len(data))); got != want {
			t.Errorf("viewdist datafile %d on %s: %d bytes, want %d", df, r[2], got, want)
		}
	}
	if out := run(t, cf, "stat", "pario:/runs/today/in.dat"); !strings.Contains(out, fmt.Sprintf("size:      %d", len(data))) {
		t.Fatalf("stat: %s", out)
	}
	if out := run(t, cf, "ls", "-l", "/runs/today"); !strings.Contains(out, "in.dat") || !strings.Contains(out, strconv.Itoa(len(data))) {
		t.Fatalf("ls -l: %s", out)
	}
	run(t, cf, "mv", "/runs/today/in.dat", "/runs/moved.dat")
	dst := filepath.Join(dir, "out.dat")
	run(t, cf, "cp", "-q", "pario:/runs/moved.dat", dst)
	back, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("copy out differs from copy in (%v)", err)
	}
	if out := run(t, cf, "df"); !strings.Contains(out, "data3") || !strings.Contains(out, "namespace: 1 files") {
		t.Fatalf("df: %s", out)
	}
	run(t, cf, "rm", "-r", "/runs")
	if out := run(t, cf, "ls", "/"); strings.TrimSpace(out) != "" {
		t.Fatalf("ls / after rm -r: %q", out)
	}
}

func TestBadInvocationsExplainThemselves(t *testing.T) {
	cf := up(t)
	cases := []struct {
		args  []string
		wants string
		code  int
	}{
		{[]string{"layout", "set", "/", "simple_stripe:strip_size=0"}, "strip_size", 2},
		{[]string{"layout", "set", "/", "varstrip:strips=0:1;5:1"}, "gap", 2},
		{[]string{"layout", "set", "/", "varstrip:strips=0:1;1:1;2:1;3:1;4:1"}, "datafile 4", 1},
		{[]string{"cp", "--hint", "strip_size", "x", "pario:/y"}, "strip_size", 2},
		{[]string{"mkdir", "/a/../b"}, "..", 1},
		{[]string{"stat", "/missing"}, "no such file", 1},
		{[]string{"cp", "a", "b"}, "pario:", 2},
		{[]string{"up", "--bogus"}, "unknown flag", 2},
		{[]string{"--op-timeout", "0", "ls", "/"}, "--op-timeout 0s: want a positive time", 2},
		{[]string{"mount", "--op-timeout", "0", "/nonexistent"}, "--op-timeout 0s: want a positive time", 2},
		{[]string{"mount", "--op-timeout", "-5s", "/nonexistent"}, "--op-timeout -5s: want a positive time", 2},
		{[]string{"mount", "--entry-timeout", "-1s", "/nonexistent"}, "--entry-timeout -1s", 2},
		{[]string{"mount", "--attr-timeout", "-1s", "/nonexistent"}, "--attr-timeout -1s", 2},
		{[]string{"advise", "--dims", "1024x1024", "--chunk", "2048x4"}, "chunk 2048x4 is larger than the dataset 1024x1024", 2},
		{[]string{"advise", "--dims", "1024", "--alignment", "0"}, `"--alignment"`, 2},
		{[]string{"advise", "--dims", "1024x0"}, "dimension 1 has length 0", 2},
		{[]string{"advise", "--dims", "1024x1024", "--apply", "/missing"}, "no such file", 1},
	}
	for _, tc := range cases {
		out, err := runErr(cf, tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("pario %v: err %v, want an exit status", tc.args, err)
			continue
		}
		if ee.ExitCode() != tc.code || !strings.Contains(out, tc.wants) {
			t.Errorf("pario %v: exit %d, output %q; want exit %d mentioning %q", tc.args, ee.ExitCode(), out, tc.code, tc.wants)
		}
	}
	// No cluster at all: the error says how to get one.
	out, err := runErr(filepath.Join(t.TempDir(), "nope"), "ls")
	if err == nil || !strings.Contains(out, "pario up") {
		t.Errorf("ls without a cluster: %v %q", err, out)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	root := newRootCommand()
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if c.Short == "" {
			t.Errorf("%s has no short help", c.Name())
		}
		out, err := runErr("", c.Name(), "--help")
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("pario %s --help: %v\n%s", c.Name(), err, out)
		}
	}
}

func TestDemo(t *testing.T) {
	out, err := runErr("", "demo", "--size", "3m")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"simple_stripe", "basic", "varstrip", "twod_stripe", "verified"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "MISMATCH") {
		t.Errorf("demo found a mismatch:\n%s", out)
	}
}

// TestServersFromFlags runs a cluster as separate `pario meta` and `pario
// data` processes configured by flags alone, then uses it through a
// cluster file that names only what clients need.
func TestServersFromFlags(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	run(t, "", "secret", secret)
	ports := freePorts(t, 3)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	start := func(args ...string) {
		cmd := exec.Command(parioBin, args...)
		var out bytes.Buffer
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if t.Failed() {
				t.Logf("pario %v:\n%s", args, out.String())
			}
		})
	}
	for i := 1; i <= 2; i++ {
		start("data", "--name", fmt.Sprintf("data%d", i-1), "--dir", filepath.Join(dir, fmt.Sprint("d", i)), "--listen", addr(i), "--secret-file", secret)
	}
	start("meta", "--dir", filepath.Join(dir, "meta"), "--listen", addr(0), "--secret-file", secret,
		"--data", fmt.Sprintf("data0=%s,data1=%s", addr(1), addr(2)))
	// What docs/store.md says clients need: the meta and secret-file
	// lines, no data lines (before, every command refused such a file).
	cf := filepath.Join(dir, "cluster")
	os.WriteFile(cf, []byte(fmt.Sprintf("secret-file secret\nmeta %s\n", addr(0))), 0o644)
	src := filepath.Join(dir, "in")
	os.WriteFile(src, bytes.Repeat([]byte("pario"), 100000), 0o644)
	var err error
	for i := 0; i < 100; i++ { // the servers take a moment to listen
		if _, err = runErr(cf, "cp", "-q", src, "pario:/in"); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("cp into a flag-configured cluster: %v", err)
	}
	out := run(t, cf, "viewdist", "/in")
	if !strings.Contains(out, "data0") || !strings.Contains(out, "data1") {
		t.Fatalf("viewdist: %s", out)
	}
	// Bad flag combinations are usage errors.
	if _, err := runErr(cf, "meta", "--dir", dir, "--secret-file", secret); err == nil {
		t.Fatal("meta with --secret-file but no --data accepted")
	}
	// A metadata server cannot run from a clients' file: it says which
	// file lacks which line.
	out, err = runErr(cf, "meta", "--dir", filepath.Join(dir, "meta2"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, cf+": cluster file: no `data NAME HOST:PORT` line") {
		t.Fatalf("meta from a cluster file without data lines: %v, want exit status 1 naming %s and the line:\n%s", err, cf, out)
	}
}

// freePorts returns n free ports on loopback for servers to bind
// (cluster.FreePorts: below the ephemeral range, so no connection takes
// one before its server binds it).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := cluster.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// `pario up --wire-protection integrity` writes the line into the cluster
// file, the tools follow it, and a cluster file without it (aead) is
// refused by the servers with both modes named.
func TestUpWireProtection(t *testing.T) {
	cf := up(t, "--wire-protection", "integrity")
	text, err := os.ReadFile(cf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "wire-protection integrity\n") {
		t.Fatalf("cluster file of pario up --wire-protection integrity:\n%s", text)
	}
	src := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(src, []byte("CONFIDENTIAL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, cf, "cp", "-q", src, "pario:/in.txt")
	if out := run(t, cf, "ls", "/"); !strings.Contains(out, "in.txt") {
		t.Fatalf("ls /: %s", out)
	}
	other := filepath.Join(filepath.Dir(cf), "cluster-aead")
	if err := os.WriteFile(other, []byte(strings.ReplaceAll(string(text), "wire-protection integrity\n", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runErr(other, "ls", "/")
	if err == nil || !strings.Contains(out, "wire protection mismatch") || !strings.Contains(out, "integrity") {
		t.Fatalf("a client with the other mode: %v\n%s", err, out)
	}
	if out, err := runErr(cf, "up", "--wire-protection", "none"); err == nil || !strings.Contains(out, "want aead or integrity") {
		t.Fatalf("pario up --wire-protection none: %v\n%s", err, out)
	}
}

// An unknown command stays an unknown command when --help (or help) is
// asked for it: exit status 2 and the message pario nosuch gives, not the
// root's or the group's help with status 0 (cobra looks at --help before
// the arguments). Help for real commands still prints.
func TestUnknownCommandWithHelp(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		wants string
	}{
		{[]string{"nosuch", "--help"}, `unknown command "nosuch" for "pario"`},
		{[]string{"nosuch", "-h"}, `unknown command "nosuch" for "pario"`},
		{[]string{"layout", "nosuch", "--help"}, `unknown command "nosuch" for "pario layout"`},
		{[]string{"help", "nosuch"}, `unknown command "nosuch" for "pario"`},
		{[]string{"help", "layout", "nosuch"}, `unknown command "nosuch" for "pario layout"`},
	} {
		out, err := runErr("", tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "pario: "+tc.wants) || strings.Contains(out, "Usage:") {
			t.Errorf("pario %s: %v, output %.200q; want exit status 2, %q and no help", strings.Join(tc.args, " "), err, out, tc.wants)
		}
	}
	for _, args := range [][]string{{"--help"}, {"layout", "--help"}, {"layout", "set", "-h"}, {"help", "layout"}, {"help", "layout", "get"}, {"layout"}} {
		if out, err := runErr("", args...); err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("pario %s: %v, output %.200q; want its help", strings.Join(args, " "), err, out)
		}
	}
}

// A second Ctrl-C ends pario even when the command is blocked where it
// does not look at its context (here tune estimate reading a pipe whose
// writer never writes). Before, every SIGINT after the first was caught
// too, and only SIGKILL stopped it.
func TestSecondInterruptEnds(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd := exec.Command(parioBin, "tune", "estimate", "/dev/stdin")
	cmd.Stdin = pr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(500 * time.Millisecond)
	for range 2 {
		cmd.Process.Signal(os.Interrupt)
		time.Sleep(300 * time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("pario still running 5 s after a second Ctrl-C")
	}
}

// startLocal starts an in-process cluster with cfg (its Dir a temporary
// directory when empty), stopped when the test ends.
func startLocal(t *testing.T, cfg cluster.Config) *cluster.Local {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	l, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// dialLocal dials a client of l, closed when the test ends.
func dialLocal(t *testing.T, l *cluster.Local) *client.Client {
	t.Helper()
	c, err := l.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
