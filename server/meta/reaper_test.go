package meta

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pario/pario/dist"
	"go.etcd.io/bbolt"
)

// eventually fails the test unless cond holds within 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

// pendingRecords reads the removal records: ID -> servers.
func pendingRecords(t *testing.T, s *Store) map[FileID][]uint32 {
	t.Helper()
	out := map[FileID][]uint32{}
	for cookie := []byte(nil); ; {
		p, err := s.Scan(ctx, cookie, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Pending {
			out[r.ID] = r.Servers
		}
		if p.Done {
			return out
		}
		cookie = p.Cookie
	}
}

// A remove, and a rename over a file, record the removal in their
// transaction; the reaper then removes the datafiles and the records.
// A file with another name, a directory and a stuffed file's unmade
// datafiles are not removed.
func TestReaperRemovesDatafiles(t *testing.T) {
	fd := newFakeData(4)
	s := openT(t, Options{Servers: 4, Datafiles: fd, Stuffing: true})
	plain := okAttr(t)(s.Create(ctx, "/plain", 0o644, dist.Layout{Dist: "simple_stripe"}))
	plain = okAttr(t)(s.Unstuff(ctx, plain.ID))
	stuffed := okAttr(t)(s.Create(ctx, "/stuffed", 0o644, dist.Layout{}))
	target := okAttr(t)(s.Create(ctx, "/target", 0o644, dist.Layout{Dist: "basic"}))
	okAttr(t)(s.Create(ctx, "/src", 0o644, dist.Layout{Dist: "basic"}))
	linked := okAttr(t)(s.Create(ctx, "/linked", 0o644, dist.Layout{Dist: "basic"}))
	okAttr(t)(s.Link(ctx, linked.ID, "/other"))

	for _, p := range []string{"/plain", "/stuffed", "/linked"} {
		if _, err := s.Remove(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Rename(ctx, "/src", "/target"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []Attr{plain, stuffed, target} {
		eventually(t, "datafiles of a removed file are gone", func() bool { return len(fd.where(a.ID)) == 0 })
	}
	eventually(t, "removal records are gone", func() bool { return len(pendingRecords(t, s)) == 0 })
	if got := fd.where(linked.ID); len(got) != 1 {
		t.Errorf("a file with a name left lost its datafiles: on %v", got)
	}
	// The gauge moves just after the commit that deletes the records.
	eventually(t, "RemovalStats says 0 pending, 6 reaped", func() bool {
		pending, reaped := s.RemovalStats()
		return pending == 0 && reaped == 4+1+1
	})
}

// WithKeepData leaves the datafiles to the caller: no record, nothing
// removed.
func TestKeepDataRecordsNothing(t *testing.T) {
	fd := newFakeData(2)
	s := openT(t, Options{Servers: 2, Datafiles: fd})
	a := okAttr(t)(s.Create(ctx, "/f", 0o644, dist.Layout{}))
	b := okAttr(t)(s.Create(ctx, "/g", 0o644, dist.Layout{}))
	okAttr(t)(s.Create(ctx, "/h", 0o644, dist.Layout{}))
	if _, err := s.Remove(WithKeepData(ctx), "/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename(WithKeepData(ctx), "/h", "/g"); err != nil {
		t.Fatal(err)
	}
	if got := pendingRecords(t, s); len(got) != 0 {
		t.Fatalf("records after removals that keep their data: %v", got)
	}
	time.Sleep(50 * time.Millisecond)
	if len(fd.where(a.ID)) != 2 || len(fd.where(b.ID)) != 2 {
		t.Fatalf("kept datafiles were removed: %v, %v", fd.where(a.ID), fd.where(b.ID))
	}
}

// rm while an I/O server is down: the remove is answered at once, the
// down server's part of the record stays (the others' datafiles go), and
// once the server is back the reaper's retry removes its datafile too.
// Before the reaper, the client removed the datafiles and a down
// server's stayed behind for ever.
func TestReaperRetriesDownServer(t *testing.T) {
	fd := newFakeData(3)
	s := openT(t, Options{Servers: 3, Datafiles: fd})
	a := okAttr(t)(s.Create(ctx, "/f", 0o644, dist.Layout{Dist: "simple_stripe"}))
	fd.mu.Lock()
	fd.down[1] = true
	fd.mu.Unlock()
	if _, err := s.Remove(ctx, "/f"); err != nil {
		t.Fatalf("remove with a server down: %v", err)
	}
	eventually(t, "the datafiles on the servers up are removed", func() bool { return slices.Equal(fd.where(a.ID), []uint32{1}) })
	eventually(t, "the record keeps the down server only", func() bool {
		return slices.Equal(pendingRecords(t, s)[a.ID], []uint32{1})
	})
	if pending, _ := s.RemovalStats(); pending != 1 {
		t.Errorf("pending removals %d, want 1", pending)
	}
	fd.mu.Lock()
	fd.down[1] = false
	fd.mu.Unlock()
	eventually(t, "the datafile on the server back up is removed", func() bool { return len(fd.where(a.ID)) == 0 })
	eventually(t, "the record is gone", func() bool { return len(pendingRecords(t, s)) == 0 })
}

// The records a crash left (the store closed before the reaper ran) are
// taken up when the store opens again.
func TestReaperRunsAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	fd := newFakeData(2)
	s, err := Open(path, Options{Servers: 2, Datafiles: fd})
	if err != nil {
		t.Fatal(err)
	}
	a := okAttr(t)(s.Create(ctx, "/f", 0o644, dist.Layout{}))
	// Stop the reaper first, as a crash would, so the record stays.
	s.stopReaper()
	if _, err := s.Remove(ctx, "/f"); err != nil {
		t.Fatal(err)
	}
	if len(fd.where(a.ID)) != 2 {
		t.Fatalf("datafiles removed with the reaper stopped: %v", fd.where(a.ID))
	}
	s.Close()
	s2 := openAt(t, path, Options{Servers: 2, Datafiles: fd})
	eventually(t, "the reaper removes what the last run left", func() bool { return len(fd.where(a.ID)) == 0 })
	eventually(t, "the record is gone", func() bool { return len(pendingRecords(t, s2)) == 0 })
}

// Records round-trip; a record that does not decode is reported by Scan
// (fsck's bad record), not taken for a removal.
func TestRemovalRecordCodec(t *testing.T) {
	for _, tc := range []struct {
		servers []uint32
		stuffed bool
	}{{nil, false}, {[]uint32{0}, true}, {[]uint32{3, 1, 1 << 20}, false}} {
		v := encodeRemoval(tc.servers, tc.stuffed)
		r, err := decodeRemoval(idKey(77), v)
		if err != nil || r.ID != 77 || !slices.Equal(r.Servers, tc.servers) || r.Stuffed != tc.stuffed {
			t.Errorf("round trip of %v, %v: %+v, %v", tc.servers, tc.stuffed, r, err)
		}
		for n := range v {
			if _, err := decodeRemoval(idKey(77), v[:n]); err == nil {
				t.Errorf("%x, %d of %d bytes, decodes", v, n, len(v))
			}
		}
	}
	if _, err := decodeRemoval([]byte{1, 2}, encodeRemoval(nil, false)); err == nil {
		t.Error("a short key decodes")
	}
	s := openT(t, Options{Servers: 1})
	err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketRemovals).Put(idKey(5), []byte{9}) })
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Scan(context.Background(), nil, 0)
	if err != nil || len(p.Bad) != 1 || len(p.Pending) != 0 {
		t.Fatalf("scan of a bad removal record: %+v, %v", p, err)
	}
}

// With an I/O server down and many removals waiting on it, a remove costs
// the reaper the reading of its own record, not of every record: the
// down server's records are read again only when its backoff ends.
func TestReaperDownServerCostsNothingPerWake(t *testing.T) {
	// No retry of the down server while the test counts.
	oldMin, oldMax := reapBackoffMin, reapBackoffMax
	reapBackoffMin, reapBackoffMax = time.Hour, time.Hour
	t.Cleanup(func() { reapBackoffMin, reapBackoffMax = oldMin, oldMax })

	const pending, removes = 400, 10
	fd := newFakeData(2)
	s := openT(t, Options{Servers: 2, Datafiles: fd})
	var ids []FileID
	for i := range pending + removes {
		a := okAttr(t)(s.Create(ctx, fmt.Sprintf("/f%d", i), 0o644, dist.Layout{Dist: "simple_stripe"}))
		ids = append(ids, a.ID)
	}
	fd.mu.Lock()
	fd.down[1] = true
	fd.mu.Unlock()
	for i := range pending {
		if _, err := s.Remove(ctx, fmt.Sprintf("/f%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the removals wait on the down server only", func() bool {
		recs := pendingRecords(t, s)
		for _, srvs := range recs {
			if !slices.Equal(srvs, []uint32{1}) {
				return false
			}
		}
		return len(recs) == pending
	})
	before := s.reaper.read.Load()
	for i := pending; i < pending+removes; i++ {
		if _, err := s.Remove(ctx, fmt.Sprintf("/f%d", i)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the datafile on the server up is removed", func() bool {
			return slices.Equal(fd.where(ids[i]), []uint32{1})
		})
	}
	// One record per remove, and a few more if a pass saw a remove's
	// record before its datafile was gone.
	if read := s.reaper.read.Load() - before; read > 4*removes {
		t.Fatalf("%d removes with %d removals waiting on a down server read %d records, want about %d",
			removes, pending, read, removes)
	}
}
