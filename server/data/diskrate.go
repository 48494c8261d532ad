package data

import (
	"context"

	"github.com/pario/pario/wire/throttle"
)

// diskLimit is the emulated disk of an I/O server (StoreOptions.DiskRate):
// every datafile write and read waits on one token bucket, so servers that
// share one real disk on one machine each behave like a node with a disk
// of its own rate (`pario up --disk-rate 40MB/s`). It counts the bytes
// asked for, not the bytes the page cache or the disk then move, and
// nothing of metadata, fsync or directory operations.
type diskLimit struct {
	b *throttle.Bucket // nil: unlimited
}

// newDiskLimit limits to rate bytes per second (<= 0: unlimited), with a
// tenth of a second's worth of burst.
func newDiskLimit(rate float64) diskLimit {
	return diskLimit{b: throttle.New(rate, 0)}
}

// wait takes n bytes from the disk's bucket, waiting until it has earned
// them or ctx ends.
func (d diskLimit) wait(ctx context.Context, n int64) error {
	return d.b.Wait(ctx, n)
}
