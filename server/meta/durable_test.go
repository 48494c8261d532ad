package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
)

// rootNames lists "/" of s.
func rootNames(t *testing.T, s *Store) []string {
	t.Helper()
	ents, _, err := s.ReaddirPage(ctx, "/", "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	return names(ents)
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deferredStore opens path with deferred durability, no timed checkpoint
// (only Sync and Close make one) and the boot ID *boot.
func deferredStore(t *testing.T, path string, boot *string) *Store {
	t.Helper()
	s, err := Open(path, Options{Servers: 1, SyncInterval: time.Hour, BootID: func() (string, error) { return *boot, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// churn makes many small commits that free and reuse pages: what the
// changes after a sync look like to bbolt.
func churn(t *testing.T, s *Store, round int) {
	t.Helper()
	for i := range 60 {
		var err error
		switch i % 3 {
		case 0:
			_, err = s.Create(ctx, fmt.Sprintf("/r%d-new%03d", round, i), 0o644, dist.Layout{})
		case 1:
			_, err = s.Remove(ctx, fmt.Sprintf("/keep%03d", (i+round*7)%80))
		case 2:
			_, err = s.Rename(ctx, fmt.Sprintf("/keep%03d", (i+round*11+40)%80), fmt.Sprintf("/r%d-moved%03d", round, i))
		}
		if err != nil && !errorsIsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// A power cut after a sync, with later transactions answered but not
// synced, leaves meta.db as any mix of its synced pages and the later
// ones the kernel happened to write back, meta pages included. Open,
// after a reboot (another boot ID), puts it back to the synced
// transaction: the namespace exactly as it was synced, and a database
// that passes bbolt's check (Open runs it). Without the anchor, the later
// commits reuse pages of the synced tree; without the checkpoint's copy
// of its meta page, a later meta page may point at pages never written:
// each fails this test.
func TestPowerCutPutsBackTheLastSync(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "meta.db")
	boot := "boot-1"
	s := deferredStore(t, path, &boot)
	for i := range 80 {
		if _, err := s.Create(ctx, fmt.Sprintf("/keep%03d", i), 0o644, dist.Layout{}); err != nil {
			t.Fatal(err)
		}
	}
	churn(t, s, 0)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	synced, syncedDB := rootNames(t, s), readAll(t, path)
	ckpt, ok, err := readCheckpoint(path + checkpointSuffix)
	if err != nil || !ok {
		t.Fatalf("no checkpoint after Sync: %v", err)
	}
	for round := 1; round <= 3; round++ {
		churn(t, s, round)
	}
	// What the page cache holds, and what a kill -9 leaves.
	latest, latestDB := rootNames(t, s), readAll(t, path)
	if slices.Equal(latest, synced) {
		t.Fatal("the changes after the sync changed nothing")
	}
	if rec, _, _ := readCheckpoint(path + checkpointSuffix); rec.txid != ckpt.txid {
		t.Fatalf("a checkpoint (transaction %d) was made after Sync's (%d) without a Sync", rec.txid, ckpt.txid)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	_, _, _, ps, err := readMetas(bytesReaderAt(syncedDB))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 24 {
		img := slices.Clone(latestDB)
		for p := 0; p*ps < len(img); p++ {
			keepLatest := rng.IntN(2) == 0
			if p < 2 && trial%2 == 0 {
				keepLatest = true // the worst case: the unsynced meta page reached the disk
			}
			if keepLatest {
				continue
			}
			old := make([]byte, ps) // a page never written before the sync reads as zeros
			if (p+1)*ps <= len(syncedDB) {
				copy(old, syncedDB[p*ps:])
			}
			copy(img[p*ps:(p+1)*ps], old)
		}
		got := reopenImage(t, img, ckpt, "boot-2")
		if !slices.Equal(got, synced) {
			t.Fatalf("trial %d: after a power cut, / holds %d names (%v...), want the %d synced ones", trial, len(got), got[:min(5, len(got))], len(synced))
		}
	}

	// The same boot (the metadata server was killed, the machine stayed
	// up): every answered change is there.
	if got := reopenImage(t, latestDB, ckpt, "boot-1"); !slices.Equal(got, latest) {
		t.Fatalf("after a kill in the same boot, / holds %d names, want the %d answered ones", len(got), len(latest))
	}
}

// reopenImage writes image as a meta.db of its own, with checkpoint rec
// (made for that file), opens it with boot ID boot and lists "/".
func reopenImage(t *testing.T, image []byte, rec checkpointRecord, boot string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.db")
	writeImage(t, path, image, rec)
	s := deferredStore(t, path, &boot)
	defer s.Close()
	return rootNames(t, s)
}

// writeImage writes image to path as meta.db, and checkpoint rec beside
// it, made to name that file (its identity changes with the write).
func writeImage(t *testing.T, path string, image []byte, rec checkpointRecord) {
	t.Helper()
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	rec.ident = identOf(fi)
	if err := os.WriteFile(path+checkpointSuffix, encodeCheckpoint(rec), 0o600); err != nil {
		t.Fatal(err)
	}
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, os.ErrClosed
	}
	return copy(p, b[off:]), nil
}

// Every change answered before Sync is in the checkpoint Sync makes, and
// timed checkpoints follow answered changes within the interval.
func TestSyncIntervalCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(path, Options{Servers: 1, SyncInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Mkdir(ctx, "/a", 0o755); err != nil {
		t.Fatal(err)
	}
	s.dur.mu.Lock()
	mkdir := s.dur.committed
	s.dur.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.dur.mu.Lock()
		synced := s.dur.synced
		s.dur.mu.Unlock()
		if synced >= mkdir {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction %d not synced within 10 s, with a 10 ms interval (synced: %d)", mkdir, synced)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Idle: no more checkpoints.
	n := s.dur.checkpoints.Load()
	time.Sleep(50 * time.Millisecond)
	if got := s.dur.checkpoints.Load(); got != n {
		t.Fatalf("%d checkpoints while nothing changed", got-n)
	}
}

// A negative SyncInterval keeps bbolt's fsync per commit: no checkpoint
// file, no anchor.
func TestSyncIntervalOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(path, Options{Servers: 1, SyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.dur != nil || s.db.NoSync {
		t.Fatal("deferred durability on with a negative SyncInterval")
	}
	if _, err := os.Stat(path + checkpointSuffix); !os.IsNotExist(err) {
		t.Fatalf("checkpoint file with deferred durability off: %v", err)
	}
}

// A checkpoint that fails (here: its file cannot be written) stops the
// store from answering changes, with an error saying why and what to
// do; reads go on. Nothing answered after a failed sync could be
// promised durable.
func TestFailedSyncRefusesChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	boot := "boot-1"
	s := deferredStore(t, path, &boot)
	defer s.Close()
	if _, err := s.Mkdir(ctx, "/before", 0o755); err != nil {
		t.Fatal(err)
	}
	s.dur.cpMu.Lock()
	s.dur.ckpt.Close() // the next checkpoint's write fails
	s.dur.cpMu.Unlock()
	err := s.Sync(ctx)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "changes refused until the metadata server is restarted") {
		t.Fatalf("Sync after the checkpoint file broke: %v, want EIO saying changes are refused", err)
	}
	if _, err := s.Mkdir(ctx, "/after", 0o755); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Mkdir after a failed sync: %v, want EIO", err)
	}
	if got := rootNames(t, s); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("after a failed sync / holds %v, want [before] (reads go on, changes are refused)", got)
	}
}

// The checkpoint file's newest slot is the one with the higher sequence
// number: a torn newest slot leaves the other, and a meta.db restored
// from a backup (its transactions going back in time, the file's inode
// the same) gets checkpoints that win over the ones of the newer
// database it replaced.
func TestCheckpointSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	boot := "boot-1"
	s := deferredStore(t, path, &boot)
	if _, err := s.Mkdir(ctx, "/a", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	backup := readAll(t, path)
	for i := range 20 {
		if _, err := s.Mkdir(ctx, fmt.Sprintf("/later%d", i), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	newest, ok, err := readCheckpoint(path + checkpointSuffix)
	if err != nil || !ok {
		t.Fatalf("no checkpoint: %v", err)
	}

	// A torn newest slot: the other is read.
	ckpt := readAll(t, path+checkpointSuffix)
	torn := slices.Clone(ckpt)
	copy(torn[newest.slot*ckptSlot+20:], "torn torn torn")
	if err := os.WriteFile(path+checkpointSuffix, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	if rec, ok, _ := readCheckpoint(path + checkpointSuffix); !ok || rec.slot == newest.slot || rec.seq != newest.seq-1 {
		t.Fatalf("with the newest slot (%d, sequence %d) torn, read slot %d sequence %d (ok %v), want the other, one before", newest.slot, newest.seq, rec.slot, rec.seq, ok)
	}
	if err := os.WriteFile(path+checkpointSuffix, ckpt, 0o600); err != nil {
		t.Fatal(err)
	}

	// The backup goes back in place (same inode), and is used.
	if err := os.WriteFile(path, backup, 0o600); err != nil {
		t.Fatal(err)
	}
	s = deferredStore(t, path, &boot)
	if got := rootNames(t, s); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("restored backup holds %v, want [a]", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	_, txids, _, _, err := readMetas(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rec, _, _ := readCheckpoint(path + checkpointSuffix)
	if want := max(txids[0], txids[1]); rec.txid != want || rec.txid >= newest.txid {
		t.Fatalf("after the restored backup's run the newest checkpoint is transaction %d, want its last (%d), below the replaced database's %d", rec.txid, want, newest.txid)
	}
}

// Op sync (what fsync through the mount and File.Sync send) answers once
// every change answered before it is durable.
func TestSyncOp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	boot := "boot-1"
	s := deferredStore(t, path, &boot)
	defer s.Close()
	if _, err := s.Mkdir(ctx, "/a", 0o755); err != nil {
		t.Fatal(err)
	}
	syncs, unsynced, _ := s.SyncStats()
	if unsynced == 0 {
		t.Fatal("a change answered with a one-hour sync interval is already synced")
	}
	h := &Handler{Store: s}
	if _, err := h.ServeWire(t.Context(), &wire.Request{Op: OpSync.Code}); err != nil {
		t.Fatal(err)
	}
	after, unsynced, failed := s.SyncStats()
	if unsynced != 0 || after != syncs+1 || failed {
		t.Fatalf("after op sync: %d unsynced transactions, %d checkpoints (before %d), failed %v; want 0, one more, false", unsynced, after, syncs, failed)
	}
}

// A database that grows past half of its memory map goes back to a
// synced commit per transaction (the anchor would make a remap wait for
// ever). From then on every answered change is on disk, so a power cut
// after it must not put meta.db back to the last checkpoint: that would
// lose changes answered as durable, and their commits, made without the
// anchor, may have reused the checkpoint's pages. Commits past the first
// map must not hang either.
func TestMmapFallbackKeepsSyncedCommits(t *testing.T) {
	defer func(v int64) { deferredMmapSize = v }(deferredMmapSize)
	deferredMmapSize = 1 << 20
	dir := t.TempDir()
	path := filepath.Join(dir, "meta.db")
	boot := "boot-1"
	s := deferredStore(t, path, &boot)
	long := strings.Repeat("x", 200)
	create := func(from, to int) {
		done := make(chan error, 1)
		go func() {
			for i := from; i < to; i++ {
				if _, err := s.Create(ctx, fmt.Sprintf("/%s-%05d", long, i), 0o644, dist.Layout{}); err != nil {
					done <- err
					return
				}
				if i%200 == 0 {
					if err := s.Sync(ctx); err != nil {
						done <- err
						return
					}
				}
			}
			done <- nil
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(15 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("creates hung at %d (database %d bytes): a remap waiting for the anchor?\n%s", from, fileSize(t, path), buf[:runtime.Stack(buf, true)])
		}
	}
	n := 0
	for ; !s.dur.fellBack; n += 200 {
		if n > 20000 {
			t.Fatalf("%d creates and no fallback (database %d bytes)", n, fileSize(t, path))
		}
		create(n, n+200)
	}
	if s.db.NoSync {
		t.Fatal("fell back, but commits are still not synced")
	}
	// Past the whole first map: bbolt must remap.
	for fileSize(t, path) < 3<<20 {
		create(n, n+500)
		n += 500
	}
	want := allNames(t, s)
	if len(want) != n {
		t.Fatalf("%d names, want %d", len(want), n)
	}
	image := readAll(t, path) // every change is synced: this is the disk
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	boot = "boot-2" // a power cut and a reboot
	s2 := deferredStore(t, path, &boot)
	defer s2.Close()
	if got := allNames(t, s2); !slices.Equal(got, want) {
		t.Fatalf("after a power cut past the fallback: %d names, want the %d answered (synced) ones", len(got), len(want))
	}
}

// allNames lists "/" of s, every page.
func allNames(t *testing.T, s *Store) []string {
	t.Helper()
	var all []string
	for cookie := ""; ; {
		ents, next, err := s.ReaddirPage(ctx, "/", cookie, 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, names(ents)...)
		if next == "" {
			return all
		}
		cookie = next
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Recovery after a power cut puts the checkpoint's meta page on a copy of
// meta.db and checks the copy first: if the pages it points to did not
// survive (here: every page but the two meta pages lost), Open refuses
// with an error that says so, and meta.db is left exactly as it was for
// the operator (no half-done rollback in place).
func TestRecoveryRefusesAnInconsistentRollback(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "meta.db")
	boot := "boot-1"
	s := deferredStore(t, path, &boot)
	for i := range 80 {
		if _, err := s.Create(ctx, fmt.Sprintf("/keep%03d", i), 0o644, dist.Layout{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := readCheckpoint(path + checkpointSuffix)
	if err != nil || !ok {
		t.Fatalf("no checkpoint after Sync: %v", err)
	}
	churn(t, s, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	img := readAll(t, path)
	_, _, _, ps, err := readMetas(bytesReaderAt(img))
	if err != nil {
		t.Fatal(err)
	}
	clear(img[2*ps:])             // the tree's pages never reached the disk
	writeImage(t, path, img, rec) // Sync's checkpoint; Close made a later one
	boot = "boot-2"
	_, err = Open(path, Options{Servers: 1, SyncInterval: time.Hour, BootID: func() (string, error) { return boot, nil }})
	if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "left as it is") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a database whose synced pages are lost: %v; want an error naming it, saying it is left as it is", err)
	}
	if got := readAll(t, path); !slices.Equal(got, img) {
		t.Fatal("recovery changed meta.db although its rollback did not check out")
	}
	if _, err := os.Stat(path + ".rollback"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the rollback's copy is left behind: %v", err)
	}
}
