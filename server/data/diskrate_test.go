package data

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/wire/throttle"
)

// diskClock is a clock that moves only when the disk bucket sleeps.
type diskClock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *diskClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *diskClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
	return nil
}

// TestDiskRate: at 10 MB/s, writing 20 MB (WriteAt and WriteAtv) and
// reading it back each take about 2 s of the disk's clock; without a
// rate nothing waits.
func TestDiskRate(t *testing.T) {
	const rate, total, piece = 10e6, 20_000_000, 1_000_000
	s, _, _ := memStore(t, StoreOptions{DiskRate: rate})
	if s.disk.b.Rate() != rate {
		t.Fatalf("store's disk rate %v, want %v", s.disk.b.Rate(), rate)
	}
	c := &diskClock{t: time.Unix(0, 0)}
	s.disk = diskLimit{b: throttle.NewClock(rate, 0, c.now, c.sleep)}
	if err := s.Create(ctx, 7); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, piece)
	for off := int64(0); off < total; off += 2 * piece {
		if err := s.WriteAt(ctx, 7, buf, off); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteAtv(ctx, 7, [][]byte{buf[:piece/2], buf[piece/2:]}, off+piece); err != nil {
			t.Fatal(err)
		}
	}
	// The bucket starts with a tenth of a second's worth (1 MB).
	want := time.Duration(float64(total)/rate*float64(time.Second)) - 100*time.Millisecond
	if c.slept < want-time.Millisecond || c.slept > want+time.Millisecond {
		t.Errorf("writing 20 MB at 10 MB/s slept %v, want %v", c.slept, want)
	}
	c.slept = 0
	for off := int64(0); off < total; off += piece {
		if _, err := s.ReadAt(ctx, 7, buf, off); err != nil {
			t.Fatal(err)
		}
	}
	if d := 2 * time.Second; c.slept < d-time.Millisecond || c.slept > d+time.Millisecond {
		t.Errorf("reading 20 MB at 10 MB/s slept %v, want %v", c.slept, d)
	}

	// A write on an ended context fails and writes nothing (the bucket
	// gives back the bytes of a wait cut short: wire/throttle TestCancelReturns).
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.WriteAt(cctx, 7, []byte("x"), total); !errors.Is(err, context.Canceled) {
		t.Errorf("write on a cancelled context: %v", err)
	}
	if n, _ := s.Size(ctx, 7); n != total {
		t.Errorf("size after the cancelled write %d, want %d", n, total)
	}
}

func TestDiskUnlimited(t *testing.T) {
	s, _, _ := memStore(t, StoreOptions{})
	if s.disk.b != nil {
		t.Fatalf("no DiskRate gives a limit of %v B/s", s.disk.b.Rate())
	}
	if err := s.disk.wait(ctx, 1<<40); err != nil {
		t.Fatal(err)
	}
}
