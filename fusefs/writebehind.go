package fusefs

import (
	"slices"
	"sync"
	"syscall"
)

// writeBehind lets write(2) return once the data is copied, while the data
// travels to the I/O servers in the background: a sequential writer then
// keeps several requests in flight, as the kernel's read-ahead does for
// readers. One per open file, shared by its descriptors.
//
// At most a limit of bytes is in flight; a write that overlaps one still
// in flight waits for it, so the last write wins as written. Reads, stat
// and truncate wait for the writes begun before them (wait); fsync and
// close also for the page invalidations that follow them (settle), and
// report the first failure, which the next write reports too (as NFS and
// the kernel's own write-back do). Neither waits for writes begun after
// it, so a steady writer cannot starve them.
type writeBehind struct {
	mu      sync.Mutex
	cond    *sync.Cond
	seq     uint64  // writes begun so far
	spans   []*span // writes not done yet, in the order begun
	pending int64   // bytes of spans still being written
	errno   syscall.Errno
}

// span is one write in the background.
type span struct {
	off, end int64
	seq      uint64
	writing  bool // on its way to the servers; false once there (then only an invalidation is pending)
}

func (w *writeBehind) init() { w.cond = sync.NewCond(&w.mu) }

// begin registers a write of n bytes at off, waiting for room and for
// overlapping writes. It fails with the error of an earlier write not yet
// reported.
func (w *writeBehind) begin(off, n, limit int64) (*span, syscall.Errno) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sp := &span{off: off, end: off + n, writing: true}
	for {
		if w.errno != 0 {
			return nil, w.errno
		}
		if (w.pending == 0 || w.pending+n <= limit) && !w.overlaps(sp) {
			break
		}
		w.cond.Wait()
	}
	w.seq++
	sp.seq = w.seq
	w.spans = append(w.spans, sp)
	w.pending += n
	return sp, 0
}

func (w *writeBehind) overlaps(sp *span) bool {
	for _, x := range w.spans {
		if x.writing && x.off < sp.end && sp.off < x.end {
			return true
		}
	}
	return false
}

// written records that sp's data reached the servers (errno 0) or failed.
// With notify a page invalidation follows, and the span is done only at
// notified; otherwise it is done now.
func (w *writeBehind) written(sp *span, errno syscall.Errno, notify bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sp.writing = false
	w.pending -= sp.end - sp.off
	if errno != 0 && w.errno == 0 {
		w.errno = errno
	}
	if !notify {
		w.remove(sp)
	}
	w.cond.Broadcast()
}

// notified records that the invalidation announced to written is done.
func (w *writeBehind) notified(sp *span) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.remove(sp)
	w.cond.Broadcast()
}

func (w *writeBehind) remove(sp *span) {
	if i := slices.Index(w.spans, sp); i >= 0 {
		w.spans = slices.Delete(w.spans, i, i+1)
	}
}

// wait blocks until the writes begun so far have reached the servers (it
// does not wait for their invalidations: a read must not, since the
// reading task may hold a page lock an invalidation needs).
func (w *writeBehind) wait() {
	w.mu.Lock()
	defer w.mu.Unlock()
	barrier := w.seq
	for slices.ContainsFunc(w.spans, func(x *span) bool { return x.writing && x.seq <= barrier }) {
		w.cond.Wait()
	}
}

// failed returns (and forgets) the first failure not yet reported,
// without waiting for the writes in flight.
func (w *writeBehind) failed() syscall.Errno {
	w.mu.Lock()
	defer w.mu.Unlock()
	errno := w.errno
	w.errno = 0
	return errno
}

// settle blocks until the writes begun so far and their invalidations are
// done, and returns (and forgets) the first failure not yet reported.
func (w *writeBehind) settle() syscall.Errno {
	w.mu.Lock()
	defer w.mu.Unlock()
	barrier := w.seq
	for slices.ContainsFunc(w.spans, func(x *span) bool { return x.seq <= barrier }) {
		w.cond.Wait()
	}
	errno := w.errno
	w.errno = 0
	return errno
}
