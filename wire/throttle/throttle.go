// Package throttle emulates slower hardware on one machine: a token bucket
// of bytes per second that an I/O server's disk (server/data) or a client's
// link to a server (wire.EndpointOptions.Throttle) waits on, so that an
// "all in one" cluster of loopback servers on one disk behaves like nodes
// with their own disks and network (the thesis' emulated cluster, issue 13).
//
// The bucket lends: a caller takes its bytes at once and waits until the
// bucket has earned them back, so concurrent callers queue in the order
// they asked and the rate holds over any interval longer than the burst.
package throttle

import (
	"context"
	"math"
	"sync"
	"time"
)

// Bucket is a token bucket of bytes. The zero value is not usable; a nil
// *Bucket is unlimited. Safe for concurrent use.
type Bucket struct {
	rate  float64 // bytes per second
	burst float64 // most bytes saved up while idle

	mu     sync.Mutex
	tokens float64 // may be negative: bytes lent to waiting callers
	last   time.Time
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
}

// New returns a bucket that lets rate bytes per second through, with up to
// burst bytes at once after an idle spell (burst < 1 means rate/10: a tenth
// of a second's worth). rate <= 0 or not finite gives nil, no limit.
func New(rate float64, burst int64) *Bucket {
	return NewClock(rate, burst, time.Now, sleepCtx)
}

// NewClock is New with the clock and the sleep the bucket uses, for tests
// that check its accounting without waiting.
func NewClock(rate float64, burst int64, now func() time.Time, sleep func(context.Context, time.Duration) error) *Bucket {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil
	}
	b := float64(burst)
	if burst < 1 {
		b = math.Max(1, rate/10)
	}
	return &Bucket{rate: rate, burst: b, tokens: b, last: now(), now: now, sleep: sleep}
}

// Rate is the bucket's rate in bytes per second (0 for nil: unlimited).
func (b *Bucket) Rate() float64 {
	if b == nil {
		return 0
	}
	return b.rate
}

// Reserve takes n bytes from the bucket and returns how long the caller
// must wait before using them (0 if the bucket had them).
func (b *Bucket) Reserve(n int64) time.Duration {
	if b == nil || n <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.now()
	if dt := t.Sub(b.last); dt > 0 {
		b.tokens = math.Min(b.burst, b.tokens+dt.Seconds()*b.rate)
		b.last = t
	}
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// Wait takes n bytes and sleeps until the bucket has earned them. If ctx
// ends first the bytes go back (others queued behind are not held up for
// bytes that will not move) and its error is returned.
func (b *Bucket) Wait(ctx context.Context, n int64) error {
	d := b.Reserve(n)
	if d <= 0 {
		return nil
	}
	if err := b.sleep(ctx, d); err != nil {
		b.mu.Lock()
		b.tokens += float64(n)
		b.mu.Unlock()
		return err
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Links is the emulated network between a rank and the I/O servers: every
// server is on its own node (server i on node i, as the thesis' "all in
// one" cluster), a rank on node Node. Its link to the server of its own
// node moves Local bytes per second, to any other Remote (0: unlimited).
type Links struct {
	Node          int
	Local, Remote float64
}

// Bucket is a fresh bucket for the link to server (each server connection
// gets its own, so links do not share a rate), nil if that link is
// unlimited.
func (l Links) Bucket(server int) *Bucket {
	if server == l.Node {
		return New(l.Local, 0)
	}
	return New(l.Remote, 0)
}
