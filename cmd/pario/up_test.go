package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testbin"
)

// startUp starts `pario up --dir dir` and returns it once its cluster file
// is there; the test stops it at the end unless it is gone.
func startUp(t *testing.T, dir string, args ...string) (*exec.Cmd, *testbin.LockedBuffer) {
	t.Helper()
	out := &testbin.LockedBuffer{}
	cmd := exec.Command(parioBin, append([]string{"up", "--dir", dir, "--servers", "2"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	waitUntil(t, "pario up to say it is up", func() bool { return strings.Contains(out.String(), "press Ctrl-C") })
	return cmd, out
}

// Two processes never serve one store directory: a second `pario up` on
// it fails at once naming the first, and leaves the first's cluster file
// alone. Once the first is killed with SIGKILL, the cluster file it
// leaves is not dialled (before, every command tried its dead servers and
// failed with "connection refused", and `pario up &` followed by a
// command read it before the new `pario up` replaced it: the README's
// pattern failed after a killed run); a new `pario up &` followed at once
// by a command works.
func TestUpHoldsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	cf := filepath.Join(dir, "cluster")
	first, _ := startUp(t, dir)

	out, err := exec.Command(parioBin, "up", "--dir", dir, "--servers", "2").CombinedOutput()
	want := fmt.Sprintf("served by another process (pid %d)", first.Process.Pid)
	if statusOf(err) != 1 || !strings.Contains(string(out), want) {
		t.Errorf("second pario up on %s: %v, want exit status 1 and %q:\n%s", dir, err, want, out)
	}
	run(t, cf, "mkdir", "/before")

	first.Process.Kill()
	first.Wait()
	out2, err := runErr(cf, "ls", "/")
	if statusOf(err) != 1 || !strings.Contains(out2, "no longer running") || strings.Contains(out2, "connection refused") {
		t.Errorf("pario ls after pario up was killed: %v, want exit status 1 saying the cluster is no longer running:\n%s", err, out2)
	}

	// `pario up &` and the next line of a script, racing.
	again := exec.Command(parioBin, "up", "--dir", dir, "--servers", "2")
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		again.Process.Signal(syscall.SIGTERM)
		again.Wait()
	})
	run(t, cf, "mkdir", "/after")
	if got := run(t, cf, "ls", "/"); !strings.Contains(got, "before") || !strings.Contains(got, "after") {
		t.Errorf("ls / after the restart: %q, want before and after", got)
	}
}

func statusOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// Flags of pario up that no cluster can run with are usage errors (exit
// status 2) before anything starts. Before, --disk-seek -1s and
// --lock-revoke -1ms started a cluster that emulated nothing, --disk-rate 1
// one whose every request took hours, and a --metrics address that is not
// one, or that other hosts can reach, failed with status 1.
func TestUpRefusesBadFlags(t *testing.T) {
	afile := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(afile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--disk-seek", "-1s"}, "--disk-seek -1s"},
		{[]string{"--lock-revoke", "-1ms"}, "--lock-revoke -1ms"},
		{[]string{"--disk-seek", "1h"}, "--disk-seek 1h0m0s"},
		{[]string{"--disk-rate", "1"}, "--disk-rate 1 B/s"},
		{[]string{"--net-rate", "100"}, "--net-rate 100 B/s"},
		{[]string{"--metrics", "garbage"}, "--metrics"},
		{[]string{"--metrics", "0.0.0.0:0"}, "--metrics-allow-remote"},
		// Said "cluster: mkdir afile: not a directory", exit 1.
		{[]string{"--dir", afile}, "--dir " + afile + ": not a directory"},
		{[]string{"--dir", afile + "/sub"}, "--dir " + afile + "/sub: " + afile + " is not a directory"},
	} {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, parioBin, append([]string{"up", "--dir", dir}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		if statusOf(err) != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("pario up %s: %v, want exit status 2 and %q:\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "cluster")); err == nil {
			t.Errorf("pario up %s started a cluster", strings.Join(tc.args, " "))
		}
	}
}

// pario secret never replaces a file (a symbolic link either), and says
// why and what to do; before, it said only "file exists". An empty FILE
// is a usage error.
func TestSecretRefusesExistingFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if out, err := exec.Command(parioBin, "secret", p).CombinedOutput(); err != nil {
		t.Fatalf("pario secret %s: %v\n%s", p, err, out)
	}
	before, _ := os.ReadFile(p)
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "nowhere"), link)
	for _, f := range []string{p, link} {
		out, err := exec.Command(parioBin, "secret", f).CombinedOutput()
		if statusOf(err) != 1 || !strings.Contains(string(out), f+" exists: a secret file is never replaced") {
			t.Errorf("pario secret %s onto an existing file: %v, want exit status 1 saying it is never replaced:\n%s", f, err, out)
		}
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Error("the existing secret changed")
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a secret was written through the dangling link")
	}
	if out, err := exec.Command(parioBin, "secret", "").CombinedOutput(); statusOf(err) != 2 {
		t.Errorf("pario secret '': %v, want exit status 2:\n%s", err, out)
	}
	// It wrote a file named "-".
	cmd := exec.Command(parioBin, "secret", "-")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); statusOf(err) != 2 || !strings.Contains(string(out), "not standard output") {
		t.Errorf("pario secret -: %v, want exit status 2 saying it writes no standard output:\n%s", err, out)
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Error("pario secret - wrote a file named -")
	}
}

// A metadata server run from the cluster file of a `pario up` that was
// killed serves it: it reads the file as it is (before, it asked, as a
// client does, whether that pario up still ran, and refused to start
// with "left from a cluster that is no longer running"), and holds the
// file's lock, so that commands reading the file use it.
func TestMetaServesAKilledUpsClusterFile(t *testing.T) {
	dir := t.TempDir()
	cf := filepath.Join(dir, "cluster")
	first, _ := startUp(t, dir)
	run(t, cf, "mkdir", "/kept")
	first.Process.Kill()
	first.Wait()

	out := &testbin.LockedBuffer{}
	meta := exec.Command(parioBin, "--cluster", cf, "meta", "--dir", filepath.Join(dir, "meta"))
	meta.Stdout, meta.Stderr = out, out
	if err := meta.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- meta.Wait() }()
	t.Cleanup(func() {
		meta.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		got, err := runErr(cf, "ls", "/")
		if err == nil && strings.Contains(got, "kept") {
			break
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("pario meta on the killed pario up's cluster file exited: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("pario ls / never listed /kept through pario meta: %v %q\n%s", err, got, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pario data on another server's directory is refused, naming both
// servers: the cluster's servers hold datafiles under the same IDs, so
// data0 serving data1's directory answered with data1's strips. Before, it
// served them.
func TestDataRefusesAnotherServersDirectory(t *testing.T) {
	dir := t.TempDir()
	first, _ := startUp(t, dir)
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
	// The cluster file is gone with the clean stop: the servers' flags.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, parioBin, "data", "--name", "data0", "--dir", filepath.Join(dir, "data1"),
		"--listen", "127.0.0.1:0", "--secret-file", filepath.Join(dir, "secret")).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("pario data --name data0 on data1's directory served it:\n%s", out)
	}
	if statusOf(err) != 1 || !strings.Contains(string(out), `holds the datafiles of I/O server "data1", not of "data0"`) {
		t.Errorf("pario data --name data0 on data1's directory: %v, want exit status 1 naming both servers:\n%s", err, out)
	}
}

// A hangup stops pario up as SIGTERM does, syncing and removing its
// cluster file; its default action killed it without either. A pario up
// started under nohup (SIGHUP ignored) keeps running.
func TestUpStopsCleanlyOnHangup(t *testing.T) {
	dir := t.TempDir()
	up, out := startUp(t, dir)
	if err := up.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Fatalf("pario up after SIGHUP: %v, want a clean stop (exit status 0)\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster")); !os.IsNotExist(err) {
		t.Errorf("cluster file after SIGHUP: %v, want it removed as a clean stop does", err)
	}

	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	cmd := exec.Command(nohup, parioBin, "up", "--dir", dir2, "--servers", "2")
	cmd.Dir = dir2 // nohup.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	waitUntil(t, "pario up under nohup to write its cluster file", func() bool {
		_, err := os.Stat(filepath.Join(dir2, "cluster"))
		return err == nil
	})
	cmd.Process.Signal(syscall.SIGHUP)
	if got := run(t, filepath.Join(dir2, "cluster"), "ls", "/"); got != "" {
		t.Errorf("ls / of a fresh cluster: %q", got)
	}
	// A stop takes well under a second here (the first part of this test).
	select {
	case err := <-exited:
		exited <- err
		t.Errorf("pario up under nohup ended on SIGHUP: %v", err)
	case <-time.After(time.Second):
	}
}

// dataServers starts I/O servers data0 and data1 on loopback and returns
// the secret file and the address of each (meta's is addr(0), data i's
// addr(i+1)) once they listen.
func dataServers(t *testing.T, dir string) (secret string, addr func(int) string) {
	t.Helper()
	secret = filepath.Join(dir, "secret")
	run(t, "", "secret", secret)
	ports := freePorts(t, 3)
	addr = func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	for i := range 2 {
		cmd := exec.Command(parioBin, "data", "--name", fmt.Sprintf("data%d", i), "--dir", filepath.Join(dir, fmt.Sprint("data", i)),
			"--listen", addr(i+1), "--secret-file", secret)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
	}
	for i := 1; i <= 2; i++ {
		waitUntil(t, "the I/O servers to listen", func() bool {
			c, err := net.Dial("tcp", addr(i))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	return secret, addr
}

// runMeta runs pario meta with --data and reports its output and exit
// status, or fails the test if it is still serving after 30 s.
func runMeta(t *testing.T, dir, secret, listen, data string, more ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, parioBin, append([]string{"meta", "--dir", filepath.Join(dir, "meta"), "--listen", listen, "--secret-file", secret,
		"--data", data}, more...)...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("pario meta --data %s served:\n%s", data, out)
	}
	return string(out), statusOf(err)
}

// A metadata server whose cluster file gives a server's name another
// server's address refuses to start, naming both: the servers hold a
// file's datafiles under the same ID, so it would read data1's strips as
// data0's. Before, it started and served them so.
func TestMetaRefusesSwappedAddresses(t *testing.T) {
	dir := t.TempDir()
	secret, addr := dataServers(t, dir)
	out, code := runMeta(t, dir, secret, addr(0), fmt.Sprintf("data0=%s,data1=%s", addr(2), addr(1)))
	if code != 1 || !strings.Contains(out, "names and addresses disagree") ||
		!strings.Contains(out, `this address serves I/O server "data1"`) || !strings.Contains(out, `not "data0"`) {
		t.Errorf("pario meta with data0 and data1's addresses swapped: exit %d, want 1 naming both:\n%s", code, out)
	}
}

// Servers that trade places in the order (their lines swapped, names and
// addresses together) are refused by the metadata server, which recorded
// the order at its first start: layouts name servers by index. Before, it
// served data1's strips as data0's.
func TestMetaRefusesReorderedServers(t *testing.T) {
	dir := t.TempDir()
	secret, addr := dataServers(t, dir)
	// A first start in the right order, stopped at once.
	meta := exec.Command(parioBin, "meta", "--dir", filepath.Join(dir, "meta"), "--listen", addr(0), "--secret-file", secret,
		"--data", fmt.Sprintf("data0=%s,data1=%s", addr(1), addr(2)))
	out := &testbin.LockedBuffer{}
	meta.Stdout, meta.Stderr = out, out
	if err := meta.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "pario meta to listen", func() bool { return strings.Contains(out.String(), "metadata server listening") })
	meta.Process.Signal(syscall.SIGTERM)
	if err := meta.Wait(); err != nil {
		t.Fatalf("first pario meta: %v\n%s", err, out.String())
	}
	got, code := runMeta(t, dir, secret, addr(0), fmt.Sprintf("data1=%s,data0=%s", addr(2), addr(1)))
	if code != 1 || !strings.Contains(got, "I/O server 0: data1 here, data0 in the database") || !strings.Contains(got, "--rename-servers") {
		t.Errorf("pario meta with data0's and data1's lines swapped: exit %d, want 1 naming the move:\n%s", code, got)
	}
}
