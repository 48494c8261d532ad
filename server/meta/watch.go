package meta

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
)

// Cache invalidation for mounts (AFS callbacks, NFSv4 delegations): a
// mount that caches attributes and names registers as a watcher and
// polls OpWatch, each poll renewing its lease. Every committed mutation
// hands the changes it made to every watcher and is answered only once
// each watcher has acknowledged them (its next poll) or its lease has run
// out. A mount trusts its caches only within the lease it holds, so no
// cache anywhere shows a change's old state once the change is answered.
//
// A metadata server that restarts does not know the leases its previous
// run gave. So the database records a time by which every lease given
// has ended (keyLeasesEnd, moved forward before a lease that would
// outlast it is given), and a restarted server answers no mutation
// before that time (a grace period, as NFSv4's). A mount that unmounts
// gives its lease back (WatchRequest.Leave), and the record is moved
// back to the end of the latest lease still held (leave), so that a
// restart after every mount has gone answers at once.
//
// The rule that keeps the record safe: every lease given ends by
// hub.ends, and hub.ends is never after what the database holds. A
// lease is given only under hub.mu and only if it ends by hub.ends;
// the record moves forward in the database first and in hub.ends after,
// and back in hub.ends first (under hub.mu, from the leases held at that
// moment) and in the database after; recordMu keeps those writes in
// order. A crash between a lease given back and the record moved back
// leaves the later end in the database, so the restart waits.

// Lease is how long a watcher's poll keeps its lease, unless the
// environment variable PARIO_LEASE (a Go duration, "30s") says otherwise.
// A mount that stops polling (crashed, hung, cut off) delays other
// clients' mutations by at most this long once; a mount keeps what it
// cached for at most this long, so it should outlast a phase of work
// (mdtest's creates, then its stats).
const Lease = 30 * time.Second

// MaxGrace is the longest a restarted metadata server answers no change
// (its grace period) after a run that gave leases of this length: the
// record of when they end is kept up to a lease and a half ahead, so that
// it is not rewritten at every poll. A client whose calls give up sooner
// than this fails a change made during a grace (pario mount's
// --op-timeout is longer).
func MaxGrace(lease time.Duration) time.Duration { return lease + lease/2 }

// leaseFromEnv is Lease, or PARIO_LEASE when that is a positive duration.
func leaseFromEnv() time.Duration {
	v := os.Getenv("PARIO_LEASE")
	if v == "" {
		return Lease
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		slog.Warn("pario meta: PARIO_LEASE is not a positive duration; using the default", "value", v, "default", Lease)
		return Lease
	}
	return d
}

// maxHold is how long a poll waits for changes before it answers empty,
// so that a lease is renewed well before it lapses.
const maxHold = time.Second

// maxLeaseMargin is what a watcher takes off the end of a long lease for
// the time its poll took to be answered and for clock rate drift.
const maxLeaseMargin = time.Second

// pollHold is how long a poll waits for changes under a lease of this
// length: maxHold, or a quarter of a short lease (PARIO_LEASE=3s). With
// LeaseMargin, a watcher that polls again as soon as it is answered
// renews its lease with at least a quarter of it to spare:
// lease - LeaseMargin - 2*pollHold >= lease/4 (the poll it renews with
// was sent a hold before the answer, and the next answer comes a hold
// later). With a one-second hold and margin a 3 s lease would lapse at
// every renewal, briefly, on the mount's side.
func pollHold(lease time.Duration) time.Duration { return min(maxHold, lease/4) }

// LeaseMargin is what a watcher takes off the end of a lease of this
// length, counted from when it sent the poll that the lease answered.
func LeaseMargin(lease time.Duration) time.Duration { return min(maxLeaseMargin, lease/4) }

// maxWatchChanges bounds the changes one poll answers; the rest wait for
// the next poll.
const maxWatchChanges = 4096

// keyLeasesEnd holds the wall-clock time (unix nanoseconds) by which
// every lease given has ended.
var keyLeasesEnd = []byte("leases_end")

// Change is what a mutation changed that a mount may have cached: the
// attributes of inode ID, and, with Name set, the entry Name of directory
// Parent, which no longer names ID (removed, renamed away or replaced).
// Parent equal to ID is no change but a recall of directory ID's
// delegation (deleg.go), sent to its holder only.
type Change struct {
	ID     FileID
	Parent FileID
	Name   string
}

// Recall reports whether c is a recall of a delegation.
func (c Change) Recall() bool { return c.Parent == c.ID }

// SplitRecalls separates the recalls from the changes.
func SplitRecalls(all []Change) (changes, recalls []Change) {
	for _, c := range all {
		if c.Recall() {
			recalls = append(recalls, c)
		} else {
			changes = append(changes, c)
		}
	}
	return changes, recalls
}

type pendingChange struct {
	seq uint64
	Change
}

type watcher struct {
	acked   uint64
	expires time.Time
	pending []pendingChange
	wake    chan struct{} // has a value when pending grew
}

// hub is a Store's watchers. The zero value is ready; its grace period is
// decided at first use.
type hub struct {
	// recordMu orders the writes of keyLeasesEnd (taken before mu,
	// never held by mu's holders while they wait for it).
	recordMu sync.Mutex
	mu       sync.Mutex
	started  bool
	grace    time.Time // no mutation is answered before this
	ends     time.Time // every lease given ends by this; keyLeasesEnd holds at least this
	seq      uint64
	nextID   uint64
	watchers map[uint64]*watcher
	// left holds the watchers that gave their lease back, until a lease
	// after: a poll of theirs served late (it raced the give-back) is
	// refused instead of registering a mount that has gone.
	left    map[uint64]time.Time
	acked   chan struct{} // closed (and replaced) whenever an ack or a lease may let a mutation go
	lease   time.Duration
	awaited uint64 // acknowledgements mutations waited for (AcksAwaited)
}

// startLocked decides the grace period the first time the hub is used.
func (s *Store) startHubLocked() {
	h := &s.hub
	if h.started {
		return
	}
	h.started = true
	h.watchers = map[uint64]*watcher{}
	h.left = map[uint64]time.Time{}
	// Watcher IDs start at a random point, so that a mount still holding
	// an ID from before a restart never names another mount's: a change
	// it makes would otherwise count as that mount's own, which is neither
	// sent to it nor waited for (Cred.Watcher). The top bits stay clear so
	// that counting up never wraps to 0, "register".
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	h.nextID = binary.BigEndian.Uint64(b[:]) >> 2
	h.acked = make(chan struct{})
	if h.lease == 0 {
		h.lease = leaseFromEnv()
	}
	_ = s.db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			if v := b.Get(keyLeasesEnd); len(v) == 8 {
				h.ends = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
			}
		}
		return nil
	})
	// Wall-clock time, since it is compared with a previous run's; at
	// most one lease and a half from now, whatever the clock did.
	if wait := time.Until(h.ends); wait > 0 {
		h.grace = time.Now().Add(min(wait, h.lease*3/2))
	}
}

// mutate runs fn as one mutation (see committer.update) and, once it has
// committed, waits until every watcher has been told what it changed.
func (s *Store) mutate(ctx context.Context, fn func(t *txn) error) error {
	return s.mutateWith(ctx, true, fn)
}

// mutateWith is mutate that, unless wait, answers once the watchers have
// been handed the changes, without waiting for their acknowledgements.
func (s *Store) mutateWith(ctx context.Context, wait bool, fn func(t *txn) error) error {
	var changes []Change
	var removals []FileID
	err := s.commit.update(ctx, func(tx *bbolt.Tx) error {
		t := newTxn(tx)
		t.cred = credOf(ctx)
		t.delegs = s.delegs.active()
		t.keepData = keepData(ctx)
		t.expect = ExpectFrom(ctx)
		err := fn(t)
		changes, removals = t.changes, t.removals
		return err
	})
	if err != nil {
		return err
	}
	if keepData(ctx) {
		// The caller removes the datafiles itself once answered: the
		// remove must not be undone by a power cut after that.
		if err := s.Sync(ctx); err != nil {
			return err
		}
	}
	if len(removals) > 0 {
		s.queueRemovals(removals)
	}
	var origin uint64
	if c := credOf(ctx); c != nil {
		origin = c.Watcher
	}
	s.publish(changes, origin, wait)
	return nil
}

// publish hands changes to every watcher and waits until each has
// acknowledged them or lost its lease. It waits without the caller's
// context: the change has committed, and its caller must not be told
// before the caches that could contradict it are gone. It does not wait
// for origin, the watcher of the mount that made the change (0: none),
// nor tell it: that mount's kernel applies the change itself from the
// answer (the new entry and attributes, the name gone, the directory's
// attributes dropped), and an invalidation arriving after that would
// only drop what the kernel has just cached. Only the kernel's namespace
// changes carry an origin (fusefs kernelsOwn).
func (s *Store) publish(changes []Change, origin uint64, wait bool) {
	h := &s.hub
	h.mu.Lock()
	s.startHubLocked()
	now := time.Now()
	if len(h.watchers) == 0 && !now.Before(h.grace) {
		h.mu.Unlock()
		return
	}
	h.seq++
	seq := h.seq
	for id, w := range h.watchers {
		if !now.Before(w.expires) {
			delete(h.watchers, id)
			s.delegs.dropHolder(id)
			continue
		}
		if id == origin {
			continue
		}
		for _, c := range changes {
			w.pending = append(w.pending, pendingChange{seq, c})
		}
		h.awaited++
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
	if !wait {
		return
	}
	for {
		h.mu.Lock()
		now := time.Now()
		var until time.Time
		if now.Before(h.grace) {
			until = h.grace
		}
		for id, w := range h.watchers {
			if id == origin {
				continue
			}
			if w.acked < seq && now.Before(w.expires) && (until.IsZero() || w.expires.Before(until)) {
				until = w.expires
			}
		}
		ch := h.acked
		h.mu.Unlock()
		if until.IsZero() {
			return
		}
		t := time.NewTimer(until.Sub(now))
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// WatchRequest is a mount's poll: Watcher is the ID a previous poll
// answered (0 to register), Acked the Seq of the last answer whose changes
// the mount has applied. Leave ends the lease at once (unmount).
type WatchRequest struct {
	Watcher uint64
	Acked   uint64
	Leave   bool
}

// WatchResponse answers a poll: Watcher is the caller's ID (a new one when
// the request's was unknown, its lease lapsed, or 0), Lease how long the
// lease runs from the moment the poll was sent, Changes the changes not
// yet acknowledged, and Seq what to acknowledge once they are applied.
type WatchResponse struct {
	Watcher uint64
	Seq     uint64
	Lease   time.Duration
	Changes []Change
}

// Watch serves one poll (see hub): it acknowledges req.Acked, renews the
// lease and answers the changes not acknowledged yet, waiting up to a
// second for some when there are none. req.Leave gives the lease back.
func (s *Store) Watch(ctx context.Context, req WatchRequest) (WatchResponse, error) {
	if req.Leave {
		return WatchResponse{}, s.leave(ctx, req.Watcher)
	}
	h := &s.hub
	h.mu.Lock()
	s.startHubLocked()
	// The lease this poll gives must end by the recorded time, with a
	// quarter lease to spare for writing the record; if it would not,
	// the record moves half a lease past it first (so it is written
	// about every quarter lease while mounts poll). The check is made
	// again under the lock that gives the lease: a mount's leave may
	// have moved the record back meanwhile, or the write taken long.
	now := time.Now()
	for now.Add(h.lease + h.lease/4).After(h.ends) {
		h.mu.Unlock()
		if err := s.extendLeasesEnd(ctx); err != nil {
			return WatchResponse{}, err
		}
		h.mu.Lock()
		if now = time.Now(); !now.Add(h.lease).After(h.ends) {
			break
		}
	}
	if _, gone := h.left[req.Watcher]; gone {
		h.mu.Unlock()
		return WatchResponse{}, fmt.Errorf("watch: watcher %d gave its lease back (a poll served after the unmount): %w", req.Watcher, syscall.ESTALE)
	}
	w := h.watchers[req.Watcher]
	if w == nil || !now.Before(w.expires) {
		delete(h.watchers, req.Watcher)
		s.delegs.dropHolder(req.Watcher)
		h.nextID++
		id := h.nextID
		w = &watcher{acked: h.seq, expires: now.Add(h.lease), wake: make(chan struct{}, 1)}
		h.watchers[id] = w
		resp := WatchResponse{Watcher: id, Seq: h.seq, Lease: h.lease}
		h.mu.Unlock()
		return resp, nil
	}
	w.expires = now.Add(h.lease)
	if req.Acked > w.acked {
		w.acked = req.Acked
		i := 0
		for i < len(w.pending) && w.pending[i].seq <= req.Acked {
			i++
		}
		w.pending = append(w.pending[:0:0], w.pending[i:]...)
		h.signalLocked()
	}
	if len(w.pending) == 0 {
		h.mu.Unlock()
		t := time.NewTimer(pollHold(h.lease))
		select {
		case <-w.wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		h.mu.Lock()
	}
	resp := WatchResponse{Watcher: req.Watcher, Seq: h.seq, Lease: h.lease}
	n := min(len(w.pending), maxWatchChanges)
	for _, p := range w.pending[:n] {
		resp.Changes = append(resp.Changes, p.Change)
	}
	if n < len(w.pending) {
		resp.Seq = w.pending[n-1].seq
		// The rest of that mutation's changes go with it.
		for n < len(w.pending) && w.pending[n].seq == resp.Seq {
			resp.Changes = append(resp.Changes, w.pending[n].Change)
			n++
		}
	}
	h.mu.Unlock()
	return resp, nil
}

// extendLeasesEnd moves the recorded end of the leases to a lease and a
// half from now, durably, unless it already lies more than a lease and
// a quarter ahead.
func (s *Store) extendLeasesEnd(ctx context.Context) error {
	h := &s.hub
	h.recordMu.Lock()
	defer h.recordMu.Unlock()
	h.mu.Lock()
	end := time.Now().Add(h.lease)
	if !end.Add(h.lease / 4).After(h.ends) {
		h.mu.Unlock()
		return nil // moved by another poll meanwhile
	}
	ends := time.Now().Add(MaxGrace(h.lease))
	h.mu.Unlock()
	if err := s.writeLeasesEnd(ctx, ends); err != nil {
		return err
	}
	// A restart after a power cut must still wait for these leases.
	if err := s.Sync(ctx); err != nil {
		return fmt.Errorf("watch: record when the leases end: %w", err)
	}
	h.mu.Lock()
	h.ends = ends // only recordMu's holder changes it, and it only grew
	h.mu.Unlock()
	return nil
}

// leave ends watcher's lease (a mount that unmounts gives it back) and
// moves the recorded end of the leases back to the latest end of those
// still held, never before the previous run's (the grace period) nor
// before now, so that a restart once every mount has gone waits for
// nothing.
func (s *Store) leave(ctx context.Context, watcher uint64) error {
	h := &s.hub
	h.recordMu.Lock()
	defer h.recordMu.Unlock()
	h.mu.Lock()
	s.startHubLocked()
	delete(h.watchers, watcher)
	s.delegs.dropHolder(watcher)
	h.signalLocked()
	now := time.Now()
	for id, until := range h.left {
		if now.After(until) {
			delete(h.left, id)
		}
	}
	if watcher != 0 {
		h.left[watcher] = now.Add(h.lease)
	}
	ends := now
	if h.grace.After(ends) {
		ends = h.grace
	}
	for _, w := range h.watchers {
		if w.expires.After(ends) {
			ends = w.expires
		}
	}
	back := ends.Before(h.ends)
	if back {
		// Before the database: from here on a lease is given only if it
		// ends by this, or after the record has moved forward again.
		h.ends = ends
	}
	h.mu.Unlock()
	if !back {
		return nil
	}
	// Not synced: a power cut that loses this keeps the later record,
	// and the restart waits, which is safe.
	return s.writeLeasesEnd(ctx, ends)
}

// writeLeasesEnd records ends as the time by which every lease given
// has ended. The caller holds recordMu.
func (s *Store) writeLeasesEnd(ctx context.Context, ends time.Time) error {
	err := s.commit.update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyLeasesEnd, binary.BigEndian.AppendUint64(nil, uint64(ends.UnixNano())))
	})
	if err != nil {
		return fmt.Errorf("watch: record when the leases end: %w", err)
	}
	return nil
}

func (h *hub) signalLocked() {
	close(h.acked)
	h.acked = make(chan struct{})
}

// AcksAwaited reports how many watcher acknowledgements mutations have
// waited for since start: one per watcher per mutation, the mutation's
// own mount not counted (for tests).
func (s *Store) AcksAwaited() uint64 {
	h := &s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.awaited
}

// LeaseStats is what the metadata server's leases and delegations
// have done since it started (for metrics).
type LeaseStats struct {
	Leases      int // mounts holding a lease now
	Delegations int // directories delegated to them now
	// Recalls sent to holders, those that ended because the holder's
	// lease ran out (a mount that died or hung: each delayed a request of
	// another client by up to the lease), and the time requests waited
	// for recalls in all.
	Recalls, RecallsLapsed uint64
	RecallWait             time.Duration
}

// LeaseStats reports the leases and delegations.
func (s *Store) LeaseStats() LeaseStats {
	d := &s.delegs
	return LeaseStats{
		Leases: s.Watchers(), Delegations: s.Delegations(),
		Recalls: d.recalls.Load(), RecallsLapsed: d.lapsed.Load(),
		RecallWait: time.Duration(d.recallWait.Load()),
	}
}

// Watchers reports how many mounts hold a lease (for tests and metrics).
func (s *Store) Watchers() int {
	h := &s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	now := time.Now()
	for _, w := range h.watchers {
		if now.Before(w.expires) {
			n++
		}
	}
	return n
}

// changed records that a's attributes changed.
func (t *txn) changed(id FileID) {
	t.changes = append(t.changes, Change{ID: id})
}

// unbound records that name in parent no longer names id.
func (t *txn) unbound(parent FileID, name string, id FileID) {
	t.changes = append(t.changes, Change{ID: id, Parent: parent, Name: name})
}
