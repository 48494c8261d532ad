package data

import (
	"testing"
)

// A sparse datafile reports the bytes it holds, not its size; a datafile
// never written reports nothing.
func TestUsageCountsHoles(t *testing.T) {
	s := openStore(t, StoreOptions{})
	ensure(t, s, 7)
	const size = 1 << 30
	if err := s.WriteAt(ctx, 7, make([]byte, 1<<20), size-1<<20); err != nil {
		t.Fatal(err)
	}
	gotSize, alloc, err := s.Usage(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if gotSize != size || alloc < 1<<20 || alloc > 4<<20 {
		t.Errorf("Usage of 1 GiB with 1 MiB written: size %d, allocated %d; want %d and about 1 MiB", gotSize, alloc, size)
	}
	if size, alloc, err := s.Usage(ctx, 8); err != nil || size != 0 || alloc != 0 {
		t.Errorf("Usage of a datafile never made: %d, %d, %v", size, alloc, err)
	}
}

// Two data directories on one file system report the same nonzero FSID,
// so that their space is counted once.
func TestStatfsNamesTheFileSystem(t *testing.T) {
	a, b := openStore(t, StoreOptions{}), openStore(t, StoreOptions{})
	sa, err := a.Statfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Statfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sa.FSID == 0 || sa.FSID != sb.FSID || sa.Total != sb.Total {
		t.Errorf("two stores on one file system: FSID %#x and %#x, totals %d and %d", sa.FSID, sb.FSID, sa.Total, sb.Total)
	}
}
