package meta

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"pgregory.net/rapid"

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
// It polls every tick, and five equal polls count as stopped.
func settle(s *Store, want int, tick time.Duration) {
	last, same := -1, 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(tick) {
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
	settle(s, n-1, 20*time.Millisecond)
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
	settle(s, 3*each-1, 20*time.Millisecond)
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
		_ = s.commit.update(ctx, func(tx *bbolt.Tx) error {
			if err := newTxn(tx).setCounter(keyFiles, 1000); err != nil {
				return err
			}
			panic("bug")
		})
	})
	settle(s, len(errs), 20*time.Millisecond)
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

// groupOp is one operation of TestModelGroups and what it returned.
type groupOp struct {
	kind     string // mkdir, create, remove, rename
	p, q     string // path, and rename's new path
	a        Attr   // mkdir, create, remove
	replaced *Attr  // rename
	err      error
}

// apply runs op on m (a copy the caller may discard) and reports whether
// the result the store gave is the one m gives at this point.
func (op *groupOp) apply(m model) bool {
	var want syscall.Errno
	switch op.kind {
	case "mkdir", "create":
		kind := KindDir
		if op.kind == "create" {
			kind = KindFile
		}
		if want = m.add(op.p, kind); want == 0 && op.err == nil {
			m[op.p] = modelEntry{kind, op.a.ID}
		}
	case "remove":
		var e modelEntry
		if e, want = m.remove(op.p); want == 0 && op.err == nil && (op.a.ID != e.id || op.a.Kind != e.kind) {
			return false
		}
	case "rename":
		var r *modelEntry
		r, want = m.rename(op.p, op.q)
		if want == 0 && op.err == nil && ((r == nil) != (op.replaced == nil) || r != nil && (r.id != op.replaced.ID || r.kind != op.replaced.Kind)) {
			return false
		}
	}
	var got syscall.Errno
	if op.err != nil && !errors.As(op.err, &got) {
		return false
	}
	return got == want
}

// TestModelGroups is TestModel for mutations that share transactions:
// groups of 2 to 5 random mutations run at once while a commit holds the
// writer lock, so they queue and commit together, failures and all. The
// results must be those of the mutations run one at a time in some order,
// and the namespace that order's.
func TestModelGroups(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		s, err := Open(filepath.Join(dir, fmt.Sprintf("groups%d.db", run)), Options{Servers: 3})
		if err != nil {
			rt.Fatalf("Open: %v", err)
		}
		defer s.Close()
		s.db.NoSync = true // speed only: durability is tested elsewhere
		m := model{"/": {KindDir, RootID}}
		pathGen := rapid.SampledFrom(modelPaths)
		kindGen := rapid.SampledFrom([]string{"mkdir", "mkdir", "create", "remove", "rename"})
		for range rapid.IntRange(1, 6).Draw(rt, "groups") {
			ops := make([]*groupOp, rapid.IntRange(2, 5).Draw(rt, "size"))
			for i := range ops {
				ops[i] = &groupOp{kind: kindGen.Draw(rt, "op"), p: pathGen.Draw(rt, "path"), q: pathGen.Draw(rt, "new")}
			}
			held, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(finished)
				_ = s.db.Update(func(*bbolt.Tx) error { close(held); <-done; return nil })
			}()
			<-held
			var wg sync.WaitGroup
			for _, op := range ops {
				wg.Go(func() {
					switch op.kind {
					case "mkdir":
						op.a, op.err = s.Mkdir(ctx, op.p, 0o755)
					case "create":
						op.a, op.err = s.Create(ctx, op.p, 0o644, dist.Layout{})
					case "remove":
						op.a, op.err = s.Remove(ctx, op.p)
					case "rename":
						op.replaced, op.err = s.Rename(ctx, op.p, op.q)
					}
				})
			}
			settle(s, len(ops)-1, time.Millisecond)
			close(done)
			<-finished
			wg.Wait()

			snap := snapshot(rt, s)
			var found model
			for perm := range permutations(len(ops)) {
				c := maps.Clone(m)
				ok := true
				for _, i := range perm {
					if ok = ops[i].apply(c); !ok {
						break
					}
				}
				if ok && sameNamespace(c, snap) {
					found = c
					break
				}
			}
			if found == nil {
				for _, op := range ops {
					rt.Logf("%s %s %s: %+v, replaced %v, err %v", op.kind, op.p, op.q, op.a, op.replaced, op.err)
				}
				rt.Fatalf("no order of the group gives its results and the namespace %v", snap)
			}
			m = found
		}
	})
}

func sameNamespace(m model, snap map[string]Attr) bool {
	if len(m) != len(snap) {
		return false
	}
	for p, e := range m {
		if a, ok := snap[p]; !ok || a.ID != e.id || a.Kind != e.kind {
			return false
		}
	}
	return true
}

// permutations yields every order of 0..n-1.
func permutations(n int) iter.Seq[[]int] {
	return func(yield func([]int) bool) {
		p := make([]int, n)
		for i := range p {
			p[i] = i
		}
		var gen func(k int) bool
		gen = func(k int) bool {
			if k == n {
				return yield(slices.Clone(p))
			}
			for i := k; i < n; i++ {
				p[k], p[i] = p[i], p[k]
				if !gen(k + 1) {
					return false
				}
				p[k], p[i] = p[i], p[k]
			}
			return true
		}
		gen(0)
	}
}

// A mutation whose caller gives up while it waits behind a commit is not
// executed: it fails with the context's error and changes nothing.
func TestGroupCommitCanceledWhileQueued(t *testing.T) {
	s := openT(t, Options{Servers: 2})
	release := holdWriter(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	var err error
	var wg sync.WaitGroup
	wg.Go(func() { _, err = s.Mkdir(ctx, "/late", 0o755) })
	settle(s, 1, 20*time.Millisecond)
	cancel()
	release()
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("mkdir canceled while queued: %v, want context.Canceled", err)
	}
	if _, err := s.Lookup(t.Context(), "/late"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("lookup of the canceled mkdir's directory: %v, want ENOENT", err)
	}
}
