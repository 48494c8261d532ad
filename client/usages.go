package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// UsagesOf returns what UsageOf would for each of attrs, in order, with
// each file's error beside it (nil for a directory, whose usage is zero).
// Instead of one size request per datafile it sends each I/O server one
// usageBatch request per data.MaxUsageBatch datafiles, the servers in
// parallel: a page of a directory listing costs a few round trips, not
// one per file and server.
func (c *Client) UsagesOf(ctx context.Context, attrs []meta.Attr) ([]Usage, []error) {
	type file struct {
		d      dist.Distribution
		sizes  []int64
		allocs []int64
		errs   []error
	}
	files := make([]file, len(attrs))
	errs := make([]error, len(attrs))
	byServer := map[uint32][]datafileRef{}
	for i, a := range attrs {
		if a.Kind != meta.KindFile {
			continue
		}
		d, err := buildDist(a)
		if err != nil {
			errs[i] = err
			continue
		}
		n := len(a.Servers)
		files[i] = file{d: d, sizes: make([]int64, n), allocs: make([]int64, n), errs: make([]error, n)}
		for df := 0; df < activeDatafiles(a); df++ {
			byServer[a.Servers[df]] = append(byServer[a.Servers[df]], datafileRef{file: i, df: df, id: uint64(a.ID)})
		}
	}
	var wg sync.WaitGroup
	for idx, refs := range byServer {
		wg.Go(func() {
			// Each datafile is written by this server's goroutine alone.
			for i, r := range c.serverUsages(ctx, idx, refs) {
				f := &files[refs[i].file]
				f.sizes[refs[i].df], f.allocs[refs[i].df], f.errs[refs[i].df] = r.size, r.alloc, r.err
			}
		})
	}
	wg.Wait()
	usages := make([]Usage, len(attrs))
	for i, f := range files {
		if f.d == nil {
			continue
		}
		if onlyMissing(f.errs) {
			// Removed since it was listed, or holes (missingDatafiles).
			if err := c.missingDatafiles(ctx, attrs[i], f.errs); err != nil {
				errs[i] = err
				continue
			}
			clear(f.errs)
		}
		if err := joinUnique(f.errs); err != nil {
			errs[i] = err
			continue
		}
		var alloc int64
		for _, n := range f.allocs {
			alloc += n
		}
		usages[i] = Usage{Size: f.d.LogicalSize(f.sizes), Allocated: alloc}
	}
	return usages, errs
}

// onlyMissing reports whether errs holds failures and each is a missing
// datafile (ESTALE).
func onlyMissing(errs []error) bool {
	some := false
	for _, err := range errs {
		if err != nil {
			if !errors.Is(err, syscall.ESTALE) {
				return false
			}
			some = true
		}
	}
	return some
}

// datafileRef is datafile df (ID id) of the file at index file of a
// UsagesOf call.
type datafileRef struct {
	file, df int
	id       uint64
}

type datafileUsage struct {
	size, alloc int64
	err         error
}

// usageBatchMax is data.MaxUsageBatch; tests lower it to cross batch
// boundaries with a few files.
var usageBatchMax = data.MaxUsageBatch

// serverUsages asks I/O server idx for the usage of refs' datafiles, a
// batch at a time. A server that does not know the batch op (ENOSYS, an
// older one) is asked one size request per datafile instead, for the rest
// of the call too.
func (c *Client) serverUsages(ctx context.Context, idx uint32, refs []datafileRef) []datafileUsage {
	out := make([]datafileUsage, len(refs))
	ep, err := c.server(idx)
	if err != nil {
		for i := range out {
			out[i].err = err
		}
		return out
	}
	ids := make([]uint64, 0, min(len(refs), usageBatchMax))
	old := false // the server answered ENOSYS to a batch
	for start := 0; start < len(refs); start += usageBatchMax {
		batch := refs[start:min(start+usageBatchMax, len(refs))]
		res := out[start : start+len(batch)]
		ids = ids[:0]
		for _, r := range batch {
			ids = append(ids, r.id)
		}
		if old {
			c.sizeEach(ctx, ep, ids, res)
			continue
		}
		resp, _, err := wire.Call(ctx, ep, data.OpUsageBatch, data.UsageBatchRequest{IDs: ids}, nil, nil)
		if errors.Is(err, syscall.ENOSYS) {
			// The server will not know the op for the next batch either.
			old = true
			c.sizeEach(ctx, ep, ids, res)
			continue
		}
		if err == nil && len(resp.Usages) != len(ids) {
			err = fmt.Errorf("%s: usage batch answered %d datafiles of %d: %w", ep.Name, len(resp.Usages), len(ids), syscall.EPROTO)
		}
		for i := range res {
			switch {
			case err != nil:
				res[i].err = err
			case resp.Usages[i].Errno != 0:
				errno := resp.Usages[i].Errno
				// As a size request's failure would read.
				res[i].err = &wire.RemoteError{Server: ep.Name, Errno: errno, Msg: fmt.Sprintf("size of datafile %#x: %v", ids[i], errno)}
			default:
				res[i].size, res[i].alloc = resp.Usages[i].Size, resp.Usages[i].Allocated
			}
		}
	}
	return out
}

// sizeEach is the batch's fallback: one size request per datafile, a few
// at a time.
func (c *Client) sizeEach(ctx context.Context, ep *wire.Endpoint, ids []uint64, res []datafileUsage) {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, _, err := wire.Call(ctx, ep, data.OpSize, data.SizeRequest{ID: id}, nil, nil)
			res[i] = datafileUsage{size: resp.Size, alloc: resp.Allocated, err: err}
		})
	}
	wg.Wait()
}
