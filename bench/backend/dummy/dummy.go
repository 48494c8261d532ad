// Package dummy is the benchmark's DUMMY back end (-a DUMMY), as IOR's:
// it moves no data and waits a fixed time per operation
// (--dummy.delay-create, -close, -sync, -xfer, in microseconds;
// --dummy.delay-only-rank0). It is the calibration back end: with zero
// delays it measures the engine's own overhead per transfer, and with
// delays it is a storage system of known speed.
//
// Delays are exact to a few microseconds: the Go runtime's sleep is
// coarse (hundreds of microseconds on a busy VM), so the last 2 ms of a
// wait are spent spinning on the clock, which costs CPU.
package dummy

import (
	"context"
	"runtime"
	"time"

	"github.com/pario/pario/bench/backend"
)

func init() { backend.Register(func() backend.Driver { return &Driver{} }) }

// Driver holds the DUMMY delays.
type Driver struct {
	Create, Close, Sync, Xfer time.Duration
	Rank0Only                 bool
}

// Name implements backend.Driver.
func (*Driver) Name() string { return "DUMMY" }

// Summary implements backend.Driver.
func (*Driver) Summary() string { return "moves no data; fixed delays per operation (calibration)" }

// Options implements backend.Driver.
func (d *Driver) Options() []backend.Option {
	return []backend.Option{
		backend.MicrosOption(&d.Create, "dummy.delay-create", "DUMMY: delay per create in usec"),
		backend.MicrosOption(&d.Close, "dummy.delay-close", "DUMMY: delay per close in usec"),
		backend.MicrosOption(&d.Sync, "dummy.delay-sync", "DUMMY: delay per sync in usec"),
		backend.MicrosOption(&d.Xfer, "dummy.delay-xfer", "DUMMY: delay per transfer in usec"),
		backend.BoolOption(&d.Rank0Only, "dummy.delay-only-rank0", "DUMMY: only rank 0 waits"),
	}
}

// Validate implements backend.Driver.
func (d *Driver) Validate(backend.Params) error { return nil }

// Open implements backend.Driver.
func (d *Driver) Open(_ context.Context, env backend.Env) (backend.Backend, error) {
	b := &Backend{Delays: *d, size: env.Params.FileSize}
	if d.Rank0Only && env.Params.Rank != 0 {
		b.Delays = Driver{}
	}
	return b, nil
}

// Backend is one rank's DUMMY back end.
type Backend struct {
	Delays Driver
	size   int64
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.NoData  = (*Backend)(nil)
)

// Wait blocks for d: sleeping while more than 2 ms remain, then spinning.
func Wait(d time.Duration) {
	if d <= 0 {
		return
	}
	deadline := time.Now().Add(d)
	if d > 3*time.Millisecond {
		time.Sleep(d - 2*time.Millisecond)
	}
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

// MovesNoData implements backend.NoData.
func (b *Backend) MovesNoData() bool { return true }

// Create implements backend.Backend.
func (b *Backend) Create(context.Context, string) (backend.File, error) {
	Wait(b.Delays.Create)
	return &File{b: b}, nil
}

// Open implements backend.Backend.
func (b *Backend) Open(context.Context, string) (backend.File, error) { return &File{b: b}, nil }

// Remove implements backend.Backend.
func (b *Backend) Remove(context.Context, string) error { return nil }

// Size implements backend.Backend: the size a complete write gives, so
// the engine's size check is quiet.
func (b *Backend) Size(context.Context, string) (int64, error) { return b.size, nil }

// Close implements backend.Backend.
func (b *Backend) Close() error { return nil }

// File is a DUMMY file: every call succeeds after its delay.
type File struct{ b *Backend }

// WriteAt waits the transfer delay and reports len(p) bytes written.
func (f *File) WriteAt(p []byte, _ int64) (int, error) {
	Wait(f.b.Delays.Xfer)
	return len(p), nil
}

// ReadAt waits the transfer delay and reports len(p) bytes read; p is
// left as it was.
func (f *File) ReadAt(p []byte, _ int64) (int, error) {
	Wait(f.b.Delays.Xfer)
	return len(p), nil
}

// Sync waits the sync delay.
func (f *File) Sync(context.Context) error {
	Wait(f.b.Delays.Sync)
	return nil
}

// Close waits the close delay.
func (f *File) Close(context.Context) error {
	Wait(f.b.Delays.Close)
	return nil
}
