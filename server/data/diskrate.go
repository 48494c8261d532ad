package data

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pario/pario/wire/throttle"
)

// diskLimit is the emulated disk of an I/O server (StoreOptions.DiskRate
// and DiskSeek): every datafile write and read waits on one token bucket,
// so servers that share one real disk on one machine each behave like a
// node with a disk of its own (`pario up --disk-rate 4MB/s --disk-seek
// 8ms`). It counts the bytes asked for, not the bytes the page cache or
// the disk then move, and nothing of metadata, fsync or directory
// operations.
//
// A request that does not start where the previous one on its datafile
// ended also pays a seek, as a disk's head would: that is what makes two
// ranks interleaving on one server, or requests split across strips,
// slower than one stream, which a bytes-only limit cannot show.
//
// With lock emulation (StoreOptions.LockRevoke), a write that takes
// another writer's extent lock also pays for each revocation
// (extentlock.go), as a Lustre client waits for the holder's callback and
// flush: what makes two ranks alternating strips of one datafile far
// slower than two ranks in regions of their own.
type diskLimit struct {
	b         *throttle.Bucket // nil: unlimited
	seek      *seeks           // nil: requests cost their bytes only
	locks     *extentLocks     // nil: writes take no locks
	perRevoke int64            // tokens a revocation costs
	// timesOnly: no rate, only seeks and revocations are limited, and a
	// token is a nanosecond of the disk; bytes cost none.
	timesOnly bool
	stats     *diskCounts // nil on a disk that is not emulated
}

// DiskStats counts what an I/O server's emulated disk charged for besides
// bytes (Store.DiskStats).
type DiskStats struct {
	Seeks       uint64 // requests that did not continue the last one on their datafile
	Revocations uint64 // extent locks writes took from other writers
}

type diskCounts struct{ seeks, revocations atomic.Uint64 }

// seeks remembers where the last request on each datafile ended, and
// what a seek costs in the bucket's tokens.
type seeks struct {
	perByte int64 // tokens a byte costs: 1, or 0 when only seeks are limited
	perSeek int64 // tokens a seek costs

	mu   sync.Mutex
	ends map[uint64]int64 // datafile id -> offset its last request ended at
}

// maxSeekEnds bounds the positions kept: forgetting them all only costs
// each datafile one more seek, as a disk that served other files would.
const maxSeekEnds = 4096

// diskModel is what the emulated disk charges (StoreOptions): bytes per
// second, and the times of a seek and of a lock revocation (<= 0: none).
type diskModel struct {
	rate         float64
	seek, revoke time.Duration
}

// newDiskLimit limits to m.rate bytes per second (<= 0: unlimited), with a
// tenth of a second's worth of burst, charges m.seek for every
// non-contiguous request and m.revoke for every lock a write revokes.
func newDiskLimit(m diskModel) diskLimit {
	return newDiskLimitClock(m, nil, nil)
}

// newDiskLimitClock is newDiskLimit on the given clock (nil: the wall
// clock), for tests that check the accounting without waiting.
func newDiskLimitClock(m diskModel, now func() time.Time, sleep func(context.Context, time.Duration) error) diskLimit {
	bucket := func(r float64) *throttle.Bucket {
		if now == nil {
			return throttle.New(r, 0)
		}
		return throttle.NewClock(r, 0, now, sleep)
	}
	if m.seek <= 0 && m.revoke <= 0 {
		return diskLimit{b: bucket(m.rate)}
	}
	// A seek or a revocation takes the disk for its time: as many tokens
	// as the bytes it could have moved meanwhile. With no rate, only those
	// times are limited, and a token is a nanosecond of the disk.
	rate, perByte := m.rate, int64(1)
	tokens := func(d time.Duration) int64 { return max(1, int64(d.Seconds()*rate)) }
	if rate <= 0 {
		rate, perByte = 1e9, 0
		tokens = func(d time.Duration) int64 { return d.Nanoseconds() }
	}
	d := diskLimit{b: bucket(rate), timesOnly: perByte == 0, stats: &diskCounts{}}
	if m.seek > 0 {
		d.seek = &seeks{perByte: perByte, perSeek: tokens(m.seek), ends: make(map[uint64]int64)}
	}
	if m.revoke > 0 {
		d.locks, d.perRevoke = &extentLocks{}, tokens(m.revoke)
	}
	return d
}

// wait takes the cost of n bytes at off of datafile id from the disk's
// bucket, waiting until it has earned them or ctx ends. Origin is the
// writer of a write (WriteRequest.Origin), 0 for a read.
func (d diskLimit) wait(ctx context.Context, id, origin uint64, off, n int64) error {
	c := n
	switch {
	case d.seek != nil:
		var sought bool
		c, sought = d.seek.cost(id, off, n)
		if sought {
			d.stats.seeks.Add(1)
		}
	case d.timesOnly:
		c = 0
	}
	if d.locks != nil {
		r := d.locks.write(id, origin, off, n)
		d.stats.revocations.Add(uint64(r))
		c += int64(r) * d.perRevoke
	}
	return d.b.Wait(ctx, c)
}

// DiskStats reports what the emulated disk charged for besides bytes
// since the store opened (zero when it emulates no seeks nor locks).
func (s *Store) DiskStats() DiskStats {
	if s.disk.stats == nil {
		return DiskStats{}
	}
	return DiskStats{Seeks: s.disk.stats.seeks.Load(), Revocations: s.disk.stats.revocations.Load()}
}

// cost is the tokens a request of n bytes at off of datafile id takes,
// and whether that includes a seek; it moves the datafile's head to the
// request's end.
func (s *seeks) cost(id uint64, off, n int64) (tokens int64, sought bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tokens = n * s.perByte
	if end, ok := s.ends[id]; !ok || end != off {
		tokens += s.perSeek
		sought = true
	}
	if len(s.ends) >= maxSeekEnds {
		clear(s.ends)
	}
	s.ends[id] = off + n
	return tokens, sought
}
