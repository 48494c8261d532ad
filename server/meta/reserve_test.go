package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/dist"
)

// reserver opens a store over three I/O servers with pools, registers a
// mount whose lease it keeps, makes /d as it and delegates /d to it.
func reserver(t *testing.T, path string, fd *fakeBatch) (s *Store, w WatchResponse, d Attr) {
	s, w, d, _ = reserverStop(t, path, fd)
	return s, w, d
}

// reserverStop is reserver that also returns how to stop keeping the
// lease, which a test that closes the store calls first.
func reserverStop(t *testing.T, path string, fd *fakeBatch) (s *Store, w WatchResponse, d Attr, stop func()) {
	t.Helper()
	s = openAt(t, path, Options{Servers: 3, Datafiles: fd})
	s.hub.lease = watchLease
	if errs := s.ClaimAll(ctx); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	waitPool(t, s, poolBatch) // reservations take from the pools
	w = poll(t, s, WatchRequest{})
	stop = keepLeaseUntil(t, s, w)
	as := asMount(ctx, w.Watcher, 0)
	if _, err := s.Mkdir(as, "/d", 0o2777); err != nil && !errors.Is(err, syscall.EEXIST) {
		t.Fatal(err)
	}
	d = okAttr(t)(s.Lookup(as, "/d"))
	if _, given, err := s.Delegate(as, "/d"); err != nil || !given {
		t.Fatalf("Delegate(/d) = %v, %v", given, err)
	}
	return s, w, d, stop
}

func reserve(t *testing.T, s *Store, w WatchResponse, owner uint64, n int) ReservedIDs {
	t.Helper()
	got, err := s.Reserve(WithExpect(asMount(ctx, w.Watcher, 1000), Expect{}), "/d", owner, n)
	if err != nil || len(got.Slots) != n {
		t.Fatalf("Reserve(/d, %d) = %d IDs, %v", n, len(got.Slots), err)
	}
	return got
}

func createOps(d Attr, owner uint64, slots []Slot, mode uint32, at int64) []BatchOp {
	var ops []BatchOp
	for i, sl := range slots {
		ops = append(ops, BatchOp{Dir: d.ID, Name: fmt.Sprint("f", i), Self: sl.ID, Owner: owner,
			Create: &BatchCreate{Mode: mode, Time: at}})
	}
	return ops
}

// Reserved IDs have their datafiles made and are recorded; a batch's
// creates make files of exactly those IDs, layouts and servers, with the
// owner and group the server gives a create; the IDs not used go back
// to the pool; a retried batch changes nothing.
func TestReservedCreatesApply(t *testing.T) {
	fd := newFakeBatch(3)
	s, w, d := reserver(t, filepath.Join(t.TempDir(), "meta.db"), fd)
	const owner = 0xfeed
	got := reserve(t, s, w, owner, 5)
	if got.Layout.Kind != KindFile || got.Layout.Layout.Dist != dist.SimpleStripe || got.Layout.Layout.Datafiles != 3 {
		t.Fatalf("reserved for %+v, want a file of the default layout on 3 datafiles", got.Layout)
	}
	reserved, err := reservedIDs(s)
	if err != nil || len(reserved) != 5 {
		t.Fatalf("Reserved() = %v, %v; want 5", reserved, err)
	}
	var ids []FileID
	for _, sl := range got.Slots {
		if slices.Contains(ids, sl.ID) {
			t.Fatalf("ID %d reserved twice", sl.ID)
		}
		ids = append(ids, sl.ID)
		if where := fd.where(sl.ID); len(where) != 3 || reserved[sl.ID] != d.ID {
			t.Fatalf("reserved ID %d: datafiles on %v, reserved for directory %d; want 3 servers, %d", sl.ID, where, reserved[sl.ID], d.ID)
		}
	}
	ops := append(createOps(d, owner, got.Slots[:3], 0o2644, 1_000_000_007),
		BatchOp{Self: got.Slots[3].ID, Owner: owner, Unreserve: true},
		BatchOp{Self: got.Slots[4].ID, Owner: owner, Unreserve: true})
	// uid 1000 is not in group 7 (the directory's: setgid), so the file's
	// setgid bit goes, as Create does it.
	as := WithCred(ctx, Cred{Uid: 1000, Gid: 1000, Watcher: w.Watcher, Mount: w.Watcher})
	if _, err := s.SetAttr(asMount(ctx, w.Watcher, 0), "/d", AttrChanges{Gid: new(uint32(7))}); err != nil {
		t.Fatal(err)
	}
	d = okAttr(t)(s.Lookup(as, "/d"))
	for run := range 2 {
		errs, err := s.ApplyBatch(as, ops)
		if err != nil || errors.Join(errs...) != nil {
			t.Fatalf("run %d: ApplyBatch = %v, %v", run, errs, err)
		}
	}
	for i, sl := range got.Slots[:3] {
		a := okAttr(t)(s.Lookup(as, fmt.Sprintf("/d/f%d", i)))
		if a.ID != sl.ID || !slices.Equal(a.Servers, sl.Servers) || a.Layout != got.Layout.Layout ||
			a.Uid != 1000 || a.Gid != 7 || a.Mode != 0o644 || a.Mtime != 1_000_000_007 || a.Stuffed {
			t.Fatalf("/d/f%d = %+v; want ID %d on %v, uid 1000, gid 7, mode 644, mtime as sent", i, a, sl.ID, sl.Servers)
		}
	}
	if names := okDir(t)(s.Readdir(as, "/d")); len(names) != 3 {
		t.Fatalf("/d holds %d names after a batch applied twice, want 3", len(names))
	}
	if reserved, _ := reservedIDs(s); len(reserved) != 0 {
		t.Fatalf("reservations left after the creates and returns: %v", reserved)
	}
	pooled := recordedPool(t, s)
	for i, sl := range got.Slots {
		if slices.Contains(pooled, sl.ID) != (i >= 3) {
			t.Fatalf("ID %d (slot %d) recorded in the pool: %v; want only the two given back", sl.ID, i, slices.Contains(pooled, sl.ID))
		}
	}
}

// A create applies only with a reservation of the same owner, of a free
// name, by a caller who may write there; a reservation needs the
// delegation.
func TestReservedCreateRefused(t *testing.T) {
	fd := newFakeBatch(3)
	s, w, d := reserver(t, filepath.Join(t.TempDir(), "meta.db"), fd)
	const owner = 77
	got := reserve(t, s, w, owner, 4)
	as := asMount(ctx, w.Watcher, 1000)
	okAttr(t)(s.Mkdir(as, "/d/taken", 0o755))
	e := okAttr(t)(s.Mkdir(asMount(ctx, w.Watcher, 0), "/e", 0o777))
	sl := got.Slots
	ops := []BatchOp{
		{Dir: d.ID, Name: "a", Self: sl[0].ID, Owner: owner + 1, Create: &BatchCreate{Mode: 0o644}},    // another owner's
		{Dir: d.ID, Name: "a", Self: sl[0].ID + 1000, Owner: owner, Create: &BatchCreate{Mode: 0o644}}, // never reserved
		{Dir: d.ID, Name: "taken", Self: sl[1].ID, Owner: owner, Create: &BatchCreate{Mode: 0o644}},    // name taken
		{Dir: d.ID, Name: "a/b", Self: sl[2].ID, Owner: owner, Create: &BatchCreate{Mode: 0o644}},      // not a name
	}
	want := []syscall.Errno{syscall.ESTALE, syscall.ESTALE, syscall.EEXIST, syscall.EINVAL}
	errs, err := s.ApplyBatch(as, ops)
	if err != nil || len(errs) != len(ops) {
		t.Fatalf("ApplyBatch = %v, %v", errs, err)
	}
	for i, e := range errs {
		if !errors.Is(e, want[i]) {
			t.Errorf("op %d: %v, want %v", i, e, want[i])
		}
	}
	// Another user may not write in /d (0755 after this chmod).
	if _, err := s.SetAttr(asMount(ctx, w.Watcher, 0), "/d", AttrChanges{Mode: new(uint32(0o755))}); err != nil {
		t.Fatal(err)
	}
	errs, err = s.ApplyBatch(asMount(ctx, w.Watcher, 2000), []BatchOp{{Dir: d.ID, Name: "b", Self: sl[3].ID, Owner: owner, Create: &BatchCreate{Mode: 0o644}}})
	if err != nil || !errors.Is(errs[0], syscall.EACCES) {
		t.Fatalf("create by another user in a 0755 directory = %v, %v; want EACCES", errs, err)
	}
	if reserved, _ := reservedIDs(s); len(reserved) != 4 {
		t.Fatalf("refused creates used reservations: %d left, want 4", len(reserved))
	}
	// A reservation is the mount's: it applies in another directory
	// (one whose files get the same layout, the mount's to know).
	errs, err = s.ApplyBatch(as, []BatchOp{{Dir: e.ID, Name: "a", Self: sl[0].ID, Owner: owner, Create: &BatchCreate{Mode: 0o644}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("create in another directory: %v, %v", errs, err)
	}
	for _, tc := range []struct {
		name  string
		path  string
		owner uint64
		n     int
	}{
		{"a directory not delegated", "/e", 1, 1},
		{"owner 0", "/d", 0, 1},
		{"no IDs", "/d", 1, 0},
		{"too many", "/d", 1, maxReserve + 1},
	} {
		if _, err := s.Reserve(as, tc.path, tc.owner, tc.n); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Reserve, %s: %v, want EINVAL", tc.name, err)
		}
	}
	if _, err := s.Reserve(WithCred(ctx, Cred{Uid: 1000}), "/d", 1, 1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Reserve without a mount: %v, want EINVAL", err)
	}
}

// Reservations outlive a restart of the metadata server, so that the
// creates a mount had queued still apply; one older than ReserveTTL is
// given up at a start, its empty datafiles removed, and a create with
// it refused.
func TestReservationsAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	fd := newFakeBatch(3)
	s, w, d, stop := reserverStop(t, path, fd)
	const owner = 5
	got := reserve(t, s, w, owner, 3)
	stop()
	s.Close()

	s, w, _, stop = reserverStop(t, path, fd)
	s.pool.mu.Lock()
	for _, sl := range got.Slots {
		if _, ok := s.pool.stale[sl.ID]; ok {
			t.Errorf("a restart read reserved ID %d as a stale pooled one", sl.ID)
		}
	}
	s.pool.mu.Unlock()
	as := asMount(ctx, w.Watcher, 1000)
	errs, err := s.ApplyBatch(as, createOps(d, owner, got.Slots[:1], 0o644, 1))
	if err != nil || errs[0] != nil {
		t.Fatalf("a create queued before the restart: %v, %v", errs, err)
	}
	// The two left age past ReserveTTL, as a dead mount's would.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketReserved)
		for _, sl := range got.Slots[1:] {
			r, ok, err := (&txn{tx: tx}).reserved(sl.ID)
			if err != nil || !ok {
				return fmt.Errorf("reservation of %d: %v, %v", sl.ID, ok, err)
			}
			r.made = time.Now().Add(-ReserveTTL - time.Minute).UnixNano()
			if err := b.Put(idKey(sl.ID), r.encode()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fd.write(got.Slots[2].Servers[0], got.Slots[2].ID) // a dead mount wrote here
	stop()
	s.Close()

	s = openAt(t, path, Options{Servers: 3, Datafiles: fd})
	if reserved, _ := reservedIDs(s); len(reserved) != 0 {
		t.Fatalf("expired reservations kept: %v", reserved)
	}
	if errs := s.ClaimAll(ctx); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	waitPool(t, s, 0)
	if where := fd.where(got.Slots[1].ID); len(where) != 0 {
		t.Fatalf("the empty datafiles of an expired reservation are left on %v", where)
	}
	if !slices.Contains(fd.where(got.Slots[2].ID), got.Slots[2].Servers[0]) {
		t.Fatal("a datafile holding bytes of an expired reservation was removed (fsck reports it)")
	}
	errs, err = s.ApplyBatch(asMount(ctx, 0, 1000), createOps(d, owner, got.Slots[1:2], 0o644, 1))
	if err != nil || !errors.Is(errs[0], syscall.ESTALE) {
		t.Fatalf("a create with an expired reservation = %v, %v; want ESTALE", errs, err)
	}
}

// A meta.db restored from a backup that holds a reservation a mount used
// after the backup: that ID is never handed out again, so no new file
// reads the bytes written to it.
func TestReservationInARestoredBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	fd := newFakeBatch(3)
	s, w, d, stop := reserverStop(t, path, fd)
	got := reserve(t, s, w, 9, 1)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := s.db.View(func(tx *bbolt.Tx) error { return tx.CopyFile(backup, 0o600) }); err != nil {
		t.Fatal(err)
	}
	if errs, err := s.ApplyBatch(asMount(ctx, w.Watcher, 1000), createOps(d, 9, got.Slots, 0o644, 1)); err != nil || errs[0] != nil {
		t.Fatalf("create: %v, %v", errs, err)
	}
	id := got.Slots[0].ID
	for _, srv := range got.Slots[0].Servers {
		fd.write(srv, id)
	}
	stop()
	s.Close()
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{Servers: 3, Datafiles: fd})
	if errs := s.ClaimAll(ctx); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	for i := range 3 * poolBatch {
		a := okAttr(t)(s.Create(ctx, fmt.Sprintf("/new%d", i), 0o644, dist.Layout{}))
		if a.ID == id {
			t.Fatalf("new file got ID %d, reserved before the backup and written after it", id)
		}
	}
	if reserved, _ := reservedIDs(s); reserved[id] == 0 {
		t.Fatalf("the restored reservation of %d is gone before its expiry", id)
	}
}

// MkdirHeld makes the directory, delegates it and reserves IDs in it in
// one commit; where Delegate would refuse (a sticky directory, no lease)
// it only makes the directory, and reserves nothing.
func TestMkdirHeld(t *testing.T) {
	fd := newFakeBatch(3)
	s := openAt(t, filepath.Join(t.TempDir(), "meta.db"), Options{Servers: 3, Datafiles: fd})
	s.hub.lease = watchLease
	w := poll(t, s, WatchRequest{})
	keepLease(t, s, w)
	as := asMount(ctx, w.Watcher, 0)
	if errs := s.ClaimAll(ctx); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	waitPool(t, s, poolBatch) // no refill commits meanwhile
	commits := s.commit.commits.Load()
	a, given, ids, err := s.MkdirHeld(as, "/d", 0o755, 4, 8)
	if err != nil || !given || len(ids.Slots) != 8 || a.Kind != KindDir || a.Mode != 0o755 {
		t.Fatalf("MkdirHeld(/d) = %+v, given %v, %d IDs, %v", a, given, len(ids.Slots), err)
	}
	if got := s.commit.commits.Load() - commits; got != 1 {
		t.Errorf("MkdirHeld took %d commits, want 1", got)
	}
	if n := s.Delegations(); n != 1 {
		t.Fatalf("Delegations() = %d, want 1", n)
	}
	reserved, _ := reservedIDs(s)
	for _, sl := range ids.Slots {
		if reserved[sl.ID] != a.ID || len(fd.where(sl.ID)) != 3 {
			t.Fatalf("ID %d: reserved for %d, datafiles on %v; want %d and 3 servers", sl.ID, reserved[sl.ID], fd.where(sl.ID), a.ID)
		}
	}
	errs, err := s.ApplyBatch(as, createOps(a, 4, ids.Slots[:1], 0o644, 1))
	if err != nil || errs[0] != nil {
		t.Fatalf("create with an ID MkdirHeld reserved: %v, %v", errs, err)
	}
	if d := okAttr(t)(s.Lookup(as, "/d")); d.Mtime <= 1 {
		t.Errorf("the directory's mtime went back to the create's time: %d", d.Mtime)
	}
	reserved, _ = reservedIDs(s)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		path string
		mode uint32
	}{
		{"sticky", as, "/sticky", 0o1777},
		{"no lease", asMount(ctx, w.Watcher+100, 0), "/nolease", 0o755},
	} {
		before := len(reserved)
		a, given, ids, err := s.MkdirHeld(tc.ctx, tc.path, tc.mode, 4, 8)
		if err != nil || given || len(ids.Slots) != 0 || a.Kind != KindDir {
			t.Errorf("MkdirHeld, %s: %+v, given %v, %d IDs, %v; want made, not given", tc.name, a, given, len(ids.Slots), err)
		}
		if reserved, _ = reservedIDs(s); len(reserved) != before {
			t.Errorf("MkdirHeld, %s: reserved %d IDs", tc.name, len(reserved)-before)
		}
	}
	if _, _, _, err := s.MkdirHeld(as, "/d", 0o755, 4, 8); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("MkdirHeld of an existing name: %v, want EEXIST", err)
	}
	if reserved, _ := reservedIDs(s); len(reserved) != 7 {
		t.Errorf("%d reservations after a refused mkdir, want the 7 left", len(reserved))
	}
}

// A SetLayout of a directory recalls every delegation before it commits:
// a mount must not go on giving new files below it the layout it knew.
// MkdirHeld without IDs still says the layout its files get.
func TestSetLayoutOfADirectoryRecallsHeldOnes(t *testing.T) {
	fd := newFakeBatch(3)
	s, w, _ := reserver(t, filepath.Join(t.TempDir(), "meta.db"), fd)
	as := asMount(ctx, w.Watcher, 0)
	sub, given, ids, err := s.MkdirHeld(as, "/d/sub", 0o755, 4, 0)
	if err != nil || !given || len(ids.Slots) != 0 || ids.Layout.Layout.Datafiles != 3 {
		t.Fatalf("MkdirHeld(/d/sub, 0 IDs) = %+v, given %v, %+v, %v; want given, the files' layout", sub, given, ids, err)
	}
	if n := s.Delegations(); n != 2 {
		t.Fatalf("Delegations() = %d, want 2", n)
	}
	l := dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=1048576", Datafiles: 2}
	if _, err := s.SetLayout(as, "/", l, false); err != nil {
		t.Fatal(err)
	}
	if n := s.Delegations(); n != 0 {
		t.Fatalf("Delegations() = %d after a SetLayout of /, want 0", n)
	}
	_, given, ids, err = s.MkdirHeld(as, "/e", 0o755, 4, 1)
	if err != nil || !given || ids.Layout.Layout.Datafiles != 2 || len(ids.Slots[0].Servers) != 2 {
		t.Fatalf("MkdirHeld(/e) after the SetLayout = given %v, %+v, %v; want files of 2 datafiles", given, ids, err)
	}
}

// A reservation takes what the pools hold and stops at an empty one
// rather than make datafiles one ID at a time; with none ready it makes
// one.
func TestReserveStopsAtAnEmptyPool(t *testing.T) {
	fd := newFakeBatch(3)
	s, w, _ := reserver(t, filepath.Join(t.TempDir(), "meta.db"), fd)
	before := fd.requests()
	got, err := s.Reserve(asMount(ctx, w.Watcher, 1000), "/d", 3, maxReserve)
	if err != nil || len(got.Slots) < poolBatch || len(got.Slots) >= maxReserve {
		t.Fatalf("Reserve(%d) with a pool of %d = %d IDs, %v; want the pool's", maxReserve, poolBatch, len(got.Slots), err)
	}
	if n := fd.requests() - before; n > 3 {
		t.Fatalf("Reserve sent %d requests to the I/O servers, want at most a refill's", n)
	}
}

// reservedIDs lists the reservations recorded in meta.db: ID -> the
// directory each was asked for.
func reservedIDs(s *Store) (map[FileID]FileID, error) {
	out := map[FileID]FileID{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketReserved)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			r, err := decodeReservation(v)
			if err != nil {
				return err
			}
			out[FileID(binary.BigEndian.Uint64(k))] = r.dir
			return nil
		})
	})
	return out, err
}
