package meta

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// A mutation that finds no commit under way runs in its caller's
// goroutine: no hand-off to a committer goroutine and back. The caller is
// locked to its thread, which runs no other goroutine, so the same
// thread ID inside fn means the same goroutine.
func TestLoneMutationCommitsInItsCaller(t *testing.T) {
	s := openT(t, Options{Servers: 1})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	caller := unix.Gettid()
	var in int
	if err := s.commit.update(context.Background(), func(*bbolt.Tx) error {
		in = unix.Gettid()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if in != caller {
		t.Errorf("a lone mutation ran on thread %d, its caller is locked to %d: handed to another goroutine", in, caller)
	}
}

// While a leader commits, mutations that queue are committed after it by
// a goroutine of the committer, each answered once; none is left waiting.
func TestLeaderHandsTheQueueOn(t *testing.T) {
	s := openT(t, Options{Servers: 1})
	ctx := context.Background()
	inLead, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		first := true
		err := s.commit.update(ctx, func(tx *bbolt.Tx) error {
			if first {
				first = false
				close(inLead)
				<-release
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-inLead
	const n = 20
	var done sync.WaitGroup
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			err := s.commit.update(ctx, func(tx *bbolt.Tx) error {
				return tx.Bucket(bucketMeta).Put([]byte{'q', byte(i)}, []byte{1})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	// Let them queue behind the leader's commit, then let it finish.
	for {
		s.commit.mu.Lock()
		q := len(s.commit.queue)
		s.commit.mu.Unlock()
		if q == n {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	done.Wait()
	s.db.View(func(tx *bbolt.Tx) error {
		for i := range n {
			if tx.Bucket(bucketMeta).Get([]byte{'q', byte(i)}) == nil {
				t.Errorf("queued mutation %d was answered but is not in the database", i)
			}
		}
		return nil
	})
	// The committer's goroutine goes idle right after its last answer.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.commit.mu.Lock()
		running, q := s.commit.running, len(s.commit.queue)
		s.commit.mu.Unlock()
		if !running && q == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after every caller was answered: running %v, %d queued; want idle", running, q)
		}
		time.Sleep(time.Millisecond)
	}
}

// A panic of the transaction itself (bbolt's, or a commit handler's: not
// a mutation's fn, which call catches) in the leader's goroutine reaches
// every mutation of the group, not only the leader's caller: the others
// must not wait for an answer forever. The queue is set up as update
// leaves it when a second mutation queued before the leader took its
// group.
func TestLeaderPanicReachesItsGroup(t *testing.T) {
	s := openT(t, Options{Servers: 1})
	c := &s.commit
	leader := &mutation{ctx: context.Background(), done: make(chan struct{}), fn: func(tx *bbolt.Tx) error {
		tx.OnCommit(func() { panic("commit handler") })
		return nil
	}}
	other := &mutation{ctx: context.Background(), done: make(chan struct{}), fn: func(*bbolt.Tx) error { return nil }}
	c.mu.Lock()
	c.queue, c.running = []*mutation{leader, other}, true
	c.mu.Unlock()
	func() {
		defer func() { _ = recover() }() // the leader's caller may panic
		c.lead()
	}()
	select {
	case <-other.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the leader's transaction panicked: the other mutation of its group is never answered")
	}
	if other.panic == nil {
		t.Errorf("the other mutation of the group was answered %v, want the transaction's panic", other.err)
	}
	// The committer is free for the next mutation.
	if err := c.update(context.Background(), func(*bbolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
}
