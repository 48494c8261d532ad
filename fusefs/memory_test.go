package fusefs

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMemBudgetWaitsForRoom(t *testing.T) {
	tests := []struct {
		name       string
		limit      int64
		held, want int64 // held first; then want is asked for
		waits      bool
	}{
		{"fits", 10, 4, 6, false},
		{"over", 10, 4, 7, true},
		{"larger than the budget waits for it to empty", 10, 1, 20, true},
		{"larger than the budget, empty: runs alone", 10, 0, 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newMemBudget(tt.limit)
			var first int64
			if tt.held > 0 {
				first, _ = b.acquire(context.Background(), tt.held)
			}
			got := make(chan int64, 1)
			go func() {
				n, err := b.acquire(context.Background(), tt.want)
				if err != nil {
					t.Errorf("acquire: %v", err)
				}
				got <- n
			}()
			var n int64
			select {
			case n = <-got:
				if tt.waits {
					t.Fatalf("acquire(%d) with %d of %d held returned at once", tt.want, tt.held, tt.limit)
				}
			case <-time.After(100 * time.Millisecond):
				if !tt.waits {
					t.Fatalf("acquire(%d) with %d of %d held waits", tt.want, tt.held, tt.limit)
				}
				b.release(first)
				first = 0
				n = <-got
			}
			if n != min(tt.want, tt.limit) {
				t.Errorf("acquire(%d) took %d, want %d", tt.want, n, min(tt.want, tt.limit))
			}
			b.release(n)
			b.release(first)
			if used, peak := b.inUse(); used != 0 || peak > tt.limit {
				t.Errorf("after releasing all: used %d, peak %d (budget %d)", used, peak, tt.limit)
			}
		})
	}
}

func TestMemBudgetCancelledWaitTakesNothing(t *testing.T) {
	b := newMemBudget(10)
	held, _ := b.acquire(context.Background(), 8)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.acquire(ctx, 8); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire past its deadline: %v, want DeadlineExceeded", err)
	}
	b.release(held)
	if used, _ := b.inUse(); used != 0 {
		t.Fatalf("used %d after a cancelled wait and a release, want 0", used)
	}
}

// Many writers over a small budget: every one completes, and the budget
// never holds more than its limit.
func TestMemBudgetManyWriters(t *testing.T) {
	b := newMemBudget(1 << 20)
	done := make(chan struct{})
	for i := range 16 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				n, err := b.acquire(context.Background(), int64(64<<10*(1+i%8)))
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				time.Sleep(time.Microsecond)
				b.release(n)
			}
		}()
	}
	for range 16 {
		<-done
	}
	if used, peak := b.inUse(); used != 0 || peak > 1<<20 {
		t.Fatalf("used %d, peak %d, budget %d", used, peak, 1<<20)
	}
}
