package meta

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"go.etcd.io/bbolt"
)

// maxGroup bounds how many mutations share one transaction. A mutation
// that fails makes the others of its group run again (see committer.run),
// so a bound keeps the worst case, a whole group of failures, at
// maxGroup²/2 short function calls rather than growing with the load.
const maxGroup = 128

// committer is group commit: mutations that arrive while a transaction is
// being committed (most of that time is its fsync) wait, and then all
// share the next transaction and its fsync. A mutation alone commits at
// once, without waiting for company, which is why this is not bbolt's
// DB.Batch: Batch holds every call for MaxBatchDelay (10 ms by default)
// to gather a batch, and with a short delay it gathers nothing, since it
// detaches a batch before taking the writer lock. Each caller returns only
// once the transaction holding its change has committed, so an
// acknowledged change is as durable as with one transaction per change.
type committer struct {
	db      *bbolt.DB
	dur     *durability   // deferred durability (durable.go); nil: bbolt fsyncs each commit
	commits atomic.Uint64 // write transactions committed or tried

	mu      sync.Mutex
	queue   []*mutation
	running bool // a goroutine is committing the queue
}

type mutation struct {
	ctx   context.Context
	ran   bool // fn has run (in a transaction that may have been rolled back)
	fn    func(*bbolt.Tx) error
	err   error
	panic any // what fn panicked with, raised again in its caller
	done  chan struct{}
}

// errFailedInGroup aborts a group's transaction when one of its mutations
// fails; run then takes that mutation out and commits the rest.
var errFailedInGroup = errors.New("a mutation of the group failed")

// update runs fn in a write transaction, probably shared with other
// mutations, and returns fn's error, or the commit's. As with DB.Batch, fn
// may run more than once (when another mutation of its transaction fails,
// the transaction is rolled back and run again without it), so fn must
// set its results afresh on every run and have no effect outside tx.
//
// ctx is checked when fn is about to run for the first time, since waiting
// for the commit before is where a mutation blocks: one whose caller has
// gone is not executed. Once it has run it is not dropped for a
// cancellation, since later mutations of its group may have seen its
// change.
//
// A mutation that finds no commit under way commits its group (itself)
// in its own goroutine, and hands what queued meanwhile to a goroutine
// only then: a lone mutation (creates in one directory, which the kernel
// serialises) costs no goroutine hand-off, while every later group still
// goes as soon as the commit before it ends.
func (c *committer) update(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if c.dur != nil {
		if err := c.dur.failure(); err != nil {
			return err
		}
	}
	m := &mutation{ctx: ctx, fn: fn, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, m)
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		c.lead()
	}
	<-m.done
	if m.panic != nil {
		panic(m.panic)
	}
	return m.err
}

// call runs m.fn, catching a panic: it fails m alone (its caller panics,
// as it would have without group commit), not the committer.
func (m *mutation) call(tx *bbolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			m.panic, err = r, errFailedInGroup
		}
	}()
	if !m.ran {
		if err := m.ctx.Err(); err != nil {
			return err
		}
		m.ran = true
	}
	return m.fn(tx)
}

// lead commits the first group of the queue, which holds the caller's
// mutation (the queue was empty when it took the lead), then leaves the
// rest of the queue to loop.
func (c *committer) lead() {
	defer func() {
		c.mu.Lock()
		if len(c.queue) > 0 {
			go c.loop()
		} else {
			c.running = false
		}
		c.mu.Unlock()
	}()
	c.mu.Lock()
	group := c.take()
	c.mu.Unlock()
	c.run(group)
}

// loop commits the queue a group at a time until it is empty.
func (c *committer) loop() {
	for {
		c.mu.Lock()
		group := c.take()
		if group == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.run(group)
	}
}

// take removes the next group from the queue (nil if it is empty); c.mu
// is held.
func (c *committer) take() []*mutation {
	n := min(len(c.queue), maxGroup)
	if n == 0 {
		return nil
	}
	group := c.queue[:n:n]
	c.queue = c.queue[n:]
	if len(c.queue) == 0 {
		c.queue = nil // let the old array go
	}
	return group
}

// run commits group in one transaction. A mutation that fails is taken
// out and the transaction run again without it; its error stands as if it
// had run alone right after the mutations before it (it saw their
// changes). It is answered only once those changes have committed, so
// that no answer, not even a failure such as EEXIST, reveals a change that
// a crash could still undo; if the commit fails, it gets the commit's error.
//
// A panic of the transaction itself, outside the mutations' fns (call
// catches theirs): bbolt's on a damaged database, or a commit handler's,
// goes to every mutation of the group, each caller raising it (the wire
// server answers each EIO). Raised in the committer instead, it would
// reach the leader's caller alone (lead runs in it) and leave the rest
// of its group waiting for an answer forever.
func (c *committer) run(group []*mutation) {
	all := group // group shrinks below into new arrays; this one stays whole
	defer func() {
		if r := recover(); r != nil {
			// Nothing was answered yet: answers come after the commit.
			for _, m := range all {
				m.panic = r
				close(m.done)
			}
		}
	}()
	var failures []*mutation
	checkpointed := false
	for {
		failed := -1
		var txid uint64
		var size int64
		c.commits.Add(1)
		err := c.db.Update(func(tx *bbolt.Tx) error {
			txid, size = uint64(tx.ID()), tx.Size()
			for i, m := range group {
				if err := m.call(tx); err != nil {
					failed, m.err = i, err
					return errFailedInGroup
				}
			}
			return nil
		})
		if failed >= 0 && errors.Is(err, errFailedInGroup) {
			failures = append(failures, group[failed])
			group = append(group[:failed:failed], group[failed+1:]...)
			if len(group) > 0 {
				continue
			}
			err = nil
		}
		if errors.Is(err, syscall.ENOSPC) && !checkpointed && c.dur != nil {
			// A full disk: the pages the commits since the last
			// checkpoint left are pinned by its anchor (durable.go)
			// and the file grew instead of reusing them; a checkpoint
			// frees them for this commit.
			checkpointed = true
			if c.dur.checkpoint() == nil {
				continue
			}
		}
		if err == nil && len(group) > 0 && c.dur != nil {
			c.dur.afterCommit(txid, size)
		}
		for _, m := range group {
			m.err = err
			close(m.done)
		}
		for _, m := range failures {
			if err != nil && m.panic == nil {
				m.err = err
			}
			close(m.done)
		}
		return
	}
}
