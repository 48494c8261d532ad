package wire

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Buffers for bulk data come from size-classed pools (powers of two from
// 4 KiB to MaxDataLen) so that a server moving 1 MiB requests all day does
// not churn the garbage collector.
const (
	minBufShift = 12
	maxBufShift = 26 // 1<<26 == MaxDataLen
)

var bufPools [maxBufShift + 1]sync.Pool

// pooledOut counts the bytes of pooled buffers handed out and not given
// back: tests hold it against what a server's memory budget counts.
var pooledOut atomic.Int64

func bufClass(n int) int {
	if n <= 1<<minBufShift {
		return minBufShift
	}
	return bits.Len(uint(n - 1))
}

// GetBuffer returns a buffer of length n from the pool. Return it with
// PutBuffer when done; it may hold stale bytes.
func GetBuffer(n int) []byte {
	c := bufClass(n)
	if c >= len(bufPools) {
		return make([]byte, n)
	}
	pooledOut.Add(1 << c)
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<c)
}

// PutBuffer returns a buffer obtained from GetBuffer to the pool.
func PutBuffer(b []byte) {
	c := bufClass(cap(b))
	if c >= len(bufPools) || cap(b) != 1<<c {
		return
	}
	pooledOut.Add(-int64(cap(b)))
	b = b[:cap(b)]
	bufPools[c].Put(&b)
}

// Budget is a counting semaphore over bytes. A server takes from it before
// reading a request's data and gives back after answering, so the memory
// held by requests in flight stays bounded whatever the clients send;
// a reader that must wait simply stops reading, and TCP pushes back.
//
// Memory that must be had without waiting (what each connection holds
// while it lives) is charged to it too: it makes requests wait, but never
// waits itself.
type Budget struct {
	mu      sync.Mutex
	cond    *sync.Cond
	used    int64 // taken with Acquire
	charged int64 // taken with Charge
	total   int64
}

// NewBudget returns a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{total: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Acquire takes n bytes, waiting while they are not available. A request
// larger than what is left when no other request holds any (the whole
// budget, less what is charged) waits until none does, so it still runs,
// alone.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	if n > b.total {
		n = b.total
	}
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+b.charged+n > b.total {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	b.used += n
	return nil
}

// Release gives back n bytes taken with Acquire.
func (b *Budget) Release(n int64) {
	if n > b.total {
		n = b.total
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Charge takes n bytes at once, even beyond the budget: later requests
// wait until there is room again.
func (b *Budget) Charge(n int64) {
	b.mu.Lock()
	b.charged += n
	b.mu.Unlock()
}

// Refund gives back n bytes taken with Charge.
func (b *Budget) Refund(n int64) {
	b.mu.Lock()
	b.charged -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}
