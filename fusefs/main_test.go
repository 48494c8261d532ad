package fusefs_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/internal/testbin"
	"github.com/pario/pario/internal/testenv"
)

// These tests mount for real: I/O servers and the metadata server run as
// separate `pario` processes, the file system is served by fusefs in the
// test process (or by `pario mount`), and ordinary tools (cp, dd, tar,
// rsync, MrBayes) run against the mount as separate processes. Every mount
// is unmounted in t.Cleanup, lazily if it must; TestMain also clears mounts
// left by a test binary that died (a stale mount blocks the next run).

var parioBin string

func TestMain(m *testing.M) {
	sweepStaleMounts()
	bin, cleanup, err := testbin.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	parioBin = bin
	code := m.Run()
	cleanup()
	sweepStaleMounts()
	os.Exit(code)
}

// sweepStaleMounts lazily unmounts pario mounts under the temporary
// directory whose serving process is gone (ENOTCONN). A mount whose
// process is alive but does not answer (stopped, or another run's test
// hung) is left alone: a stat of it would wait for ever, and it once held
// this package's tests at their start for minutes.
func sweepStaleMounts() {
	for _, dir := range parioMounts() {
		if !strings.HasPrefix(dir, os.TempDir()) {
			continue
		}
		statted := make(chan error, 1)
		go func() { _, err := os.Stat(dir); statted <- err }()
		select {
		case err := <-statted:
			if errors.Is(err, syscall.ENOTCONN) {
				if err := fusefs.Unmount(dir, true); err != nil {
					fmt.Fprintf(os.Stderr, "stale mount %s: %v\n", dir, err)
				}
			}
		case <-time.After(2 * time.Second):
			fmt.Fprintf(os.Stderr, "mount %s does not answer; left alone\n", dir)
		}
	}
}

// parioMounts lists the mount points of fuse.pario file systems.
func parioMounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		fields := strings.Fields(sc.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "fuse.pario" && len(fields) > 4 {
				out = append(out, unescapeMountinfo(fields[4]))
			}
		}
	}
	return out
}

func unescapeMountinfo(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// mountInfo returns the mountinfo line of dir, "" if it is not a mount point.
func mountInfo(dir string) string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 && unescapeMountinfo(fields[4]) == dir {
			return line
		}
	}
	return ""
}

// need skips the test when a program it runs is missing, or fails it
// under CI (testenv.SkipOrFail).
func need(t *testing.T, programs ...string) {
	t.Helper()
	var missing []string
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		missing = append(missing, "/dev/fuse")
	}
	if len(missing) == 0 {
		return
	}
	testenv.SkipOrFail(t, "missing %s (Debian: apt-get install fuse3 rsync attr mrbayes)", strings.Join(missing, ", "))
}

// spawn starts a metadata server and 4 I/O servers as processes.
func spawn(t *testing.T, metaArgs ...string) *cluster.Processes {
	t.Helper()
	return spawnIn(t, t.TempDir(), metaArgs...)
}

// spawnIn is spawn with the servers' directories in dir.
func spawnIn(t *testing.T, dir string, metaArgs ...string) *cluster.Processes {
	t.Helper()
	var logs testbin.LockedBuffer
	p, err := cluster.SpawnProcesses(context.Background(), cluster.ProcessConfig{
		Binary: parioBin, Dir: dir, DataServers: 4, MetaArgs: metaArgs, Output: &logs,
	})
	if err != nil {
		t.Fatalf("spawn cluster: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	return p
}

// dial connects a client with the mount's endpoint settings.
func dial(t *testing.T, p *cluster.Processes) *client.Client {
	t.Helper()
	c, err := p.Client(context.Background(), func(o *client.Options) { o.Endpoint = fusefs.EndpointOptions() })
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mounted is a mount served in the test process.
type mounted struct {
	*fusefs.Server
	c    *client.Client
	logs *testbin.LockedBuffer
}

// path is a path under the mount point.
func (m *mounted) path(elem ...string) string {
	return filepath.Join(append([]string{m.Dir}, elem...)...)
}

// mount mounts the cluster on a fresh directory; t.Cleanup unmounts it.
func mount(t *testing.T, p *cluster.Processes, opts fusefs.Options) *mounted {
	t.Helper()
	need(t, "fusermount3")
	return mountClient(t, dial(t, p), opts)
}

// mountClient mounts through c on a fresh directory; t.Cleanup unmounts it.
func mountClient(t *testing.T, c *client.Client, opts fusefs.Options) *mounted {
	t.Helper()
	need(t, "fusermount3")
	dir := t.TempDir()
	logs := &testbin.LockedBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := fusefs.Mount(c, dir, opts)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() { unmountOrDetach(t, srv) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mount %s logs:\n%s", dir, logs.String())
		}
	})
	return &mounted{Server: srv, c: c, logs: logs}
}

// unmountOrDetach unmounts and waits for the server to stop; a mount that
// will not go is detached lazily so that nothing stale is left.
func unmountOrDetach(t *testing.T, srv *fusefs.Server) {
	if err := srv.Unmount(); err != nil {
		t.Errorf("unmount %s: %v", srv.Dir, err)
		_ = fusefs.Unmount(srv.Dir, true)
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("%s still served 10 s after unmount", srv.Dir)
		_ = fusefs.Unmount(srv.Dir, true)
	}
	if mountInfo(srv.Dir) != "" {
		t.Errorf("%s still mounted", srv.Dir)
		_ = fusefs.Unmount(srv.Dir, true)
	}
}

// sh runs a bash script (never with its working directory on a mount
// served by this process: see go-fuse's notes on fork/exec) and returns
// its combined output; it fails the test on a non-zero exit.
func sh(t *testing.T, script string) string {
	t.Helper()
	out, err := shErr(script)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

func shErr(script string) (string, error) {
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// makeTree writes a directory tree with files of awkward sizes (empty,
// around strip boundaries, several stripes), modes and past mtimes.
func makeTree(t *testing.T, root string) {
	t.Helper()
	sizes := []int{0, 1, 4095, 65535, 65536, 65537, 300001, 1<<20 + 17, 3 << 20}
	dirs := []string{"", "a", "a/b", "a/b/c", "empty", "z"}
	when := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if d == "empty" {
			continue
		}
		for j, size := range sizes {
			if (i+j)%2 == 1 && size > 1<<20 {
				continue
			}
			p := filepath.Join(root, d, fmt.Sprintf("f%d-%d.dat", j, size))
			writeFile(t, p, randomBytes(t, size))
			mode := fs.FileMode(0o644)
			if j%3 == 0 {
				mode = 0o600
			}
			if j%4 == 1 {
				mode = 0o755
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			mt := when.Add(time.Duration(i*100+j) * time.Minute)
			if err := os.Chtimes(p, mt, mt); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// sameTree checks that dst holds what src holds: the same names, kinds,
// contents, permission bits and file mtimes (to the second).
func sameTree(t *testing.T, src, dst string) {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		seen[rel] = true
		q := filepath.Join(dst, rel)
		si, err := d.Info()
		if err != nil {
			return err
		}
		di, err := os.Stat(q)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if si.IsDir() != di.IsDir() {
			t.Errorf("%s: directory %v in source, %v in copy", rel, si.IsDir(), di.IsDir())
			return nil
		}
		if si.Mode().Perm() != di.Mode().Perm() && rel != "." {
			t.Errorf("%s: mode %v, copy has %v", rel, si.Mode().Perm(), di.Mode().Perm())
		}
		if si.IsDir() {
			return nil
		}
		if !si.ModTime().Truncate(time.Second).Equal(di.ModTime().Truncate(time.Second)) {
			t.Errorf("%s: mtime %v, copy has %v", rel, si.ModTime(), di.ModTime())
		}
		if si.Size() != di.Size() {
			t.Errorf("%s: %d bytes, copy has %d", rel, si.Size(), di.Size())
			return nil
		}
		if a, b := readFile(t, p), readFile(t, q); !bytes.Equal(a, b) {
			t.Errorf("%s: contents differ", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dst, p); !seen[rel] {
			t.Errorf("%s: in the copy only", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// datafiles counts the files' datafiles on the I/O servers (their List:
// Statfs's count is cached for a second; a walk of their directories
// misses datafiles never written, which have no file), leaving out those
// the metadata server precreated for files to come. The pool is read
// after the listing: its records precede their datafiles, so every pooled
// datafile the listing saw is still recorded then, or has become a file's.
func datafiles(t *testing.T, p *cluster.Processes) int {
	t.Helper()
	c := dial(t, p)
	seen := map[[2]uint64]bool{} // server index, ID
	for i := range p.File.Data {
		dfs, err := c.ListDatafiles(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dfs {
			seen[[2]uint64{uint64(i), d.ID}] = true
		}
	}
	pooled, err := c.Pooled(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pooled {
		for _, srv := range pl.Servers {
			delete(seen, [2]uint64{uint64(srv), uint64(pl.ID)})
		}
	}
	return len(seen)
}

// steadyDatafiles counts the datafiles once the metadata server's reaper
// has removed those of files removed before (it works after answering):
// the count no longer changes over 200 ms.
func steadyDatafiles(t *testing.T, p *cluster.Processes) int {
	t.Helper()
	n := datafiles(t, p)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
		m := datafiles(t, p)
		if m == n {
			return n
		}
		n = m
	}
	t.Fatalf("datafiles still changing after 10 s: %d", n)
	return n
}

// eventually retries check until it returns nil or 10 s pass.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	eventuallyWithin(t, 10*time.Second, what, check)
}

// eventuallyWithin is eventually with its own limit.
func eventuallyWithin(t *testing.T, limit time.Duration, what string, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}
