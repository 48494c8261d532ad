package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sync"
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
// increasing order and must not overlap. Each server gets one request
// (data.OpWriteList) with all of the view's ranges on it, up to the
// client's MaxRequest bytes a request; the requests to all servers go out
// at once. A server that does not know the op gets one write per range.
// On error some spans may have been written.
func (f *File) WriteList(ctx context.Context, spans []Span, p []byte) error {
	if err := f.usable("write", 0, 0); err != nil {
		return err
	}
	var n, end int64
	for i, s := range spans {
		if s.Off < 0 || s.Len < 0 || s.Off < end {
			return &fs.PathError{Op: "write", Path: f.path, Err: fmt.Errorf("list write: span %d (offset %d, length %d): offsets and lengths must be >= 0 and spans in increasing order without overlap (the previous one ends at %d): %w",
				i, s.Off, s.Len, end, syscall.EINVAL)}
		}
		// Sums that would wrap are checked before they are made: a
		// wrapped end lets the next span overlap, and wrapped byte
		// counts could add up to len(p).
		if s.Len > math.MaxInt64-s.Off {
			return &fs.PathError{Op: "write", Path: f.path, Err: fmt.Errorf("list write: span %d (offset %d, length %d) ends past the largest offset, %d: %w",
				i, s.Off, s.Len, int64(math.MaxInt64), syscall.EINVAL)}
		}
		if s.Len > int64(len(p))-n {
			return &fs.PathError{Op: "write", Path: f.path, Err: fmt.Errorf("list write: the spans hold more than the buffer's %d bytes (span %d, length %d): %w", len(p), i, s.Len, syscall.EINVAL)}
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
	max := int64(f.c.opts.MaxRequest)
	reqs := listRequests(listExtents(d, spans, p, max), max)
	errs := make([]error, len(reqs))
	origin := f.c.originOf(ctx)
	var wg sync.WaitGroup
	for i, r := range reqs {
		ep, err := f.c.server(a.Servers[r[0].datafile])
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Go(func() { errs[i] = writeRanges(ctx, ep, uint64(a.ID), origin, r) })
	}
	wg.Wait()
	if err := joinUnique(errs); err != nil {
		return fmt.Errorf("list write %s of %d spans: %w", f.path, len(spans), f.stale(cancelled(ctx, err)))
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

// listRequests groups extents into requests: per datafile, in file order,
// at most max bytes and data.MaxWriteRanges ranges each.
func listRequests(xs []extent, max int64) [][]extent {
	var out [][]extent
	open := map[int]int{} // datafile -> index in out of its growing request
	size := map[int]int64{}
	for _, x := range xs {
		if i, ok := open[x.datafile]; ok && size[x.datafile]+x.length <= max && len(out[i]) < data.MaxWriteRanges {
			out[i] = append(out[i], x)
			size[x.datafile] += x.length
			continue
		}
		open[x.datafile] = len(out)
		size[x.datafile] = x.length
		out = append(out, []extent{x})
	}
	return out
}

// writeRanges sends one request's extents of one datafile: a plain write
// for one, a list write for more, or a write each if the server predates
// the list write (ENOSYS). Origin is the writer's (origin.go).
func writeRanges(ctx context.Context, ep *wire.Endpoint, id, origin uint64, xs []extent) error {
	if len(xs) > 1 {
		req := data.WriteListRequest{ID: id, Origin: origin, Ranges: make([]data.Range, len(xs))}
		var bufs [][]byte
		for i, x := range xs {
			req.Ranges[i] = data.Range{Offset: x.physical, Length: x.length}
			bufs = append(bufs, x.bufs...)
		}
		_, _, err := wire.Call(ctx, ep, data.OpWriteList, req, bufs, nil)
		if !errors.Is(err, syscall.ENOSYS) {
			return err
		}
	}
	for _, x := range xs {
		if _, _, err := wire.Call(ctx, ep, data.OpWrite, data.WriteRequest{ID: id, Offset: x.physical, Origin: origin}, x.bufs, nil); err != nil {
			return err
		}
	}
	return nil
}
