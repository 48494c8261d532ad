package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/wire"
)

// Small files, as tar x makes them (scripts/bench-tar.sh): create, write,
// futimens, fchown, fchmod, close.

// tar x through one mount: a second mount sees every file's data, mode
// and the mtime tar set right after, and so does a mount made afterwards;
// as root, tar's chowns to the owner files already have cost no metadata
// request.
func TestTarSmallFilesCloseToOpen(t *testing.T) {
	need(t, "tar")
	p := spawn(t)
	src := t.TempDir()
	makeTree(t, filepath.Join(src, "tree"))
	archive := filepath.Join(t.TempDir(), "tree.tar")
	sh(t, "tar cf "+archive+" -C "+src+" tree")

	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	sh(t, "tar xf "+archive+" -C "+a.Dir)
	sameTree(t, filepath.Join(src, "tree"), b.path("tree"))
	if os.Geteuid() == 0 {
		// tar chowns every file to its archived owner, root's own.
		if n := a.Stats().NoopChowns; n == 0 {
			t.Error("no chown that changed nothing was answered by the mount")
		}
	}
	if err := a.Unmount(); err != nil {
		t.Fatal(err)
	}
	c := mount(t, p, fusefs.Options{})
	sameTree(t, filepath.Join(src, "tree"), c.path("tree"))
}

// A chown the mount answers alone is one that would change nothing; any
// other reaches the metadata server: after another mount gave the file
// away, with a setuid bit to clear, and a chmod after writes keeps the
// data.
func TestNoopChownOnlyWhenNothingChanges(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	uid, gid := os.Geteuid(), os.Getegid()

	f, err := os.OpenFile(a.path("f"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := randomBytes(t, 70001)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	owner := func(m *mounted) (uint32, uint32, os.FileMode) {
		t.Helper()
		st, err := os.Stat(m.path("f"))
		if err != nil {
			t.Fatal(err)
		}
		s := st.Sys().(*syscall.Stat_t)
		return s.Uid, s.Gid, st.Mode()
	}

	before := a.Stats().NoopChowns
	if err := f.Chown(uid, gid); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().NoopChowns; got != before+1 {
		t.Errorf("a chown to the owner the file has: %d answered by the mount, want %d", got-before, 1)
	}

	if uid == 0 {
		// B gives the file away; A's chown back must not be taken for a
		// no-op on what A read before.
		if err := os.Chown(b.path("f"), 4321, 4321); err != nil {
			t.Fatal(err)
		}
		if err := f.Chown(0, 0); err != nil {
			t.Fatal(err)
		}
		if u, g, _ := owner(b); u != 0 || g != 0 {
			t.Errorf("after A's chown back to root, B sees %d:%d", u, g)
		}
	}

	// A chown that clears setuid is a change.
	if err := f.Chmod(0o4755); err != nil {
		t.Fatal(err)
	}
	if err := f.Chown(uid, gid); err != nil {
		t.Fatal(err)
	}
	if _, _, m := owner(b); m&os.ModeSetuid != 0 || m.Perm() != 0o755 {
		t.Errorf("after a chown of a setuid file, B sees mode %v, want -rwxr-xr-x", m)
	}

	// A directory, as tar leaves it: times, owner, mode, by name.
	if err := os.Mkdir(a.path("d"), 0o700); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	before = a.Stats().NoopChowns
	if err := os.Chtimes(a.path("d"), when, when); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(a.path("d"), uid, gid); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().NoopChowns; got != before+1 {
		t.Errorf("a directory's chown to the owner it has after utimes: %d answered by the mount, want 1", got-before)
	}
	if err := os.Chmod(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if uid == 0 {
		if err := os.Chown(b.path("d"), 4321, 4321); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(a.path("d"), 0, 0); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(b.path("d"))
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Sys().(*syscall.Stat_t); s.Uid != 0 || s.Gid != 0 || st.Mode().Perm() != 0o755 || !st.ModTime().Equal(when) {
			t.Errorf("B sees the directory as %d:%d %v %v after A's chown back", s.Uid, s.Gid, st.Mode(), st.ModTime())
		}
	}

	// chmod after the writes, then close: data and mode are B's.
	if err := f.Chmod(0o640); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, m := owner(b); m.Perm() != 0o640 {
		t.Errorf("B sees mode %v after chmod 640", m)
	}
	if got := readFile(t, b.path("f")); !bytes.Equal(got, data) {
		t.Errorf("B reads %d bytes, %d written", len(got), len(data))
	}
}

// A `pario mount` killed with SIGKILL after close and fsync loses nothing
// it acknowledged: data, mode and the mtime set, read back with the
// native client.
func TestKilledMountLosesNothingSynced(t *testing.T) {
	p := spawn(t)
	dir := t.TempDir()
	cmd, _, exited := mountCommand(t, dir, "--cluster", p.ClusterFile, "mount")

	mtime := time.Date(2025, 7, 1, 8, 30, 0, 123456789, time.UTC)
	files := map[string][]byte{}
	for i, size := range []int{0, 1, 4095, 65537, 300001} {
		name := string(rune('a'+i)) + ".dat"
		data := randomBytes(t, size)
		files[name] = data
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := f.Chown(os.Geteuid(), os.Getegid()); err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(0o644); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if out, err := exec.Command(parioBin, "umount", dir).CombinedOutput(); err != nil {
		t.Logf("pario umount of the dead mount: %v\n%s", err, out)
	}

	c := dial(t, p)
	ctx := context.Background()
	for name, want := range files {
		a, err := c.Lookup(ctx, "/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if a.Mode&0o7777 != 0o644 || a.Mtime != mtime.UnixNano() {
			t.Errorf("%s: mode %o, mtime %v; want 644, %v", name, a.Mode&0o7777, time.Unix(0, a.Mtime).UTC(), mtime)
		}
		f, err := c.OpenAttr("/"+name, a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes read back, %d written", name, len(got), len(want))
		}
	}
}

// callCounter counts the calls a client makes, by service and op name.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) observe(service, _ string, ops wire.OpTable) wire.CallObserver {
	return callObserver{c, service, ops}
}

// sizeRequests counts the size requests to the I/O servers: one per
// datafile, or one batch per server.
func (c *callCounter) sizeRequests() int {
	return c.get("data size") + c.get("data usageBatch")
}

func (c *callCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

type callObserver struct {
	c       *callCounter
	service string
	ops     wire.OpTable
}

func (o callObserver) CallDone(op uint8, _, _ int, _ time.Duration, _ error) {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if o.c.n == nil {
		o.c.n = map[string]int{}
	}
	o.c.n[o.service+" "+o.ops.Name(op)]++
}

// mountCounting mounts the cluster with a client whose calls calls counts.
func mountCounting(t *testing.T, p *cluster.Processes, calls *callCounter) *mounted {
	t.Helper()
	need(t, "fusermount3")
	c, err := p.Client(context.Background(), func(o *client.Options) {
		o.Endpoint = fusefs.EndpointOptions()
		o.Observe = calls.observe
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv, err := fusefs.Mount(c, t.TempDir(), fusefs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmountOrDetach(t, srv) })
	return &mounted{Server: srv, c: c}
}

// READDIRPLUS takes the attributes of a listing's entries from the
// metadata server's page and their sizes a page at a time: ls -l and
// rm -rf of a directory cost no metadata lookup per entry.
func TestReaddirPlusLooksNothingUp(t *testing.T) {
	need(t, "ls", "rm")
	p := spawn(t)
	const n = 60
	native := dial(t, p)
	ctx := context.Background()
	if err := native.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f, err := native.Create(ctx, fmt.Sprintf("/d/f%02d", i), client.CreateOptions{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, i), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var calls callCounter
	m := mountCounting(t, p, &calls)
	waitLease(t, m)

	out := sh(t, "ls -l "+m.path("d"))
	sizes := map[string]bool{}
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 9 {
			sizes[f[8]+" "+f[4]] = true
		}
	}
	for i := range n {
		if k := fmt.Sprintf("f%02d %d", i, i); !sizes[k] {
			t.Errorf("ls -l does not show %s (name size)", k)
		}
	}
	if got := calls.get("meta lookup"); got > 2 {
		t.Errorf("ls -l of %d files made %d metadata lookups, want at most 2 (the directory's)", n, got)
	}
	// The page's sizes: one usageBatch per I/O server, no size request
	// per file.
	if got := calls.get("data size"); got > 0 {
		t.Errorf("ls -l of %d files sent %d size requests, want none (a usageBatch per server)", n, got)
	}
	batches0 := calls.get("data usageBatch")
	if batches0 < 1 || batches0 > 4 {
		t.Errorf("ls -l of %d files sent %d usageBatch requests, want 1 to 4 (one per server)", n, batches0)
	}
	sh(t, "rm -rf "+m.path("d"))
	if got := calls.get("meta lookup"); got > 4 {
		t.Errorf("ls -l and rm -rf of %d files made %d metadata lookups, want at most 4", n, got)
	}
	// rm -rf lists the directory twice: the second listing reuses the
	// first's sizes, so at most one listing's batches more.
	if got := calls.get("data usageBatch") - batches0; got > 4 {
		t.Errorf("rm -rf of %d files sent %d usageBatch requests, want at most 4", n, got)
	}
	if got := calls.get("data size"); got > 0 {
		t.Errorf("rm -rf of %d files sent %d size requests, want none", n, got)
	}
	if _, err := native.Lookup(ctx, "/d"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after rm -rf: %v", err)
	}
}

// TestListingReadTwiceInARow: rm -r opens every directory twice in a
// row; the second listing uses the first's page (dir.go,
// recentListings), and never once the directory changed, here or on
// another mount.
func TestListingReadTwiceInARow(t *testing.T) {
	_, a, b := twoMounts(t)
	dir := a.path("d")
	makeFiles(t, dir, 20)
	names := func() []string {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	before := a.Stats().ListingsReused
	first, second := names(), names()
	if got := a.Stats().ListingsReused - before; got != 1 {
		t.Errorf("%d listings reused for two in a row, want 1", got)
	}
	if strings.Join(first, " ") != strings.Join(second, " ") || len(first) != 20 {
		t.Fatalf("listed %v, then %v; want the same 20 names", first, second)
	}
	// A name another mount adds shows at once.
	if err := os.WriteFile(b.path("d", "new"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 21 || !slices.Contains(got, "new") {
		t.Fatalf("after another mount's create: %v, want 21 names with new", got)
	}
	// A name this mount removes goes at once.
	if err := os.Remove(a.path("d", "f000")); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 20 || slices.Contains(got, "f000") {
		t.Fatalf("after this mount's unlink: %v, want 20 names without f000", got)
	}
	// And ls -l's attributes are the files' (a page reused or not).
	out := sh(t, "ls -ln "+dir)
	files := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 {
			continue
		}
		if files++; f[4] != "1" {
			t.Fatalf("ls -ln line %q: want a 1-byte file", line)
		}
	}
	if files != 20 {
		t.Fatalf("ls -ln listed %d files, want 20:\n%s", files, out)
	}
}

// countOp counts the FUSE requests of one kind.
type countOp struct {
	op string
	n  atomic.Int64
}

func (c *countOp) FuseOp(op string, _ time.Duration, _ syscall.Errno) {
	if op == c.op {
		c.n.Add(1)
	}
}

// TestChownAsksNoAttributes: the kernel sends no GETATTR before a chown
// (the mount takes HANDLE_KILLPRIV_V2 and clears setuid bits itself), and
// tar's fchown of a file it just wrote, to the owner it has, is still
// answered by the mount alone.
func TestChownAsksNoAttributes(t *testing.T) {
	p := spawn(t)
	getattrs := &countOp{op: "getattr"}
	a := mount(t, p, fusefs.Options{Observer: getattrs})
	waitLease(t, a)
	if err := os.Mkdir(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", "d"} { // a directory the mount holds, and one it does not
		f, err := os.OpenFile(a.path(dir, "f"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(randomBytes(t, 5000)); err != nil {
			t.Fatal(err)
		}
		before, chowns := getattrs.n.Load(), a.Stats().NoopChowns
		if err := f.Chown(os.Getuid(), os.Getgid()); err != nil {
			t.Fatal(err)
		}
		if n := getattrs.n.Load() - before; n != 0 {
			t.Errorf("%q: %d GETATTRs for a chown", dir, n)
		}
		if n := a.Stats().NoopChowns - chowns; n != 1 {
			t.Errorf("%q: %d chowns answered by the mount, want 1", dir, n)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
