package client

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/wire"
)

// Span is a byte range of a file: one entry of a list write.
type Span struct{ Off, Len int64 }

// WriteList writes p to the spans of the file, in order (p holds the
// spans' bytes one after the other): a noncontiguous view written at
// once, as MPI_File_write through an hindexed view. The spans must be in
// increasing order and must not overlap. Pieces that follow each other on
// a datafile go in one request, whichever span they come from, so a view
// whose pieces are contiguous on each server costs one request per server;
// the requests to all servers go out at once. On error some spans may have
// been written.
func (f *File) WriteList(ctx context.Context, spans []Span, p []byte) error {
	var n, end int64
	for i, s := range spans {
		if s.Off < 0 || s.Len < 0 || s.Off < end {
			return &fs.PathError{Op: "write", Path: f.path, Err: fmt.Errorf("list write: span %d (offset %d, length %d): offsets and lengths must be >= 0 and spans in increasing order without overlap (the previous one ends at %d): %w",
				i, s.Off, s.Len, end, syscall.EINVAL)}
		}
		end = s.Off + s.Len
		n += s.Len
	}
	if n != int64(len(p)) {
		return &fs.PathError{Op: "write", Path: f.path, Err: fmt.Errorf("list write: the spans hold %d bytes, the buffer %d: %w", n, len(p), syscall.EINVAL)}
	}
	if n == 0 {
		return nil
	}
	if err := f.ensureRoom(ctx, end); err != nil {
		return err
	}
	a, d := f.snapshot()
	xs := listExtents(d, spans, p, int64(f.c.opts.MaxRequest))
	err := f.each(ctx, a, xs, func(_ int, ep *wire.Endpoint, x *extent) error {
		_, _, err := wire.Call(ctx, ep, data.OpWrite, data.WriteRequest{ID: uint64(a.ID), Offset: x.physical}, x.bufs, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("list write %s of %d spans: %w", f.path, len(spans), f.stale(err))
	}
	return nil
}

// listExtents maps every span onto datafile extents (staged ones
// gathered) and merges those that follow each other on a datafile, up to
// max bytes a request.
func listExtents(d dist.Distribution, spans []Span, p []byte, max int64) []extent {
	var out []extent
	last := map[int]int{} // datafile -> index in out of its latest extent
	for _, s := range spans {
		buf := p[:s.Len]
		p = p[s.Len:]
		xs := extents(d, buf, s.Off, max)
		gather(d, buf, s.Off, xs)
		for _, x := range xs {
			if i, ok := last[x.datafile]; ok {
				y := &out[i]
				if y.physical+y.length == x.physical && y.length+x.length <= max {
					y.length += x.length
					y.pieces += x.pieces
					y.bufs = append(y.bufs, x.bufs...)
					continue
				}
			}
			last[x.datafile] = len(out)
			out = append(out, x)
		}
	}
	return out
}
