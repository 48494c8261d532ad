package fusefs

import (
	"syscall"
	"testing"
	"time"
)

// returnsWithin reports whether fn returns within d (it keeps running
// otherwise).
func returnsWithin(d time.Duration, fn func()) bool {
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

const short = 50 * time.Millisecond

func TestWriteBehindOrdersOverlappingWrites(t *testing.T) {
	var w writeBehind
	w.init()
	a, _ := w.begin(0, 100, 1<<20)
	// Disjoint: at once.
	if !returnsWithin(time.Second, func() { b, _ := w.begin(100, 100, 1<<20); w.written(b, 0, false) }) {
		t.Fatal("a disjoint write waited")
	}
	// Overlapping: only after the first reached the servers.
	got := make(chan *span)
	go func() { sp, _ := w.begin(50, 10, 1<<20); got <- sp }()
	select {
	case <-got:
		t.Fatal("an overlapping write did not wait")
	case <-time.After(short):
	}
	w.written(a, 0, false)
	w.written(<-got, 0, false)
}

func TestWriteBehindLimit(t *testing.T) {
	var w writeBehind
	w.init()
	a, _ := w.begin(0, 600, 1000)
	if returnsWithin(short, func() { b, _ := w.begin(1000, 600, 1000); w.written(b, 0, false) }) {
		t.Fatal("went over the limit")
	}
	w.written(a, 0, false)
	// The blocked begin goes through now.
	if !returnsWithin(time.Second, w.wait) {
		t.Fatal("wait after the limit cleared")
	}
}

func TestWriteBehindWaitIsNotStarvedAndSkipsInvalidations(t *testing.T) {
	var w writeBehind
	w.init()
	a, _ := w.begin(0, 10, 1<<20)
	done := make(chan struct{})
	go func() { w.wait(); close(done) }()
	time.Sleep(short)
	b, _ := w.begin(10, 10, 1<<20) // begun after wait: not waited for
	w.written(a, 0, true)          // on the servers; invalidation pending
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("wait waited for a later write or for an invalidation")
	}
	// settle waits for the invalidation and for b.
	if returnsWithin(short, func() { w.settle() }) {
		t.Fatal("settle did not wait")
	}
	w.notified(a)
	w.written(b, 0, false)
	if !returnsWithin(time.Second, func() { w.settle() }) {
		t.Fatal("settle after all done")
	}
}

func TestWriteBehindReportsFailures(t *testing.T) {
	var w writeBehind
	w.init()
	a, _ := w.begin(0, 10, 1<<20)
	w.written(a, syscall.EIO, false)
	if _, errno := w.begin(10, 10, 1<<20); errno != syscall.EIO {
		t.Fatalf("next write: %v", errno)
	}
	if errno := w.settle(); errno != syscall.EIO {
		t.Fatalf("settle: %v", errno)
	}
	if errno := w.settle(); errno != 0 {
		t.Fatalf("second settle: %v", errno)
	}
	if _, errno := w.begin(10, 10, 1<<20); errno != 0 {
		t.Fatalf("write after the failure was reported: %v", errno)
	}
}
