package fusefs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pario/pario/cluster"
)

// The metadata server answers a create before its fdatasync
// (server/meta/durable.go); fsync of the new file, or of its directory,
// through the mount returns only once the create is durable. The
// cluster's sync interval is an hour, so nothing else syncs it meanwhile
// (but the background work that syncs at once: a pool refill, a lease's
// end record). Batches of changes answered by the mount (the mtime its
// fsync records, attrhere.go) wait long unless something waits for them,
// so the fsync must send them itself.
func TestFsyncMakesNamesDurable(t *testing.T) {
	slowBatches(t)
	lc, err := cluster.Start(context.Background(), cluster.Config{Dir: t.TempDir(), DataServers: 2, MetaSyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	st := lc.Meta.Store()
	m := mountLocal(t, lc)
	waitLease(t, &mounted{Server: m}) // so that d is delegated, and the mtime answered here

	if err := os.Mkdir(filepath.Join(m.Dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(m.Dir, "d", "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("data"); err != nil {
		t.Fatal(err)
	}
	_, unsynced, _ := st.SyncStats()
	t.Logf("before fsync: %d unsynced transactions", unsynced)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if pending := m.Stats().PendingHere; pending != 0 {
		t.Fatalf("after fsync of the file: %d changes answered by the mount not sent (its mtime), want 0", pending)
	}
	if _, unsynced, failed := st.SyncStats(); unsynced != 0 || failed {
		t.Fatalf("after fsync of the file: %d unsynced transactions (failed %v), want 0", unsynced, failed)
	}

	if err := os.Mkdir(filepath.Join(m.Dir, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(filepath.Join(m.Dir, "d"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync of a directory: %v", err)
	}
	if _, unsynced, failed := st.SyncStats(); unsynced != 0 || failed {
		t.Fatalf("after fsync of the directory: %d unsynced transactions (failed %v), want 0", unsynced, failed)
	}
}
