package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/dist"
)

// fakeBatch is fakeData with createBatch: the metadata server keeps
// precreate pools over it. written marks datafiles holding bytes.
type fakeBatch struct {
	*fakeData
	batches int
	written []map[FileID]bool
	// made, if set, runs after a batch's datafiles are made, before the
	// answer (unlocked): where a crash test stops the metadata server.
	made func()
	// failBatch[srv] makes srv's createBatch fail (it makes nothing);
	// failRemove[srv] fails that many of srv's next removeIfEmpty.
	failBatch  []bool
	failRemove []int
}

func newFakeBatch(n int) *fakeBatch {
	f := &fakeBatch{fakeData: newFakeData(n), written: make([]map[FileID]bool, n),
		failBatch: make([]bool, n), failRemove: make([]int, n)}
	for i := range f.written {
		f.written[i] = map[FileID]bool{}
	}
	return f
}

func (f *fakeBatch) CreateBatch(_ context.Context, srv uint32, ids []FileID, inc uint64) ([]FileID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	switch {
	case f.down[srv], f.failBatch[srv]:
		return nil, fmt.Errorf("I/O server data%d: connection refused", srv)
	case f.inc[srv] != inc:
		return nil, fmt.Errorf("server %d: not claimed", srv)
	}
	var existed []FileID
	for _, id := range ids {
		if f.files[srv][id] {
			existed = append(existed, id)
			continue
		}
		f.files[srv][id] = true
	}
	if made := f.made; made != nil {
		f.mu.Unlock()
		made()
		f.mu.Lock()
	}
	return existed, nil
}

func (f *fakeBatch) RemoveIfEmpty(_ context.Context, srv uint32, ids []FileID, _ uint64) ([]FileID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	if f.down[srv] {
		return nil, fmt.Errorf("I/O server data%d: connection refused", srv)
	}
	if f.failRemove[srv] > 0 {
		f.failRemove[srv]--
		return nil, fmt.Errorf("I/O server data%d: connection lost", srv)
	}
	var kept []FileID
	for _, id := range ids {
		if f.written[srv][id] {
			kept = append(kept, id)
			continue
		}
		delete(f.files[srv], id)
	}
	return kept, nil
}

// requests is how many requests the I/O servers have had that make or
// remove datafiles.
func (f *fakeBatch) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates + f.batches
}

func (f *fakeBatch) write(srv uint32, id FileID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written[srv][id] = true
}

// waitPool waits until no pool is being refilled and the pools hold at
// least n ready IDs.
func waitPool(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st := s.Pools(); st.Ready >= n && st.Filling == 0 {
			return
		}
	}
	t.Fatalf("pools never held %d ready IDs: %+v", n, s.Pools())
}

// recordedPool lists the pooled IDs meta.db records.
func recordedPool(t *testing.T, s *Store) []FileID {
	t.Helper()
	var ids []FileID
	for cookie := []byte(nil); ; {
		p, err := s.Scan(ctx, cookie, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range p.Pooled {
			ids = append(ids, pl.ID)
		}
		if p.Done {
			return ids
		}
		cookie = p.Cookie
	}
}

// A create that finds its pool ready costs no request to an I/O server,
// and its datafiles exist on every server of its layout.
func TestPoolCreateCostsNoIORequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stuffing bool
		layout   dist.Layout
	}{
		{"default layout", false, dist.Layout{}},
		{"stuffed", true, dist.Layout{}},
		{"two datafiles", false, dist.Layout{Dist: "simple_stripe", Datafiles: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := newFakeBatch(4)
			s := openT(t, Options{Servers: 4, Datafiles: fd, Stuffing: tc.stuffing})
			// One create per server set starts its pool.
			for i := range 4 {
				okAttr(t)(s.Create(ctx, fmt.Sprintf("/warm%d", i), 0o644, tc.layout))
			}
			sets := s.Pools().Sets
			waitPool(t, s, sets*(poolBatch-4))
			before := fd.requests()
			n := poolBatch - poolLow - 4 // a pool refills below poolLow
			for i := range n {
				a := okAttr(t)(s.Create(ctx, fmt.Sprintf("/f%d", i), 0o644, tc.layout))
				want := a.Servers
				if a.Stuffed {
					want = want[:1]
				}
				if got := fd.where(a.ID); !slices.Equal(got, sorted(want)) {
					t.Fatalf("file %d (%+v) has datafiles on %v", i, a, got)
				}
			}
			if got := fd.requests() - before; got != 0 {
				t.Fatalf("%d creates from a ready pool cost %d I/O server requests, want 0", n, got)
			}
			// What fsck sees: the pooled IDs, none of them a file's.
			pooled := recordedPool(t, s)
			if len(pooled) != s.Pools().Ready {
				t.Fatalf("meta.db records %d pooled IDs, the pools hold %d", len(pooled), s.Pools().Ready)
			}
			for _, id := range pooled {
				if _, err := s.GetByID(ctx, id); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("pooled ID %d is a file's: %v", id, err)
				}
			}
		})
	}
}

// Pooled IDs are never a file's twice, under concurrent creates.
func TestPoolConcurrentCreatesDistinct(t *testing.T) {
	fd := newFakeBatch(3)
	s := openT(t, Options{Servers: 3, Datafiles: fd})
	seen := make(chan FileID, 800)
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			for i := range 100 {
				a, err := s.Create(ctx, fmt.Sprintf("/w%d-%d", w, i), 0o644, dist.Layout{})
				if err != nil {
					errs <- err
					return
				}
				seen <- a.ID
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(seen)
	ids := map[FileID]bool{}
	for id := range seen {
		if ids[id] {
			t.Fatalf("ID %d handed out twice", id)
		}
		ids[id] = true
		if got := fd.where(id); len(got) != 3 {
			t.Fatalf("file %d has datafiles on %v", id, got)
		}
	}
	for _, id := range recordedPool(t, s) {
		if ids[id] {
			t.Fatalf("ID %d is a file's and still recorded as pooled", id)
		}
	}
}

// A database restored from a backup that holds a pool whose IDs files
// made after the backup took: at start the pool is discarded (empty
// datafiles removed, written ones kept for fsck), and no new file gets
// an ID, or bytes, of a file made after the backup.
func TestPoolRestoredBackup(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprintf("server reports its max ID: %v", !hide), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "meta.db")
			fd := newFakeBatch(3)
			fd.hideMax = hide
			s := openAt(t, path, Options{Servers: 3, Datafiles: fd})
			okAttr(t)(s.Create(ctx, "/before", 0o644, dist.Layout{}))
			waitPool(t, s, poolBatch-1)
			// A hot backup, holding a ready pool.
			backupPath := filepath.Join(t.TempDir(), "backup.db")
			if err := s.db.View(func(tx *bbolt.Tx) error { return tx.CopyFile(backupPath, 0o600) }); err != nil {
				t.Fatal(err)
			}
			backupPool := recordedPool(t, s)
			backup, err := os.ReadFile(backupPath)
			if err != nil {
				t.Fatal(err)
			}

			// After the backup: files take the pooled IDs, and some are
			// written.
			var after []FileID
			writtenOn := map[FileID]uint32{}
			for i := range 2 * poolBatch {
				a := okAttr(t)(s.Create(ctx, fmt.Sprintf("/after%d", i), 0o644, dist.Layout{}))
				after = append(after, a.ID)
				if i%2 == 0 {
					fd.write(a.Servers[0], a.ID)
					writtenOn[a.ID] = a.Servers[0]
				}
			}
			if !slices.Contains(after, backupPool[0]) {
				t.Fatalf("no file made after the backup took its pooled ID %d", backupPool[0])
			}
			s.Close()
			if err := os.WriteFile(path, backup, 0o600); err != nil {
				t.Fatal(err)
			}

			s = openAt(t, path, Options{Servers: 3, Datafiles: fd})
			if got := s.Pools().Stale; got == 0 {
				t.Fatal("the restored database's pool was not read back as stale")
			}
			if errs := s.ClaimAll(ctx); errors.Join(errs...) != nil {
				t.Fatal(errs)
			}
			waitPool(t, s, 0) // the claims start filling new pools
			if st := s.Pools(); st.Stale != 0 {
				t.Fatalf("after the claims %d pooled IDs are left stale", st.Stale)
			}
			for _, id := range recordedPool(t, s) {
				if slices.Contains(backupPool, id) || slices.Contains(after, id) {
					t.Fatalf("meta.db records ID %d in a pool again (the backup's pool, or a file's made after it)", id)
				}
			}
			if hide {
				// Claims that report nothing leave only exclusive creates
				// to find the IDs used after the backup: the first create
				// may give up (errIDTaken) while the refill skips them.
				if _, err := s.Create(ctx, "/probe", 0o644, dist.Layout{}); err != nil && !errors.Is(err, errIDTaken) {
					t.Fatal(err)
				}
				waitPool(t, s, 1)
			}
			// A written datafile is kept whole (fsck reports it as an
			// orphan, as every file made after the backup).
			for id, srv := range writtenOn {
				if !slices.Contains(fd.where(id), srv) {
					t.Fatalf("written datafile %d on server %d removed by the discard", id, srv)
				}
			}
			for i := range 3 * poolBatch {
				n := okAttr(t)(s.Create(ctx, fmt.Sprintf("/new%d", i), 0o644, dist.Layout{}))
				if slices.Contains(after, n.ID) {
					t.Fatalf("new file got ID %d of a file made after the backup", n.ID)
				}
				for _, srv := range n.Servers {
					if fd.written[srv][n.ID] {
						t.Fatalf("new file %d got a datafile holding bytes on server %d", n.ID, srv)
					}
				}
			}
		})
	}
}

// A server down at refill: creates on other server sets go on from their
// pools, those on its set fail naming it, and the refill's error names it.
func TestPoolServerDownAtRefill(t *testing.T) {
	fd := newFakeBatch(4)
	fd.down[1] = true
	s := openT(t, Options{Servers: 4, Datafiles: fd, Stuffing: true})
	s.ClaimAll(ctx)
	var failed int
	for i := range 8 {
		_, err := s.Create(ctx, fmt.Sprintf("/warm%d", i), 0o644, dist.Layout{})
		if err != nil {
			failed++
			if !strings.Contains(err.Error(), "server 1") && !strings.Contains(err.Error(), "data1") {
				t.Fatalf("create on the down server: %v does not name it", err)
			}
		}
	}
	if failed != 2 {
		t.Fatalf("%d of 8 round-robin creates failed, want the 2 on the down server", failed)
	}
	waitPool(t, s, 3*(poolBatch-4))
	before := fd.requests()
	for i := range 3 * (poolBatch - poolLow) {
		a, err := s.Create(ctx, fmt.Sprintf("/f%d", i), 0o644, dist.Layout{})
		if err != nil {
			if a.Servers != nil {
				t.Fatalf("create failed: %v", err)
			}
			continue
		}
	}
	// Requests went only to the down server (its create path and claims).
	if got := fd.requests() - before; got > 3*(poolBatch-poolLow)/4+4 {
		t.Fatalf("creates on healthy sets cost %d I/O server requests", got)
	}
	s.pool.mu.Lock()
	ps := s.pool.sets[func() string { k, _ := setKey([]uint32{1}); return k }()]
	var perr error
	if ps != nil {
		perr = ps.err
	}
	s.pool.mu.Unlock()
	if perr == nil || !strings.Contains(perr.Error(), "I/O server 1") {
		t.Fatalf("refill of the down server's pool: error %v, want one naming I/O server 1", perr)
	}
}

// A crash of the metadata server while a pool is refilled (meta.db as it
// was when the datafiles had been made) leaves no datafile that neither a
// file nor a pool record names, and the next start discards the records.
func TestPoolCrashDuringRefill(t *testing.T) {
	fd := newFakeBatch(2)
	s := openT(t, Options{Servers: 2, Datafiles: fd})
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	// A create that finds no pool makes its datafiles before its commit:
	// a crash between leaves them unnamed (docs/store.md). Past that, with
	// the pool ready, the crash comes during its refill.
	okAttr(t)(s.Create(ctx, "/first", 0o644, dist.Layout{}))
	waitPool(t, s, poolLow)
	// The I/O servers as they were at the crash.
	after := newFakeBatch(2)
	var once sync.Once
	made := func() {
		once.Do(func() {
			if err := s.db.View(func(tx *bbolt.Tx) error { return tx.CopyFile(crashed, 0o600) }); err != nil {
				t.Error(err)
			}
			fd.mu.Lock()
			defer fd.mu.Unlock()
			copy(after.inc, fd.inc)
			for srv, m := range fd.files {
				maps.Copy(after.files[srv], m)
			}
		})
	}
	fd.mu.Lock()
	fd.made = made
	fd.mu.Unlock()
	for i := range poolBatch {
		okAttr(t)(s.Create(ctx, fmt.Sprintf("/f%d", i), 0o644, dist.Layout{}))
	}
	waitPool(t, s, 1)
	s.Close()
	if _, err := os.Stat(crashed); err != nil {
		t.Fatalf("no refill ran during the creates: %v", err)
	}
	fd = after
	r := openAt(t, crashed, Options{Servers: 2, Datafiles: fd})
	named, oldPool := map[FileID]bool{}, map[FileID]bool{}
	for _, id := range recordedPool(t, r) {
		named[id], oldPool[id] = true, true
	}
	for cookie := []byte(nil); ; {
		p, err := r.Scan(ctx, cookie, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range p.Inodes {
			named[in.ID] = true
		}
		if p.Done {
			break
		}
		cookie = p.Cookie
	}
	for srv, m := range fd.files {
		for id := range m {
			if !named[id] {
				t.Fatalf("after the crash, datafile %d on server %d is named by no file and no pool record", id, srv)
			}
		}
	}
	if errs := r.ClaimAll(ctx); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	waitPool(t, r, 0) // the claims start filling new pools
	// Another pool's claim may discard a server's stale part in the
	// background (discardPools): wait for it.
	for deadline := time.Now().Add(10 * time.Second); r.Pools().Stale > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stale pool entries never discarded: %+v", r.Pools())
		}
	}
	fresh := map[FileID]bool{}
	for _, id := range recordedPool(t, r) {
		if oldPool[id] {
			t.Fatalf("pooled ID %d of before the crash is recorded after the claims", id)
		}
		fresh[id] = true
	}
	for srv, m := range fd.files {
		for id := range m {
			if _, err := r.GetByID(ctx, id); err != nil && !fresh[id] {
				t.Fatalf("datafile %d on server %d left after the discard: %v", id, srv, err)
			}
		}
	}
}

// poolRecords reads the pool bucket: each recorded ID and its servers.
func poolRecords(t *testing.T, s *Store) map[FileID][]uint32 {
	t.Helper()
	recs := map[FileID][]uint32{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketPool).ForEach(func(k, v []byte) error {
			srvs, err := decodeServers(v)
			recs[FileID(binary.BigEndian.Uint64(k))] = srvs
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A refill whose undo cannot remove what it made (the server stopped
// answering in between) leaves those datafiles recorded on that server, so
// that its next claim (or the next start) discards them, never unnamed
// orphans; and the IDs are not handed out.
func TestPoolUndoFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the batch fail or meet IDs used before.
		setup func(fd *fakeBatch)
		// failRemove is the server whose undo fails.
		failRemove uint32
		wantErr    bool
	}{
		{"another server fails its batch", func(fd *fakeBatch) { fd.failBatch[2] = true }, 1, true},
		{"IDs used before", func(fd *fakeBatch) {
			// Server 0 holds every third ID the batch will take, and
			// its claim does not say so.
			fd.hideMax = true
			for id := FileID(1); id < 4*poolBatch; id += 3 {
				fd.files[0][id] = true
			}
		}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := newFakeBatch(3)
			s := openT(t, Options{Servers: 3, Datafiles: fd})
			tc.setup(fd)
			before := make([]map[FileID]bool, 3)
			for srv := range before {
				before[srv] = maps.Clone(fd.files[srv])
			}
			fd.failRemove[tc.failRemove] = 1
			good, err := s.fillBatch(ctx, []uint32{0, 1, 2}, poolBatch)
			if (err != nil) != tc.wantErr {
				t.Fatalf("fillBatch: %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && len(good) == poolBatch {
				t.Fatal("the batch met no ID used before")
			}
			if fd.failRemove[tc.failRemove] != 0 {
				t.Fatal("no undo ran")
			}
			recs := poolRecords(t, s)
			// Every datafile this batch made is a good ID's, or named by a
			// record on its server.
			var left int
			for srv := range fd.files {
				for id := range fd.files[srv] {
					if before[srv][id] || slices.Contains(good, id) {
						continue
					}
					if !slices.Contains(recs[id], uint32(srv)) {
						t.Fatalf("datafile %d on server %d left by the undo is named by no file and no record (record: %v)", id, srv, recs[id])
					}
					left++
				}
			}
			if left == 0 {
				t.Fatal("the failed undo left nothing")
			}

			// Once the servers answer, their claims discard what was left.
			fd.failBatch[2] = false
			if errs := s.ClaimAll(ctx); errors.Join(errs...) != nil {
				t.Fatal(errs)
			}
			for deadline := time.Now().Add(10 * time.Second); s.Pools().Stale > 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("stale pool entries never discarded: %+v", s.Pools())
				}
			}
			waitPool(t, s, 0)
			recs = poolRecords(t, s)
			for srv := range fd.files {
				for id := range fd.files[srv] {
					if before[srv][id] || slices.Contains(good, id) {
						continue
					}
					if _, pooled := recs[id]; !pooled {
						t.Fatalf("datafile %d on server %d left after the claims, no record names it", id, srv)
					}
				}
			}
			for _, g := range good {
				if _, ok := recs[g]; !ok {
					t.Fatalf("good pooled ID %d lost its record", g)
				}
			}
		})
	}
}

// A pool that creates found empty makes twice as many IDs at its next
// refill, up to maxPoolBatch: on a busy disk a refill (a syncfs on each
// I/O server) took long enough for mdtest's creates to empty a pool of
// poolBatch, and a fifth of them made their datafiles one at a time.
func TestPoolGrowsWhenItRunsDry(t *testing.T) {
	fd := newFakeBatch(1)
	s := openT(t, Options{Servers: 1, Datafiles: fd})
	okAttr(t)(s.Create(ctx, "/warm", 0o644, dist.Layout{}))
	waitPool(t, s, poolBatch-1)
	batchSize := func() int {
		s.pool.mu.Lock()
		defer s.pool.mu.Unlock()
		for _, ps := range s.pool.sets {
			return ps.size()
		}
		return 0
	}
	for round, want := range []int{2 * poolBatch, 4 * poolBatch, 8 * poolBatch, maxPoolBatch} {
		// Hold the refills while creates take every pooled ID and more.
		release := make(chan struct{})
		fd.mu.Lock()
		fd.made = func() { <-release }
		fd.mu.Unlock()
		for i := range s.Pools().Ready + 3 {
			okAttr(t)(s.Create(ctx, fmt.Sprintf("/r%d-f%d", round, i), 0o644, dist.Layout{}))
		}
		if got := batchSize(); got != want {
			t.Fatalf("round %d: after creates found the pool empty, the next refill makes %d IDs, want %d", round, got, want)
		}
		fd.mu.Lock()
		fd.made = nil
		fd.mu.Unlock()
		close(release)
		waitPool(t, s, 0)
		// The refill after the one held makes the new size: a create
		// below half of it starts that refill.
		batches := func() int {
			fd.mu.Lock()
			defer fd.mu.Unlock()
			return fd.batches
		}
		for i, before := 0, batches(); batches() == before; i++ {
			okAttr(t)(s.Create(ctx, fmt.Sprintf("/r%d-drain%d", round, i), 0o644, dist.Layout{}))
		}
		waitPool(t, s, want-1)
	}
}

// stallingBatch is a fakeBatch whose CreateBatch waits for its context to
// end: a refill still in flight when the metadata server stops.
type stallingBatch struct {
	*fakeBatch
	started chan struct{}
	once    sync.Once
}

func (b *stallingBatch) CreateBatch(ctx context.Context, _ uint32, _ []FileID, _ uint64) ([]FileID, error) {
	b.once.Do(func() { close(b.started) })
	<-ctx.Done()
	return nil, ctx.Err()
}

// Stopping the metadata server while a pool is refilled is no failure of
// the refill: it logs no warning. (`pario up` stopped right after its
// start, as the README's quick start does when its commands are fast,
// warned "precreate pool not refilled" with "context canceled".)
func TestPoolRefillStoppedByCloseDoesNotWarn(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer slog.SetDefault(old)

	fd := &stallingBatch{fakeBatch: newFakeBatch(2), started: make(chan struct{})}
	s := openT(t, Options{Servers: 2, Datafiles: fd})
	s.ClaimAll(ctx)
	<-fd.started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if buf.Len() > 0 {
		t.Fatalf("closing during a refill logged:\n%s", buf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
