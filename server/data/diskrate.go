package data

import (
	"context"
	"sync"
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
type diskLimit struct {
	b    *throttle.Bucket // nil: unlimited
	seek *seeks           // nil: requests cost their bytes only
}

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

// newDiskLimit limits to rate bytes per second (<= 0: unlimited), with a
// tenth of a second's worth of burst, and charges seek (<= 0: none) for
// every non-contiguous request.
func newDiskLimit(rate float64, seek time.Duration) diskLimit {
	return newDiskLimitClock(rate, seek, nil, nil)
}

// newDiskLimitClock is newDiskLimit on the given clock (nil: the wall
// clock), for tests that check the accounting without waiting.
func newDiskLimitClock(rate float64, seek time.Duration, now func() time.Time, sleep func(context.Context, time.Duration) error) diskLimit {
	bucket := func(r float64) *throttle.Bucket {
		if now == nil {
			return throttle.New(r, 0)
		}
		return throttle.NewClock(r, 0, now, sleep)
	}
	if seek <= 0 {
		return diskLimit{b: bucket(rate)}
	}
	s := &seeks{perByte: 1, ends: make(map[uint64]int64)}
	if rate > 0 {
		// The seek takes the disk for its time: as many tokens as the
		// bytes it could have moved meanwhile.
		s.perSeek = max(1, int64(seek.Seconds()*rate))
	} else {
		// Only seeks are limited: a token is a nanosecond of the disk.
		rate, s.perByte, s.perSeek = 1e9, 0, seek.Nanoseconds()
	}
	return diskLimit{b: bucket(rate), seek: s}
}

// wait takes the cost of n bytes at off of datafile id from the disk's
// bucket, waiting until it has earned them or ctx ends.
func (d diskLimit) wait(ctx context.Context, id uint64, off, n int64) error {
	if d.seek == nil {
		return d.b.Wait(ctx, n)
	}
	return d.b.Wait(ctx, d.seek.cost(id, off, n))
}

// cost is the tokens a request of n bytes at off of datafile id takes,
// and moves the datafile's head to its end.
func (s *seeks) cost(id uint64, off, n int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := n * s.perByte
	if end, ok := s.ends[id]; !ok || end != off {
		c += s.perSeek
	}
	if len(s.ends) >= maxSeekEnds {
		clear(s.ends)
	}
	s.ends[id] = off + n
	return c
}
