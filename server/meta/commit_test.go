package meta

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/dist"
)

// holdWriter takes bbolt's writer lock and keeps it until the function it
// returns is called, so that the mutations started meanwhile all queue up
// behind one commit, as they do behind a slow fsync.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.db.Update(func(*bbolt.Tx) error {
			close(held)
			<-done
			return nil
		})
	}()
	<-held
	var once sync.Once
	release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(release)
	return release
}

// settle waits until the committer's queue has stopped growing (or holds
// want): the mutations started have reached it, or the group the
// committer took, which waits for the writer lock.
func settle(s *Store, want int) {
	last, same := -1, 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.commit.mu.Lock()
		n := len(s.commit.queue)
		s.commit.mu.Unlock()
		if n == last {
			same++
		} else {
			same = 0
		}
		if n >= want || same == 5 {
			return
		}
		last = n
	}
}

// Concurrent creates share transactions (and so fsyncs): 64 of them
// arriving while a commit is under way take a few commits, not 64, and
// every one that was answered is in the database after a reopen.
func TestGroupCommitSharesTransactions(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meta.db")
	opts := Options{Servers: 4}
	s := openAt(t, path, opts)
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755)) // and reserves a block of IDs
	const n = 64
	release := holdWriter(t, s)
	before := s.commit.commits.Load()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.Create(ctx, fmt.Sprintf("/d/f%02d", i), 0o644, dist.Layout{})
		})
	}
	settle(s, n-1)
	release()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := s.commit.commits.Load() - before; got > n/8 {
		t.Errorf("%d concurrent creates took %d transactions, want at most %d", n, got, n/8)
	} else {
		t.Logf("%d concurrent creates took %d transactions", n, got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, opts)
	snap := snapshot(t, s)
	for i := range n {
		if a, ok := snap[fmt.Sprintf("/d/f%02d", i)]; !ok || a.Kind != KindFile {
			t.Errorf("/d/f%02d after reopen: %+v, present %v", i, a, ok)
		}
	}
	if files, dirs, _ := s.Stats(ctx); files != n || dirs != 2 {
		t.Errorf("Stats after reopen = %d files, %d dirs; want %d, 2", files, dirs, n)
	}
}

// A mutation that fails in a shared transaction fails alone: the others
// of its group commit, each failure gets its own error, and what the
// failures saw is consistent with some order of the group (of 16 mkdirs
// of one name exactly one succeeds).
func TestGroupCommitFailuresAreTheirOwn(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 2})
	okAttr(t)(s.Mkdir(ctx, "/u", 0o755))
	release := holdWriter(t, s)
	const each = 16
	var mkdirs, creates, removes [each]error
	var wg sync.WaitGroup
	for i := range each {
		wg.Go(func() { _, mkdirs[i] = s.Mkdir(ctx, "/same", 0o755) })
		wg.Go(func() { _, creates[i] = s.Create(ctx, fmt.Sprintf("/u/f%d", i), 0o644, dist.Layout{}) })
		wg.Go(func() { _, removes[i] = s.Remove(ctx, fmt.Sprintf("/missing%d", i)) })
	}
	settle(s, 3*each-1)
	release()
	wg.Wait()
	won := 0
	for i := range each {
		switch e := errnoOf(t, mkdirs[i]); e {
		case 0:
			won++
		case syscall.EEXIST:
		default:
			t.Errorf("mkdir /same: %v", mkdirs[i])
		}
		if creates[i] != nil {
			t.Errorf("create: %v", creates[i])
		}
		if e := errnoOf(t, removes[i]); e != syscall.ENOENT {
			t.Errorf("remove of a missing file: %v, want ENOENT", removes[i])
		}
	}
	if won != 1 {
		t.Errorf("%d of %d mkdirs of /same succeeded, want 1", won, each)
	}
	if files, dirs, _ := s.Stats(ctx); files != each || dirs != 3 {
		t.Errorf("Stats = %d files, %d dirs; want %d, 3", files, dirs, each)
	}
	if got := len(okDir(t)(s.Readdir(ctx, "/u"))); got != each {
		t.Errorf("/u has %d entries, want %d", got, each)
	}
}

// A mutation that panics fails alone: its caller panics (the wire server
// turns that into EIO), the others of its group commit.
func TestGroupCommitPanicIsTheCallers(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 2})
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.Mkdir(ctx, fmt.Sprintf("/d%d", i), 0o755) })
	}
	var recovered any
	wg.Go(func() {
		defer func() { recovered = recover() }()
		_ = s.commit.update(func(tx *bbolt.Tx) error {
			if err := newTxn(tx).setCounter(keyFiles, 1000); err != nil {
				return err
			}
			panic("bug")
		})
	})
	settle(s, len(errs))
	release()
	wg.Wait()
	if recovered != "bug" {
		t.Errorf("caller of the panicking mutation recovered %v, want \"bug\"", recovered)
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
	if files, dirs, _ := s.Stats(ctx); files != 0 || dirs != int64(1+len(errs)) {
		t.Errorf("Stats = %d files, %d dirs; want 0, %d (the panicking mutation's change rolled back)", files, dirs, 1+len(errs))
	}
}
