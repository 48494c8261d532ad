package data

import (
	"errors"
	"syscall"
	"testing"

	"github.com/pario/pario/wire"
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
	if size, alloc, err := s.Usage(ctx, 8); !errors.Is(err, syscall.ESTALE) || size != 0 || alloc != 0 {
		t.Errorf("Usage of a datafile never made: %d, %d, %v; want ESTALE", size, alloc, err)
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

// A usage batch answers each datafile as a size request would, in order:
// a datafile never made is ESTALE in its place, not a failed batch.
func TestHandlerUsageBatch(t *testing.T) {
	s := openStore(t, StoreOptions{})
	h := &Handler{Store: s}
	ensure(t, s, 7)
	ensure(t, s, 9)
	if err := s.WriteAt(ctx, 7, make([]byte, 5000), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteAt(ctx, 9, []byte("x"), 1<<30); err != nil {
		t.Fatal(err)
	}
	ids := []uint64{9, 8, 7, 9}
	var e wire.Enc
	UsageBatchRequest{IDs: ids}.Encode(&e)
	resp, err := h.ServeWire(ctx, &wire.Request{Op: OpUsageBatch.Code, Args: e.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	var got UsageBatchResponse
	if err := got.Decode(wire.NewDec(resp.Args)); err != nil {
		t.Fatal(err)
	}
	if len(got.Usages) != len(ids) {
		t.Fatalf("%d answers for %d ids", len(got.Usages), len(ids))
	}
	for i, id := range ids {
		size, alloc, err := s.Usage(ctx, id)
		want := DatafileUsage{Size: size, Allocated: alloc, Errno: errnoOrZero(err)}
		if got.Usages[i] != want {
			t.Errorf("answer %d (datafile %d): %+v, want %+v as a size request", i, id, got.Usages[i], want)
		}
	}
	if got.Usages[0].Size != 1<<30+1 || got.Usages[1] != (DatafileUsage{Errno: syscall.ESTALE}) || got.Usages[2].Size != 5000 {
		t.Errorf("usages %+v: want sizes 1 GiB+1, ESTALE (never made), 5000", got.Usages)
	}
}

func errnoOrZero(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return wire.ErrnoOf(err)
}
