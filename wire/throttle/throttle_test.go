package throttle

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when the bucket sleeps on it.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.slept += d
	c.mu.Unlock()
	return nil
}

func TestNewUnlimited(t *testing.T) {
	for _, rate := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if b := New(rate, 0); b != nil {
			t.Errorf("New(%v) = %v, want nil (unlimited)", rate, b)
		}
	}
	var b *Bucket
	if d := b.Reserve(1 << 30); d != 0 {
		t.Errorf("nil bucket Reserve = %v, want 0", d)
	}
	if err := b.Wait(context.Background(), 1<<30); err != nil {
		t.Errorf("nil bucket Wait: %v", err)
	}
}

// TestRate writes 20 MB in 1 MB pieces through a 10 MB/s bucket with a
// 1 MB burst: the clock must have moved 1.9 s (the first MB is the burst).
func TestRate(t *testing.T) {
	tests := []struct {
		rate      float64
		burst, n  int64
		pieces    int
		wantSlept time.Duration
	}{
		{rate: 10e6, burst: 1e6, n: 1e6, pieces: 20, wantSlept: 1900 * time.Millisecond},
		{rate: 10e6, burst: 1e6, n: 1e5, pieces: 200, wantSlept: 1900 * time.Millisecond},
		{rate: 40e6, burst: 0, n: 4e6, pieces: 10, wantSlept: 1000*time.Millisecond - 100*time.Millisecond},
		{rate: 1e6, burst: 2e6, n: 1e6, pieces: 2, wantSlept: 0},
	}
	for _, tt := range tests {
		c := &fakeClock{t: time.Unix(0, 0)}
		b := NewClock(tt.rate, tt.burst, c.now, c.sleep)
		for range tt.pieces {
			if err := b.Wait(context.Background(), tt.n); err != nil {
				t.Fatal(err)
			}
		}
		if diff := c.slept - tt.wantSlept; diff < -time.Millisecond || diff > time.Millisecond {
			t.Errorf("rate %v burst %d: %d x %d B slept %v, want %v", tt.rate, tt.burst, tt.pieces, tt.n, c.slept, tt.wantSlept)
		}
	}
}

// TestIdleRefill: an idle bucket saves up to its burst, no more.
func TestIdleRefill(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	b := NewClock(1e6, 1e6, c.now, c.sleep)
	if d := b.Reserve(1e6); d != 0 {
		t.Fatalf("first MB waited %v", d)
	}
	c.t = c.t.Add(10 * time.Second) // idle: refills to the burst only
	if d := b.Reserve(1e6); d != 0 {
		t.Fatalf("MB after idle waited %v", d)
	}
	if d := b.Reserve(1e6); d != time.Second {
		t.Fatalf("second MB after idle waited %v, want 1s", d)
	}
}

// TestQueue: concurrent callers are each lent bytes in turn, so the
// n-th waits n times as long.
func TestQueue(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	b := NewClock(1e6, 1, c.now, c.sleep)
	b.Reserve(1)
	for i := 1; i <= 3; i++ {
		if d := b.Reserve(1e6); d != time.Duration(i)*time.Second {
			t.Errorf("caller %d waits %v, want %ds", i, d, i)
		}
	}
}

// TestCancelReturns: a cancelled wait gives its bytes back.
func TestCancelReturns(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	b := NewClock(1e6, 1, c.now, c.sleep)
	b.Reserve(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx, 5e6); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context = %v", err)
	}
	if d := b.Reserve(1e6); d != time.Second {
		t.Errorf("after a cancelled 5 MB, 1 MB waits %v, want 1s", d)
	}
}

func TestLinks(t *testing.T) {
	l := Links{Node: 2, Local: 100e6, Remote: 10e6}
	if got := l.Bucket(2).Rate(); got != 100e6 {
		t.Errorf("own node's link: %v B/s, want 100e6", got)
	}
	if got := l.Bucket(3).Rate(); got != 10e6 {
		t.Errorf("other node's link: %v B/s, want 10e6", got)
	}
	if b := (Links{}).Bucket(0); b != nil {
		t.Errorf("zero Links gives a limit: %v", b.Rate())
	}
	// Each link its own bucket: draining one leaves the other full.
	a, b := l.Bucket(3), l.Bucket(4)
	a.Reserve(1e9)
	if d := b.Reserve(1); d != 0 {
		t.Errorf("a drained link slows another by %v", d)
	}
}

// TestRealClock checks the wall clock path once, briefly.
func TestRealClock(t *testing.T) {
	b := New(1e6, 1)
	b.Reserve(1)
	start := time.Now()
	if err := b.Wait(context.Background(), 50e3); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 45*time.Millisecond {
		t.Errorf("50 kB at 1 MB/s took %v, want >= 50ms", el)
	}
}
