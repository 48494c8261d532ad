package data

import (
	"context"
	"math"
	"sync"
)

// extentLocks emulates Lustre's extent locks on each datafile, for the
// emulated disk (StoreOptions.LockRevoke, `pario up --lock-revoke`): the
// HDF5 thesis (seed 002) blames them for its collapses, where two clients
// alternate strips of one object and each write takes the lock from the
// other. Nothing here locks anything; it counts the revocations a real
// lock manager would make, and the disk charges each one.
//
// A lock belongs to an origin, a writer as Lustre's lock belongs to a
// client node: a native client, or one process writing through a mount
// (WriteRequest.Origin). Only writes take locks (the thesis' collapses are
// writes), in one mode, so any two origins' locks conflict where they
// overlap. The rules, after Lustre's ldlm extent policy:
//
//   - A write inside its origin's lock costs nothing more.
//   - Otherwise every other origin's lock that overlaps the write is
//     revoked, one revocation each.
//   - The new lock grows from the write into the gap bounded by the other
//     origins' locks and by their last requests, which stand in for
//     Lustre's queue of waiting requests (a lock is not granted over a
//     region another writer is working in). With more than four other
//     locks on the datafile it grows upwards only, as Lustre's does on a
//     contended resource.
//
// So a writer alone on a datafile takes it whole once; writers in disjoint
// regions settle after a few revocations, at most three per pair of
// neighbours whatever the order of their writes; and two writers that
// alternate strips of one datafile in lockstep revoke on every write. Once
// one of them runs ahead of the other, only the follower's writes revoke
// (the leader's new grants start past the follower's last request and hold
// until the follower's next write): half as many as in step, where Lustre,
// which bounds grants only by requests actually waiting, would revoke on
// both sides.
type extentLocks struct {
	mu    sync.Mutex
	files map[uint64][]extentHolder // datafile id -> its writers
}

// extentHolder is one origin's state on one datafile.
type extentHolder struct {
	origin uint64
	lock   span // granted; empty once revoked
	last   span // its last write
}

// span is the byte range [start, end) of a datafile; end is math.MaxInt64
// for a lock open to the end.
type span struct{ start, end int64 }

func (s span) empty() bool { return s.end <= s.start }

func (s span) contains(o span) bool { return !s.empty() && s.start <= o.start && o.end <= s.end }

func (s span) overlaps(o span) bool { return s.start < o.end && o.start < s.end }

// Bounds on what is remembered: forgetting a datafile's locks costs at
// most a revocation per writer, as a lock manager that cancelled idle
// locks would.
const (
	maxLockedFiles = 4096
	maxLockHolders = 256 // per datafile
	contendedLocks = 4   // other locks on a datafile past which grants do not grow downwards
)

// write records a write of n bytes at off of datafile id by origin and
// returns the locks it revokes. Origin 0 (a writer that names none: the
// metadata server, a peer of an older build) takes no lock.
func (l *extentLocks) write(id, origin uint64, off, n int64) int {
	if origin == 0 || n <= 0 {
		return 0
	}
	req := span{off, off + n}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.files == nil {
		l.files = make(map[uint64][]extentHolder)
	}
	hs := l.files[id]
	me := -1
	for i := range hs {
		if hs[i].origin == origin {
			me = i
			break
		}
	}
	if me >= 0 && hs[me].lock.contains(req) {
		hs[me].last = req
		return 0
	}
	if me < 0 {
		if len(hs) >= maxLockHolders {
			hs = hs[:0]
		}
		if _, known := l.files[id]; !known && len(l.files) >= maxLockedFiles {
			clear(l.files)
		}
		hs = append(hs, extentHolder{origin: origin})
		me = len(hs) - 1
	}
	revoked, held := 0, 0
	grant := span{0, math.MaxInt64}
	for i := range hs {
		if i == me {
			continue
		}
		o := &hs[i]
		if !o.lock.empty() {
			held++
			if o.lock.overlaps(req) {
				o.lock = span{}
				revoked++
			}
		}
		for _, s := range [2]span{o.lock, o.last} {
			switch {
			case s.empty():
			case s.end <= req.start:
				grant.start = max(grant.start, s.end)
			case s.start >= req.end:
				grant.end = min(grant.end, s.start)
			}
		}
	}
	if held > contendedLocks {
		grant.start = req.start
	}
	hs[me].lock, hs[me].last = grant, req
	l.files[id] = hs
	return revoked
}

// originKey carries a write's origin from its request to the emulated
// disk, through Store.WriteAt and WriteAtv, whose other callers name none.
type originKey struct{}

func withOrigin(ctx context.Context, origin uint64) context.Context {
	if origin == 0 {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, origin)
}

// originOf is the origin of the write ctx carries (0: none).
func originOf(ctx context.Context) uint64 {
	o, _ := ctx.Value(originKey{}).(uint64)
	return o
}
