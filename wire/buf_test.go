package wire

import (
	"context"
	"errors"
	"testing"
	"time"
)

func (b *Budget) available() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total - b.used - b.charged
}

// acquireAsync starts an Acquire and returns a channel with its result.
func acquireAsync(ctx context.Context, b *Budget, n int64) chan error {
	c := make(chan error, 1)
	go func() { c <- b.Acquire(ctx, n) }()
	return c
}

func blocked(t *testing.T, c chan error, what string) {
	t.Helper()
	select {
	case err := <-c:
		t.Fatalf("%s did not block (err %v)", what, err)
	case <-time.After(50 * time.Millisecond):
	}
}

func done(t *testing.T, c chan error, what string) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked", what)
		return nil
	}
}

func TestBudgetAccounting(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(100)
	for _, n := range []int64{30, 30, 40, 0} {
		if err := b.Acquire(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if a := b.available(); a != 0 {
		t.Fatalf("available %d", a)
	}
	c := acquireAsync(ctx, b, 1)
	blocked(t, c, "Acquire on an empty budget")
	b.Release(30)
	if err := done(t, c, "Acquire after Release"); err != nil {
		t.Fatal(err)
	}
	if a := b.available(); a != 29 {
		t.Fatalf("available %d, want 29", a)
	}
	// A waiter needing more than what comes back keeps waiting.
	c = acquireAsync(ctx, b, 50)
	blocked(t, c, "Acquire(50) with 29 free")
	b.Release(1)
	blocked(t, c, "Acquire(50) with 30 free")
	b.Release(30)
	if err := done(t, c, "Acquire(50) with 60 free"); err != nil {
		t.Fatal(err)
	}
	b.Release(40)
	b.Release(50)
	if a := b.available(); a != 100 {
		t.Fatalf("available %d after releasing everything", a)
	}
}

func TestBudgetCancel(t *testing.T) {
	b := NewBudget(10)
	if err := b.Acquire(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := acquireAsync(ctx, b, 5)
	blocked(t, c, "Acquire on an empty budget")
	cancel()
	if err := done(t, c, "cancelled Acquire"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v", err)
	}
	tctx, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	if err := b.Acquire(tctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed out Acquire: %v", err)
	}
	// Failed Acquires took nothing.
	b.Release(10)
	if a := b.available(); a != 10 {
		t.Fatalf("available %d", a)
	}
	// An already cancelled context still gets what is free.
	if err := b.Acquire(ctx, 10); err != nil {
		t.Fatalf("Acquire of free bytes with a done context: %v", err)
	}
}

func TestBudgetOversized(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(10)
	if err := b.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// More than the whole budget waits for all of it, then runs alone.
	big := acquireAsync(ctx, b, 1000)
	blocked(t, big, "oversized Acquire while 3 bytes are held")
	b.Release(3)
	if err := done(t, big, "oversized Acquire on a free budget"); err != nil {
		t.Fatal(err)
	}
	small := acquireAsync(ctx, b, 1)
	blocked(t, small, "Acquire while an oversized request runs")
	b.Release(1000)
	if err := done(t, small, "Acquire after the oversized request"); err != nil {
		t.Fatal(err)
	}
	b.Release(1)
	if a := b.available(); a != 10 {
		t.Fatalf("available %d", a)
	}
}

func TestGetBufferClasses(t *testing.T) {
	for _, tc := range []struct{ n, cap int }{
		{0, 4096}, {1, 4096}, {4095, 4096}, {4096, 4096}, {4097, 8192},
		{1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {3 << 20, 4 << 20},
	} {
		for range 2 { // fresh, then from the pool
			b := GetBuffer(tc.n)
			if len(b) != tc.n || cap(b) != tc.cap {
				t.Fatalf("GetBuffer(%d): len %d cap %d, want cap %d", tc.n, len(b), cap(b), tc.cap)
			}
			PutBuffer(b)
		}
	}
	for _, tc := range []struct{ n, class int }{
		{MaxDataLen, maxBufShift}, {MaxDataLen + 1, maxBufShift + 1}, {1 << 40, 40},
	} {
		if c := bufClass(tc.n); c != tc.class {
			t.Fatalf("bufClass(%d) = %d, want %d", tc.n, c, tc.class)
		}
	}
	if 1<<maxBufShift != MaxDataLen {
		t.Fatal("the largest buffer class is not MaxDataLen")
	}
}

func TestPutBufferForeign(t *testing.T) {
	// None of these may enter a pool: a later GetBuffer would hand out a
	// buffer of the wrong capacity (or panic slicing it).
	pooled := GetBuffer(8192)
	for _, b := range [][]byte{
		nil,
		{},
		make([]byte, 100),
		make([]byte, 10, 5000),
		make([]byte, 4095),
		pooled[:10:10],
		pooled[1:],
	} {
		PutBuffer(b)
	}
	PutBuffer(make([]byte, 1, 4096)) // the right capacity is fine, whatever the length
	for _, n := range []int{0, 100, 4096, 5000, 8192} {
		for range 4 {
			b := GetBuffer(n)
			if len(b) != n || cap(b) != bufClassSize(n) {
				t.Fatalf("GetBuffer(%d) after foreign puts: len %d cap %d", n, len(b), cap(b))
			}
		}
	}
}

func bufClassSize(n int) int { return 1 << bufClass(n) }
