package wire

import (
	"context"
	"math/bits"
	"sync"
)

// Buffers for bulk data come from size-classed pools (powers of two from
// 4 KiB to MaxDataLen) so that a server moving 1 MiB requests all day does
// not churn the garbage collector.
const (
	minBufShift = 12
	maxBufShift = 26 // 1<<26 == MaxDataLen
)

var bufPools [maxBufShift + 1]sync.Pool

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
	b = b[:cap(b)]
	bufPools[c].Put(&b)
}

// Budget is a counting semaphore over bytes. A server takes from it before
// reading a request's data and gives back after answering, so the memory
// held by requests in flight stays bounded whatever the clients send;
// a reader that must wait simply stops reading, and TCP pushes back.
type Budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	avail int64
	total int64
}

// NewBudget returns a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{avail: n, total: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Acquire takes n bytes, waiting while they are not available. A request
// larger than the whole budget waits for the budget to be entirely free, so
// it still runs, alone.
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
	for b.avail < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	b.avail -= n
	return nil
}

// Release gives back n bytes taken with Acquire.
func (b *Budget) Release(n int64) {
	if n > b.total {
		n = b.total
	}
	b.mu.Lock()
	b.avail += n
	b.mu.Unlock()
	b.cond.Broadcast()
}
