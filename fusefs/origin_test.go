package fusefs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
)

// mountLocal mounts an in-process cluster, whose metadata store the test
// can look into.
func mountLocal(t *testing.T, lc *cluster.Local) *fusefs.Server {
	t.Helper()
	need(t, "fusermount3")
	o := fusefs.EndpointOptions()
	o.Protection = lc.Protection
	c, err := client.Dial(context.Background(), client.Options{Meta: lc.Meta.Addr, Secret: lc.Secret, Endpoint: o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv, err := fusefs.Mount(c, t.TempDir(), fusefs.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() { unmountOrDetach(t, srv) })
	eventually(t, "the mount holds a cache lease", func() error {
		if srv.Lease() <= 0 {
			return errors.New("no lease")
		}
		return nil
	})
	return srv
}

// A mount's own creates and unlinks are answered without waiting for
// that mount's acknowledgement of them (its kernel applied them): with
// one mount, no acknowledgement is awaited at all. (A write's mtime,
// recorded at close on the mount's own account, is awaited: the files
// stay empty.) With a second mount, each change waits for the second's,
// and the second sees it at once.
func TestOwnChangesNotAwaited(t *testing.T) {
	lc, err := cluster.Start(context.Background(), cluster.Config{Dir: t.TempDir(), DataServers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	st := lc.Meta.Store()
	a := mountLocal(t, lc)
	const n = 20
	before := st.AcksAwaited()
	for i := range n {
		p := fmt.Sprintf("%s/f%d", a.Dir, i)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := st.AcksAwaited() - before; got != 0 {
		t.Errorf("one mount, %d creates and unlinks: %d acknowledgements awaited, want 0", n, got)
	}

	b := mountLocal(t, lc)
	before = st.AcksAwaited()
	for i := range n {
		pa, pb := fmt.Sprintf("%s/g%d", a.Dir, i), fmt.Sprintf("%s/g%d", b.Dir, i)
		if _, err := os.Stat(pb); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("B before A's create: %v", err)
		}
		if err := os.WriteFile(pa, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(pb); err != nil {
			t.Fatalf("B after A's create: %v", err)
		}
		if err := os.Remove(pa); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(pb); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("B after A's unlink: %v", err)
		}
	}
	if got := st.AcksAwaited() - before; got < 2*n {
		t.Errorf("two mounts, %d creates and unlinks through A: %d acknowledgements awaited, want at least %d (B's)", n, got, 2*n)
	}
}
