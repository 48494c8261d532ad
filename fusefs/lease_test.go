package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// countOps counts the lookups and getattrs a mount serves: what the
// kernel did not answer from its cache.
type countOps struct{ n atomic.Int64 }

func (c *countOps) FuseOp(op string, _ time.Duration, _ syscall.Errno) {
	if op == "lookup" || op == "getattr" {
		c.n.Add(1)
	}
}

// metaLookups counts a client's calls that look one entry up on the
// metadata server (by name or by ID).
type metaLookups struct{ n atomic.Int64 }

func (m *metaLookups) CallDone(op uint8, _, _ int, _ time.Duration, _ error) {
	if op == meta.OpLookup.Code || op == meta.OpGetByID.Code {
		m.n.Add(1)
	}
}

func waitLease(t *testing.T, m *mounted) {
	t.Helper()
	eventually(t, "the mount holds a cache lease", func() error {
		if m.Lease() <= 0 {
			return errors.New("no lease")
		}
		return nil
	})
}

// waitReleased waits until every file closed through m has been released
// by the kernel, which sends the release after close(2) has returned: an
// unlink of a file still open here goes to the metadata server, since its
// data must outlive the name.
func waitReleased(t *testing.T, m *mounted) {
	t.Helper()
	eventually(t, "the mount's closed files released", func() error {
		if n := m.Stats().OpenFiles; n != 0 {
			return fmt.Errorf("%d files open", n)
		}
		return nil
	})
}

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

func statErr(p string) error {
	_, err := os.Stat(p)
	return err
}

// The rule (docs/mount.md): once a namespace or attribute change made
// through one mount has returned, another mount's next stat or open
// shows it, although both cache names and attributes. Each case warms
// B's caches, changes through A, and checks B at once, with no retry,
// many times over, so that a change B shows late fails the test.
func TestLeaseNoStaleAcrossMounts(t *testing.T) {
	p := spawn(t)
	var ops countOps
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{Observer: &ops})
	waitLease(t, a)
	waitLease(t, b)

	// B caches: stats of a name it has seen ask nothing of the mount.
	writeFile(t, a.path("cached"), []byte("x"))
	if err := statErr(b.path("cached")); err != nil {
		t.Fatal(err)
	}
	before := ops.n.Load()
	for range 10 {
		if err := statErr(b.path("cached")); err != nil {
			t.Fatal(err)
		}
	}
	if n := ops.n.Load() - before; n != 0 {
		t.Errorf("10 stats of a cached name sent %d lookups or getattrs to the mount, want 0", n)
	}

	cases := []struct {
		name   string
		setup  func(t *testing.T, i int) // through A
		warm   []string                  // names B stats first
		change func(t *testing.T, i int) // through A
		check  func(t *testing.T, i int) error
	}{
		{
			name:  "create",
			warm:  []string{"new%d"},
			setup: func(*testing.T, int) {},
			change: func(t *testing.T, i int) {
				writeFile(t, a.path(fmt.Sprintf("new%d", i)), []byte("n"))
			},
			check: func(t *testing.T, i int) error { return statErr(b.path(fmt.Sprintf("new%d", i))) },
		},
		{
			name:  "chmod",
			warm:  []string{"mode%d"},
			setup: func(t *testing.T, i int) { writeFile(t, a.path(fmt.Sprintf("mode%d", i)), []byte("m")) },
			change: func(t *testing.T, i int) {
				if err := os.Chmod(a.path(fmt.Sprintf("mode%d", i)), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, i int) error {
				st, err := os.Stat(b.path(fmt.Sprintf("mode%d", i)))
				if err != nil {
					return err
				}
				if st.Mode().Perm() != 0o600 {
					return fmt.Errorf("mode %v, want 0600", st.Mode().Perm())
				}
				return nil
			},
		},
		{
			name: "rename over",
			warm: []string{"src%d", "dst%d"},
			setup: func(t *testing.T, i int) {
				writeFile(t, a.path(fmt.Sprintf("src%d", i)), []byte("source"))
				writeFile(t, a.path(fmt.Sprintf("dst%d", i)), []byte("target"))
			},
			change: func(t *testing.T, i int) {
				if err := os.Rename(a.path(fmt.Sprintf("src%d", i)), a.path(fmt.Sprintf("dst%d", i))); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, i int) error {
				if err := statErr(b.path(fmt.Sprintf("src%d", i))); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("old name: %v, want ENOENT", err)
				}
				if got, want := ino(t, b.path(fmt.Sprintf("dst%d", i))), ino(t, a.path(fmt.Sprintf("dst%d", i))); got != want {
					return fmt.Errorf("new name is inode %d, want %d", got, want)
				}
				if got := string(readFile(t, b.path(fmt.Sprintf("dst%d", i)))); got != "source" {
					return fmt.Errorf("new name reads %q", got)
				}
				return nil
			},
		},
		{
			name:  "unlink",
			warm:  []string{"gone%d"},
			setup: func(t *testing.T, i int) { writeFile(t, a.path(fmt.Sprintf("gone%d", i)), []byte("g")) },
			change: func(t *testing.T, i int) {
				if err := os.Remove(a.path(fmt.Sprintf("gone%d", i))); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, i int) error {
				if err := statErr(b.path(fmt.Sprintf("gone%d", i))); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("stat: %v, want ENOENT", err)
				}
				if _, err := os.ReadFile(b.path(fmt.Sprintf("gone%d", i))); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("open: %v, want ENOENT", err)
				}
				return nil
			},
		},
		{
			name:  "truncate",
			warm:  []string{"trunc%d"},
			setup: func(t *testing.T, i int) { writeFile(t, a.path(fmt.Sprintf("trunc%d", i)), make([]byte, 1000)) },
			change: func(t *testing.T, i int) {
				if err := os.Truncate(a.path(fmt.Sprintf("trunc%d", i)), 10); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, i int) error {
				st, err := os.Stat(b.path(fmt.Sprintf("trunc%d", i)))
				if err != nil {
					return err
				}
				if st.Size() != 10 {
					return fmt.Errorf("size %d, want 10", st.Size())
				}
				return nil
			},
		},
		{
			name:  "write and close",
			warm:  []string{"grow%d"},
			setup: func(t *testing.T, i int) { writeFile(t, a.path(fmt.Sprintf("grow%d", i)), []byte("short")) },
			change: func(t *testing.T, i int) {
				appendTo(t, a.path(fmt.Sprintf("grow%d", i)), " and longer")
			},
			check: func(t *testing.T, i int) error {
				st, err := os.Stat(b.path(fmt.Sprintf("grow%d", i)))
				if err != nil {
					return err
				}
				if st.Size() != 16 {
					return fmt.Errorf("size %d, want 16", st.Size())
				}
				if got := string(readFile(t, b.path(fmt.Sprintf("grow%d", i)))); got != "short and longer" {
					return fmt.Errorf("reads %q", got)
				}
				return nil
			},
		},
		{
			name: "rename directory",
			warm: []string{"d%d/x"},
			setup: func(t *testing.T, i int) {
				if err := os.Mkdir(a.path(fmt.Sprintf("d%d", i)), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, a.path(fmt.Sprintf("d%d", i), "x"), []byte("x"))
			},
			change: func(t *testing.T, i int) {
				if err := os.Rename(a.path(fmt.Sprintf("d%d", i)), a.path(fmt.Sprintf("e%d", i))); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, i int) error {
				if err := statErr(b.path(fmt.Sprintf("d%d", i), "x")); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("old path: %v, want ENOENT", err)
				}
				return statErr(b.path(fmt.Sprintf("e%d", i), "x"))
			},
		},
		{
			name: "rmdir",
			warm: []string{"r%d"},
			setup: func(t *testing.T, i int) {
				if err := os.Mkdir(a.path(fmt.Sprintf("r%d", i)), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			change: func(t *testing.T, i int) {
				if err := os.Remove(a.path(fmt.Sprintf("r%d", i))); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, i int) error {
				if err := statErr(b.path(fmt.Sprintf("r%d", i))); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("stat: %v, want ENOENT", err)
				}
				return nil
			},
		},
	}
	const rounds = 15
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range rounds {
				tc.setup(t, i)
				for _, w := range tc.warm {
					_ = statErr(b.path(fmt.Sprintf(w, i))) // B caches what it sees
				}
				tc.change(t, i)
				if err := tc.check(t, i); err != nil {
					t.Fatalf("round %d: B right after A's change: %v", i, err)
				}
			}
		})
	}
	if b.Lease() <= 0 {
		t.Error("B lost its lease during the test: the checks above proved nothing about caching")
	}
}

// A mount whose lease lapses (metadata server gone) stops trusting its
// caches: stat asks again, and fails as an uncached mount's would.
func TestLeaseLapseStopsCaching(t *testing.T) {
	t.Setenv("PARIO_LEASE", "3s") // the servers' environment: lapse soon
	p := spawn(t)
	var ops countOps
	m := mount(t, p, fusefs.Options{Observer: &ops, OpTimeout: 2 * time.Second})
	waitLease(t, m)
	writeFile(t, m.path("f"), []byte("x"))
	if err := statErr(m.path("f")); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.Lease() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("lease still %v 10 s after the metadata server died", m.Lease())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The kernel's timeouts ended with the lease: this stat reaches the mount.
	before := ops.n.Load()
	err := statErr(m.path("f"))
	if ops.n.Load() == before {
		t.Fatalf("stat after the lease lapsed was answered from the kernel's cache (%v)", err)
	}
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("stat with the metadata server down: %v, want EIO", err)
	}
	// Back: the mount takes a new lease (after the restarted server's grace).
	if err := p.StartMeta(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitLease(t, m)
	if err := statErr(m.path("f")); err != nil {
		t.Fatal(err)
	}
}

// ls -l through one mount right after changes through another shows them:
// the attributes READDIRPLUS gives the kernel come from a page read after
// the change, or, for a change that arrived after the page was read, are
// left to a lookup. Each round warms B's caches with a listing first, and
// the listing after the change is checked once, with no retry.
func TestLongListingNoStaleAcrossMounts(t *testing.T) {
	need(t, "ls")
	p := spawn(t)
	var ops countOps
	var metaCalls metaLookups
	a := mount(t, p, fusefs.Options{})
	cb, err := p.Client(context.Background(), func(o *client.Options) {
		o.Endpoint = fusefs.EndpointOptions()
		o.Observe = func(service, _ string, _ wire.OpTable) wire.CallObserver {
			if service == "meta" {
				return &metaCalls
			}
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cb.Close() })
	b := mountClient(t, cb, fusefs.Options{Observer: &ops})
	waitLease(t, a)
	waitLease(t, b)
	if err := os.Mkdir(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	const files = 50
	for i := range files {
		writeFile(t, a.path("d", fmt.Sprintf("f%02d", i)), []byte("x"))
	}
	// ls -ln: mode, links, uid, gid, size, date (3 fields), name.
	fields := func(out string) map[string][]string {
		m := map[string][]string{}
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) == 9 {
				m[f[8]] = f
			}
		}
		return m
	}
	for round := range 10 {
		sh(t, "ls -ln "+b.path("d"))
		mode := []os.FileMode{0o600, 0o640}[round%2]
		if err := os.Chmod(a.path("d", "f00"), mode); err != nil {
			t.Fatal(err)
		}
		size := round + 2
		writeFile(t, a.path("d", "f01"), bytes.Repeat([]byte("y"), size))
		old, renamed := fmt.Sprintf("f%02d", files-1+round), fmt.Sprintf("f%02d", files+round)
		if err := os.Rename(a.path("d", old), a.path("d", renamed)); err != nil {
			t.Fatal(err)
		}
		// New names, which B's kernel has never seen: their attributes
		// come with the listing, not from a lookup each.
		const fresh = 10
		for i := range fresh {
			writeFile(t, a.path("d", fmt.Sprintf("n%d-%d", round, i)), []byte("new"))
		}
		before, beforeMeta := ops.n.Load(), metaCalls.n.Load()
		got := fields(sh(t, "ls -ln "+b.path("d")))
		for i := range fresh {
			if f := got[fmt.Sprintf("n%d-%d", round, i)]; f == nil || f[4] != "3" {
				t.Errorf("round %d: n%d-%d listed as %v, want 3 bytes", round, round, i, f)
			}
		}
		if f := got["f00"]; f == nil || f[0] != "-"+mode.String()[1:] {
			t.Errorf("round %d: f00 listed as %v after chmod %o through the other mount", round, f, mode)
		}
		if f := got["f01"]; f == nil || f[4] != fmt.Sprint(size) {
			t.Errorf("round %d: f01 listed as %v after writing %d bytes through the other mount", round, f, size)
		}
		if got[old] != nil || got[renamed] == nil {
			t.Errorf("round %d: after renaming %s to %s, listed %v and %v", round, old, renamed, got[old], got[renamed])
		}
		// The three changed entries may be looked up (a change that came
		// after the page was read is left to a lookup), the new ones not.
		if n := ops.n.Load() - before; n >= fresh {
			t.Errorf("round %d: ls -l after %d new files sent %d lookups or getattrs to the mount, want fewer (READDIRPLUS gives their attributes)", round, fresh, n)
		}
		if n := metaCalls.n.Load() - beforeMeta; n >= fresh {
			t.Errorf("round %d: ls -l of %d entries made %d lookups on the metadata server, want fewer (the attributes come with the listing)", round, len(got), n)
		}
	}
}

// TestShortLeaseIsRenewedBeforeItLapses: with a lease of a few seconds
// (PARIO_LEASE, as tests and impatient sites set it), the mount renews
// its lease well before it lapses, rather than just after (when it would
// drop every delegation's use and cached attribute for a moment).
func TestShortLeaseIsRenewedBeforeItLapses(t *testing.T) {
	t.Setenv("PARIO_LEASE", "3s")
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	least := time.Hour
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		least = min(least, a.Lease())
	}
	if least < 100*time.Millisecond {
		t.Fatalf("the lease left fell to %v between renewals; want it renewed with time to spare", least)
	}
}
