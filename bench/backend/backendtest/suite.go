// Package backendtest is the contract every benchmark back end must pass:
// a new back end (HDF5, NetCDF-4, ...) calls Run from its own test.
package backendtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/pario/pario/bench/backend"
)

// Run checks drv on one rank: create, positioned writes, sync, close,
// open, positioned reads (io.EOF at the end), size, remove (twice: a
// missing file is not an error). name is a test file name valid for the
// back end; a back end that moves no data (backend.NoData) is only checked
// for the calls succeeding.
func Run(t *testing.T, drv backend.Driver, env backend.Env, name string) {
	t.Helper()
	ctx := context.Background()
	const xfer = 64 << 10
	if env.Params.Tasks == 0 {
		env.Params = backend.Params{Tasks: 1, TransferSize: xfer, BlockSize: 4 * xfer, Segments: 1, FileSize: 4 * xfer}
	}
	if env.Barrier == nil {
		env.Barrier = func(context.Context) error { return nil }
	}
	if err := drv.Validate(env.Params); err != nil {
		t.Fatalf("%s: Validate: %v", drv.Name(), err)
	}
	be, err := drv.Open(ctx, env)
	if err != nil {
		t.Fatalf("%s: Open: %v", drv.Name(), err)
	}
	defer be.Close()
	noData := false
	if nd, ok := be.(backend.NoData); ok {
		noData = nd.MovesNoData()
	}
	if ch, ok := be.(backend.Checker); ok {
		if err := ch.Check(ctx, name, true); err != nil {
			t.Fatalf("Check(%s, write): %v", name, err)
		}
	}
	if err := be.Remove(ctx, name); err != nil {
		t.Fatalf("Remove of a missing file: %v", err)
	}
	f, err := be.Create(ctx, name)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	data := make([]byte, 4*xfer)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	// Out of order, as -z does.
	for _, j := range []int{2, 0, 3, 1} {
		n, err := f.WriteAt(data[j*xfer:(j+1)*xfer], int64(j*xfer))
		if err != nil || n != xfer {
			t.Fatalf("WriteAt %d: %d, %v", j*xfer, n, err)
		}
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d, ok := be.(backend.CacheDropper); ok {
		if err := d.DropCache(ctx, name); err != nil {
			t.Fatalf("DropCache: %v", err)
		}
	}
	size, err := be.Size(ctx, name)
	if err != nil || size != int64(len(data)) {
		t.Fatalf("Size = %d, %v; want %d", size, err, len(data))
	}
	f, err = be.Open(ctx, name)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	got := make([]byte, xfer)
	for _, j := range []int{3, 1, 0, 2} {
		n, err := f.ReadAt(got, int64(j*xfer))
		if (err != nil && err != io.EOF) || n != xfer {
			t.Fatalf("ReadAt %d: %d, %v", j*xfer, n, err)
		}
		if !noData && !bytes.Equal(got, data[j*xfer:(j+1)*xfer]) {
			t.Fatalf("ReadAt %d: wrong data", j*xfer)
		}
	}
	if !noData {
		n, err := f.ReadAt(got, int64(len(data)-xfer/2))
		if n != xfer/2 || !errors.Is(err, io.EOF) {
			t.Errorf("ReadAt across the end: %d, %v; want %d, io.EOF", n, err, xfer/2)
		}
	}
	if err := f.Close(ctx); err != nil {
		t.Fatalf("Close after reading: %v", err)
	}
	if err := be.Remove(ctx, name); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if !noData {
		if _, err := be.Open(ctx, name); err == nil {
			t.Errorf("Open after Remove succeeded")
		}
	}
}
