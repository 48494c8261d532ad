package bench_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/posix"
)

// extentsPOSIX is a POSIX back end whose files also move a call of several
// ranges as one (backend.ExtentsIO), recording every call the engine
// makes.
type extentsPOSIX struct {
	posix.Driver
	log *callLog
}

type callLog struct {
	mu    sync.Mutex
	calls []string // "W 0+65536,131072+65536", "R ...", "WriteAt 0+65536"
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (d *extentsPOSIX) Open(ctx context.Context, env backend.Env) (backend.Backend, error) {
	b, err := d.Driver.Open(ctx, env)
	return &extentsBackend{Backend: b, log: d.log}, err
}

type extentsBackend struct {
	backend.Backend
	log *callLog
}

func (b *extentsBackend) Create(ctx context.Context, name string) (backend.File, error) {
	f, err := b.Backend.Create(ctx, name)
	return &extentsFile{File: f, log: b.log}, err
}

func (b *extentsBackend) Open(ctx context.Context, name string) (backend.File, error) {
	f, err := b.Backend.Open(ctx, name)
	return &extentsFile{File: f, log: b.log}, err
}

type extentsFile struct {
	backend.File
	log *callLog
}

func ranges(ext []backend.Extent) string {
	var s []string
	for _, e := range ext {
		s = append(s, fmt.Sprintf("%d+%d", e.Offset, e.Length))
	}
	return strings.Join(s, ",")
}

func (f *extentsFile) WriteAt(p []byte, off int64) (int, error) {
	f.log.add(fmt.Sprintf("WriteAt %d+%d", off, len(p)))
	return f.File.WriteAt(p, off)
}

func (f *extentsFile) ReadAt(p []byte, off int64) (int, error) {
	f.log.add(fmt.Sprintf("ReadAt %d+%d", off, len(p)))
	return f.File.ReadAt(p, off)
}

func (f *extentsFile) WriteExtents(p []byte, ext []backend.Extent) error {
	f.log.add("W " + ranges(ext))
	for _, e := range ext {
		if _, err := f.File.WriteAt(p[:e.Length], e.Offset); err != nil {
			return err
		}
		p = p[e.Length:]
	}
	return nil
}

func (f *extentsFile) ReadExtents(p []byte, ext []backend.Extent) error {
	f.log.add("R " + ranges(ext))
	for _, e := range ext {
		if _, err := f.File.ReadAt(p[:e.Length], e.Offset); err != nil {
			return err
		}
		p = p[e.Length:]
	}
	return nil
}

// In a --strided run a back end with ExtentsIO gets each transfer as one
// call of all its ranges (what makes HDF5 and MPI-IO move 512 MiB over
// 2 MiB blocks in one call, as the thesis' figure 4.13); without
// --strided, or without ExtentsIO, it gets a call a range. Either way the
// data verifies.
func TestStridedCallsGoThroughExtentsIO(t *testing.T) {
	const k = 64 << 10
	for _, tc := range []struct {
		name    string
		strided bool
		xfer    int64
		want    []string // rank 0's calls in the write phase
	}{
		// Two ranks, blocks of 64k, 4 segments: rank 0's blocks at 0,
		// 128k, 256k, 384k; a 128k call covers two of them.
		{"strided, two blocks a call", true, 2 * k, []string{"W 0+65536,131072+65536", "W 262144+65536,393216+65536"}},
		{"strided, half a block a call", true, k / 2, []string{"W 0+32768", "W 32768+32768", "W 131072+32768", "W 163840+32768",
			"W 262144+32768", "W 294912+32768", "W 393216+32768", "W 425984+32768"}},
		{"not strided", false, k, []string{"WriteAt 0+65536", "WriteAt 131072+65536", "WriteAt 262144+65536", "WriteAt 393216+65536"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &callLog{}
			o := opts(t, "POSIX", func(o *bench.Options) {
				o.BlockSize, o.TransferSize, o.Segments, o.Strided = k, tc.xfer, 4, tc.strided
			})
			_, out, err := runRanks(t, 2, o, func() backend.Driver { return &extentsPOSIX{log: log} })
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			// Each rank's calls come in order; rank 0's start in its
			// blocks.
			var writes, reads int
			var mine []string
			for _, c := range log.calls {
				switch {
				case strings.HasPrefix(c, "W ") || strings.HasPrefix(c, "WriteAt "):
					writes++
					var off int64
					fmt.Sscanf(strings.Fields(c)[1], "%d+", &off)
					if off/k%2 == 0 { // rank 0's blocks alternate with rank 1's
						mine = append(mine, c)
					}
				case strings.HasPrefix(c, "R ") || strings.HasPrefix(c, "ReadAt "):
					reads++
				}
			}
			if fmt.Sprint(mine) != fmt.Sprint(tc.want) {
				t.Errorf("rank 0's writes:\n%s\nwant\n%s", strings.Join(mine, "\n"), strings.Join(tc.want, "\n"))
			}
			calls := int64(2 * 4 * k / tc.xfer)
			if writes != int(calls) || reads != int(3*calls) { // read phase, -W and -R passes
				t.Errorf("%d write and %d read calls, want %d and %d", writes, reads, calls, 3*calls)
			}
		})
	}
}
