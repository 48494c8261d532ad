package data

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/wire"
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
	if err := s.disk.wait(ctx, 1, 0, 0, 1<<40); err != nil {
		t.Fatal(err)
	}
}

// TestDiskSeekCost: a request that does not start where the previous one
// on its datafile ended pays a seek; a contiguous one does not; datafiles
// keep their own positions.
func TestDiskSeekCost(t *testing.T) {
	type req struct{ id, off, n int64 }
	tests := []struct {
		name string
		rate float64
		seek time.Duration
		reqs []req
		want []int64 // tokens of each request
	}{
		{"sequential: one seek", 4e6, 10 * time.Millisecond,
			[]req{{1, 0, 100}, {1, 100, 100}, {1, 200, 50}}, []int64{40_100, 100, 50}},
		{"interleaved writers on one datafile", 4e6, 10 * time.Millisecond,
			[]req{{1, 0, 100}, {1, 200, 100}, {1, 100, 100}, {1, 300, 100}}, []int64{40_100, 40_100, 40_100, 40_100}},
		{"two datafiles keep their heads", 4e6, 10 * time.Millisecond,
			[]req{{1, 0, 100}, {2, 0, 100}, {1, 100, 100}, {2, 100, 100}}, []int64{40_100, 40_100, 100, 100}},
		{"backwards is a seek", 4e6, 5 * time.Millisecond,
			[]req{{1, 100, 100}, {1, 0, 100}}, []int64{20_100, 20_100}},
		{"seek only: tokens are nanoseconds", 0, 5 * time.Millisecond,
			[]req{{1, 0, 1 << 20}, {1, 1 << 20, 1}, {1, 0, 1}}, []int64{5e6, 0, 5e6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDiskLimit(diskModel{rate: tt.rate, seek: tt.seek})
			for i, r := range tt.reqs {
				if got, _ := d.seek.cost(uint64(r.id), r.off, r.n); got != tt.want[i] {
					t.Errorf("request %d %+v costs %d tokens, want %d", i, r, got, tt.want[i])
				}
			}
		})
	}
	if d := newDiskLimit(diskModel{rate: 4e6}); d.seek != nil {
		t.Error("no seek time still charges seeks")
	}
}

// TestDiskSeekStore: through the store, at 4 MB/s and 10 ms a seek, two
// writers interleaving 256 KiB strips on one datafile pay a seek per
// request, one writing the same bytes in order pays one; the clock says so.
func TestDiskSeekStore(t *testing.T) {
	const rate, seek, strip, n = 4e6, 10 * time.Millisecond, 256 << 10, 16
	buf := make([]byte, strip)
	run := func(order func(i int) int64) time.Duration {
		s, _, _ := memStore(t, StoreOptions{DiskRate: rate, DiskSeek: seek})
		c := &diskClock{t: time.Unix(0, 0)}
		s.disk = newDiskLimitClock(diskModel{rate: rate, seek: seek}, c.now, c.sleep)
		if err := s.Create(ctx, 7); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := s.WriteAt(ctx, 7, buf, order(i)*strip); err != nil {
				t.Fatal(err)
			}
		}
		return c.slept
	}
	seq := run(func(i int) int64 { return int64(i) })
	// Rank 0 writes the first half, rank 1 the second, alternating.
	inter := run(func(i int) int64 {
		if i%2 == 0 {
			return int64(i / 2)
		}
		return int64(n/2 + i/2)
	})
	if got, want := inter-seq, (n-1)*seek; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("interleaved took %v more than sequential (%v), want %v more (15 seeks)", got, seq, want)
	}
}

// TestLockRevokeThroughTheHandler: with lock emulation, two writers
// alternating 256 KiB strips of one datafile (the thesis' 2-OST pattern)
// pay a revocation on every write after the first, through write and list
// write requests alike; the same writes from one writer, or from two in
// halves of their own, pay at most one; and the disk's clock and
// DiskStats say so.
func TestLockRevokeThroughTheHandler(t *testing.T) {
	const rate, revoke, strip, n = 4e6, 10 * time.Millisecond, 256 << 10, 16
	buf := make([]byte, strip)
	run := func(origin func(i int) uint64, order func(i int) int64) (time.Duration, DiskStats) {
		s, _, _ := memStore(t, StoreOptions{DiskRate: rate, LockRevoke: revoke})
		c := &diskClock{t: time.Unix(0, 0)}
		s.disk = newDiskLimitClock(diskModel{rate: rate, revoke: revoke}, c.now, c.sleep)
		h := &Handler{Store: s}
		if err := s.Create(ctx, 7); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			var e wire.Enc
			op := OpWrite.Code
			if i%4 == 3 {
				// A list write of one range carries its origin too.
				op = OpWriteList.Code
				WriteListRequest{ID: 7, Origin: origin(i), Ranges: []Range{{order(i) * strip, strip}}}.Encode(&e)
			} else {
				WriteRequest{ID: 7, Offset: order(i) * strip, Origin: origin(i)}.Encode(&e)
			}
			if _, err := h.ServeWire(ctx, &wire.Request{Op: op, Args: e.Bytes(), Data: buf}); err != nil {
				t.Fatal(err)
			}
		}
		return c.slept, s.DiskStats()
	}
	inOrder := func(i int) int64 { return int64(i) }
	alternate := func(i int) uint64 { return uint64(1 + i%2) }
	one, oneStats := run(func(int) uint64 { return 9 }, inOrder)
	lockstep, lockstepStats := run(alternate, inOrder)
	_, halvesStats := run(alternate, func(i int) int64 {
		if i%2 == 0 {
			return int64(i / 2)
		}
		return int64(n/2 + i/2)
	})
	if oneStats.Revocations != 0 || lockstepStats.Revocations != n-1 || halvesStats.Revocations > 2 {
		t.Errorf("revocations: one writer %d (want 0), alternating strips %d (want %d), halves %d (want at most 2)",
			oneStats.Revocations, lockstepStats.Revocations, n-1, halvesStats.Revocations)
	}
	if got, want := lockstep-one, (n-1)*revoke; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("alternating strips took %v more than one writer (%v), want %v more", got, one, want)
	}
	if oneStats.Seeks != 0 || lockstepStats.Seeks != 0 {
		t.Errorf("seeks counted without a seek time: %d, %d", oneStats.Seeks, lockstepStats.Seeks)
	}
	// Anonymous writes (origin 0) and reads take no locks.
	s, _, _ := memStore(t, StoreOptions{LockRevoke: revoke})
	if err := s.Create(ctx, 7); err != nil {
		t.Fatal(err)
	}
	for i := range int64(4) {
		if err := s.WriteAt(ctx, 7, buf[:10], i*10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadAt(ctx, 7, buf[:10], i*10); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.DiskStats(); st.Revocations != 0 {
		t.Errorf("writes and reads that name no origin revoked %d locks", st.Revocations)
	}
}
