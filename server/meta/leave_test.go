package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// leaveLease is long: a test that found a grace period it did not want
// would hang on it, not pass by luck.
const leaveLease = time.Minute

func openLeave(t *testing.T, path string) *Store {
	t.Helper()
	s := openAt(t, path, Options{Servers: 1})
	s.hub.lease = leaveLease
	return s
}

// graceLeft is how long the restarted s answers no mutation.
func graceLeft(s *Store) time.Duration {
	h := &s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	s.startHubLocked()
	return max(time.Until(h.grace), 0)
}

// mkdirAtOnce fails the test unless a mkdir is answered without waiting
// out a lease (leaveLease is a minute; 20 s is room for a loaded machine).
func mkdirAtOnce(t *testing.T, s *Store, path string) {
	t.Helper()
	select {
	case <-async(func() { okAttr(t)(s.Mkdir(context.Background(), path, 0o755)) }):
	case <-time.After(20 * time.Second):
		t.Fatalf("mkdir %s still waiting after 20 s: a grace period nobody needed", path)
	}
}

// A mount that unmounts gives its lease back, and the record of when the
// leases end moves back with it: a restart once every mount has left
// waits for nothing. A lease not given back (a mount still mounted, or
// killed with -9, whose poll simply stops) is still waited for.
func TestWatchLeaveShortensTheGraceAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mounts int // registered
		leave  int // of those, how many give their lease back
		wait   bool
	}{
		{"the only mount left", 1, 1, false},
		{"every mount left", 3, 3, false},
		{"one of two still holds a lease", 2, 1, true},
		{"a killed mount never left", 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "meta.db")
			s := openLeave(t, path)
			var ws []WatchResponse
			for range tc.mounts {
				ws = append(ws, poll(t, s, WatchRequest{}))
			}
			for _, w := range ws[:tc.leave] {
				poll(t, s, WatchRequest{Watcher: w.Watcher, Leave: true})
			}
			s.Close()
			s = openLeave(t, path)
			left := graceLeft(s)
			if tc.wait && left < leaveLease/2 {
				t.Fatalf("grace after the restart %v, want about the lease %v: a lease still held is not waited for", left, leaveLease)
			}
			if !tc.wait {
				if left != 0 {
					t.Fatalf("grace after the restart %v, want none: every mount gave its lease back", left)
				}
				mkdirAtOnce(t, s, "/e")
			}
		})
	}
}

// Moving the record back never undoes the grace of a previous run: a
// mount of that run may still trust its caches, whoever leaves now.
func TestWatchLeaveKeepsThePreviousRunsGrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s := openLeave(t, path)
	poll(t, s, WatchRequest{}) // a mount that is then killed
	s.Close()
	s = openLeave(t, path)
	w := poll(t, s, WatchRequest{})
	poll(t, s, WatchRequest{Watcher: w.Watcher, Leave: true})
	s.Close()
	s = openLeave(t, path)
	if left := graceLeft(s); left < leaveLease/2 {
		t.Fatalf("grace after the second restart %v, want the first run's lease (%v) still waited for", left, leaveLease)
	}
}

// A lease given back but not yet moved back in the record (the server
// died between the two, here: the write failed) is still waited for.
func TestWatchLeaveUnrecordedStillWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s := openLeave(t, path)
	w := poll(t, s, WatchRequest{})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Watch(gone, WatchRequest{Watcher: w.Watcher, Leave: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("leave with a cancelled context: %v, want the record's write refused", err)
	}
	if n := s.Watchers(); n != 0 {
		t.Fatalf("Watchers() = %d after the leave, want 0", n)
	}
	s.Close()
	s = openLeave(t, path)
	if left := graceLeft(s); left < leaveLease/2 {
		t.Fatalf("grace after the restart %v, want the lease %v waited for", left, leaveLease)
	}
}

// recordedEnd reads the recorded end of the leases from the database.
func recordedEnd(t *testing.T, s *Store) time.Time {
	t.Helper()
	var end time.Time
	err := s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyLeasesEnd); len(v) == 8 {
			end = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// Mounts registering, renewing and leaving at once never leave a lease
// running past the recorded end: whenever no record write is under way,
// the database's end is at or after the hub's, which is at or after every
// lease held.
func TestWatchRecordCoversEveryLeaseUnderConcurrency(t *testing.T) {
	s := openWatched(t, filepath.Join(t.TempDir(), "meta.db"))
	h := &s.hub
	check := func() {
		t.Helper()
		h.recordMu.Lock()
		defer h.recordMu.Unlock()
		rec := recordedEnd(t, s)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.ends.After(rec) {
			t.Errorf("hub's end %v after the recorded %v", h.ends, rec)
		}
		for id, w := range h.watchers {
			if w.expires.After(h.ends) {
				t.Errorf("watcher %d's lease ends %v, after the hub's end %v", id, w.expires, h.ends)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for ctx.Err() == nil {
				w, err := s.Watch(ctx, WatchRequest{})
				if err != nil {
					continue
				}
				for range 3 {
					if w, err = s.Watch(ctx, WatchRequest{Watcher: w.Watcher, Acked: w.Seq}); err != nil {
						break
					}
				}
				_, _ = s.Watch(ctx, WatchRequest{Watcher: w.Watcher, Leave: true})
			}
		})
	}
	for deadline := time.Now().Add(3 * watchLease); time.Now().Before(deadline) && !t.Failed(); {
		check()
	}
	cancel()
	wg.Wait()
	check()
}

// A poll the mount sent before it gave its lease back can be served after
// the give-back (handlers run concurrently). It must not register the
// unmounted mount again: nobody would renew that lease, yet the record
// would wait for it at a restart, and changes for its acknowledgement.
func TestWatchLatePollAfterLeaveRegistersNothing(t *testing.T) {
	s := openLeave(t, filepath.Join(t.TempDir(), "meta.db"))
	w := poll(t, s, WatchRequest{})
	poll(t, s, WatchRequest{Watcher: w.Watcher, Leave: true})
	resp, err := s.Watch(context.Background(), WatchRequest{Watcher: w.Watcher, Acked: w.Seq})
	if err == nil {
		t.Errorf("a poll of watcher %d after it left: registered as watcher %d, want it refused", w.Watcher, resp.Watcher)
	}
	if n := s.Watchers(); n != 0 {
		t.Fatalf("%d watchers after the only mount left and its late poll came in, want 0", n)
	}
	mkdirAtOnce(t, s, "/after")
	// A new mount still registers.
	if w2 := poll(t, s, WatchRequest{}); w2.Watcher == 0 || w2.Watcher == w.Watcher {
		t.Errorf("a new mount registered as %d (the one that left was %d)", w2.Watcher, w.Watcher)
	}
}
