package meta

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// watchLease is short so that tests of lapsed leases are quick.
const watchLease = 300 * time.Millisecond

func openWatched(t *testing.T, path string) *Store {
	t.Helper()
	s := openAt(t, path, Options{Servers: 1})
	s.hub.lease = watchLease
	return s
}

func poll(t *testing.T, s *Store, req WatchRequest) WatchResponse {
	t.Helper()
	resp, err := s.Watch(context.Background(), req)
	if err != nil {
		t.Fatalf("Watch(%+v): %v", req, err)
	}
	return resp
}

// async runs fn and reports when it returned.
func async(fn func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	return done
}

func TestWatchMutationWaitsForAck(t *testing.T) {
	ctx := context.Background()
	s := openWatched(t, filepath.Join(t.TempDir(), "meta.db"))
	dir := okAttr(t)(s.Mkdir(ctx, "/d", 0o755)) // no watcher: no wait
	f := okAttr(t)(s.Mknod(ctx, "/d/f", KindFIFO, 0o644, 0))

	w := poll(t, s, WatchRequest{})
	if w.Watcher == 0 || w.Lease != watchLease {
		t.Fatalf("registration = %+v, want an ID and lease %v", w, watchLease)
	}
	var renameErr error
	done := async(func() { _, renameErr = s.Rename(ctx, "/d/f", "/g") })
	// The rename commits, then waits for this watcher.
	resp := poll(t, s, WatchRequest{Watcher: w.Watcher, Acked: w.Seq})
	select {
	case <-done:
		t.Fatal("rename answered before the watcher acknowledged its changes")
	default:
	}
	want := Change{ID: f.ID, Parent: dir.ID, Name: "f"}
	if !slices.Contains(resp.Changes, want) || !slices.Contains(resp.Changes, Change{ID: dir.ID}) || !slices.Contains(resp.Changes, Change{ID: RootID}) {
		t.Fatalf("changes %+v: want %+v and the attributes of /d and /", resp.Changes, want)
	}
	// Acknowledging answers the rename; the ack's poll waits for more.
	ack := async(func() { poll(t, s, WatchRequest{Watcher: w.Watcher, Acked: resp.Seq}) })
	select {
	case <-done:
	case <-time.After(watchLease / 2):
		t.Fatal("rename still waiting after the acknowledgement")
	}
	if renameErr != nil {
		t.Fatal(renameErr)
	}
	<-ack
}

func TestWatchLapsedLeaseStopsTheWait(t *testing.T) {
	ctx := context.Background()
	s := openWatched(t, filepath.Join(t.TempDir(), "meta.db"))
	w := poll(t, s, WatchRequest{})
	start := time.Now()
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755)) // the watcher never polls again
	if took := time.Since(start); took < watchLease/2 || took > 5*watchLease {
		t.Fatalf("mkdir took %v with a silent watcher, want about its lease %v", took, watchLease)
	}
	// Its next poll is a new registration: the old lease is gone.
	if again := poll(t, s, WatchRequest{Watcher: w.Watcher, Acked: w.Seq}); again.Watcher == w.Watcher {
		t.Fatalf("poll after the lease lapsed kept watcher %d", w.Watcher)
	}
	if n := s.Watchers(); n != 1 {
		t.Fatalf("Watchers() = %d, want 1", n)
	}
}

func TestWatchLeaveStopsTheWait(t *testing.T) {
	ctx := context.Background()
	s := openWatched(t, filepath.Join(t.TempDir(), "meta.db"))
	w := poll(t, s, WatchRequest{})
	poll(t, s, WatchRequest{Watcher: w.Watcher, Leave: true})
	start := time.Now()
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	if took := time.Since(start); took > watchLease/2 {
		t.Fatalf("mkdir took %v after the only watcher left", took)
	}
}

// A restarted server cannot see the leases its previous run gave, so it
// answers no mutation before they have ended (as recorded in the
// database); a database that never gave one, or whose leases have ended,
// does not wait.
func TestWatchGraceAfterRestart(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		watched bool
		down    time.Duration // between the last poll and the restart
		wait    bool
	}{
		{"never watched", false, 0, false},
		{"leases still running", true, 0, true},
		{"leases ended", true, 2 * watchLease, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "meta.db")
			s := openWatched(t, path)
			if tc.watched {
				poll(t, s, WatchRequest{})
			}
			s.Close()
			time.Sleep(tc.down)
			s = openWatched(t, path)
			start := time.Now()
			okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
			took := time.Since(start)
			if tc.wait && took < watchLease*9/10 {
				t.Errorf("first mkdir after the restart took %v, want at least the lease %v", took, watchLease)
			}
			if !tc.wait && took > watchLease/2 {
				t.Errorf("first mkdir after the restart took %v, want no wait", took)
			}
		})
	}
}

// A mutation from a mount neither waits for that mount's acknowledgement
// nor is sent to it (its kernel applied the change), but still waits for
// every other mount's.
func TestWatchOriginNotAwaited(t *testing.T) {
	ctx := context.Background()
	s := openWatched(t, filepath.Join(t.TempDir(), "meta.db"))
	s.hub.lease = time.Minute // a wait would outlast the test's patience
	a := poll(t, s, WatchRequest{})
	fromA := WithCred(ctx, Cred{Watcher: a.Watcher})
	before := s.AcksAwaited()
	select {
	case <-async(func() { okAttr(t)(s.Mkdir(fromA, "/d", 0o755)) }):
	case <-time.After(5 * time.Second):
		t.Fatal("a mount's mkdir waited for that mount's own acknowledgement")
	}
	if got := s.AcksAwaited() - before; got != 0 {
		t.Errorf("acknowledgements awaited for a mount's own change: %d, want 0", got)
	}
	resp := poll(t, s, WatchRequest{Watcher: a.Watcher, Acked: a.Seq})
	if len(resp.Changes) != 0 {
		t.Errorf("a mount was sent its own change: %+v", resp.Changes)
	}

	// With a second mount, a change from the first waits for the second.
	b := poll(t, s, WatchRequest{})
	before = s.AcksAwaited()
	done := async(func() { okAttr(t)(s.Mkdir(fromA, "/e", 0o755)) })
	select {
	case <-done:
		t.Fatal("a change was answered before the other mount acknowledged it")
	case <-time.After(50 * time.Millisecond):
	}
	rb := poll(t, s, WatchRequest{Watcher: b.Watcher, Acked: b.Seq})
	poll(t, s, WatchRequest{Watcher: b.Watcher, Acked: rb.Seq})
	<-done
	if got := s.AcksAwaited() - before; got != 1 {
		t.Errorf("acknowledgements awaited with two mounts: %d, want 1 (the other mount's)", got)
	}
}

// A restarted metadata server never hands a mount the watcher ID another
// mount held before the restart: that mount's changes would count as the
// new holder's own, which publish neither sends to it nor waits for.
func TestWatcherIDsNotReusedAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s := openWatched(t, path)
	before := poll(t, s, WatchRequest{}).Watcher
	s.Close()
	s = openWatched(t, path)
	after := poll(t, s, WatchRequest{}).Watcher
	if after == before || after == 0 {
		t.Fatalf("watcher ID %d after the restart, %d before: want a fresh, non-zero one", after, before)
	}
}

// TestLeaseRenewedWithAQuarterToSpare checks the timing rule of pollHold
// and LeaseMargin for leases from a millisecond to an hour: a watcher
// that polls again at once renews before its lease lapses, with a
// quarter of it to spare, so that a short lease does not lapse for a
// moment at every renewal (as a 3 s lease did with fixed one-second
// holds and margins).
func TestLeaseRenewedWithAQuarterToSpare(t *testing.T) {
	for lease := time.Millisecond; lease <= time.Hour; lease = lease * 5 / 4 {
		hold, margin := pollHold(lease), LeaseMargin(lease)
		if hold <= 0 || margin <= 0 {
			t.Fatalf("lease %v: hold %v, margin %v; want both positive", lease, hold, margin)
		}
		// The lease an answer gives runs from when its poll was sent, a
		// hold before; the next answer comes a hold after.
		if spare := lease - margin - 2*hold; spare < lease/4 {
			t.Errorf("lease %v: %v to spare at the next renewal, want at least %v", lease, spare, lease/4)
		}
		if lease >= 4*time.Second && (hold != maxHold || margin != maxLeaseMargin) {
			t.Errorf("lease %v: hold %v, margin %v; want the long-lease %v and %v", lease, hold, margin, maxHold, maxLeaseMargin)
		}
	}
}
