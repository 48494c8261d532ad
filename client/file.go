package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// File is an open pario file. It is an io.ReaderAt and io.WriterAt, safe
// for concurrent use; concurrent writers of disjoint ranges (from this or
// other clients) never disturb each other, since each range maps to its own
// bytes of the datafiles.
//
// Written data reaches the I/O servers before WriteAt returns but is durable
// only after Sync.
//
// The errors its methods return, besides the servers' own (a
// wire.RemoteError naming the server, matched with errors.Is against
// fs.ErrNotExist, syscall.EFBIG and the like) and a broken connection
// (wire.ConnError, wire.DialError):
//
//   - fs.ErrClosed (in an *fs.PathError naming the file): the File was
//     closed; Name, Attr and Distribution still answer.
//   - syscall.EINVAL (in an *fs.PathError): a negative offset or size, or
//     a range whose end lies past the largest int64 offset, as pread(2)
//     and pwrite(2) refuse it.
//   - syscall.ESTALE, "stale file handle: PATH was removed": another
//     client removed the file; a rename does not matter, the File follows
//     the file, not its name. Reads and sizes fail so too, as writes do; a
//     datafile an I/O server lost, of a file that is still there, reads as
//     a hole (see ReadAtContext).
//   - the context's error when it ends first: context.Canceled alone, or
//     for a deadline, context.DeadlineExceeded from each server that had
//     not answered.
type File struct {
	c    *Client
	path string

	closed atomic.Bool

	mu   sync.RWMutex
	attr meta.Attr
	d    dist.Distribution
}

var (
	_ io.ReaderAt = (*File)(nil)
	_ io.WriterAt = (*File)(nil)
)

// CreateOptions say how to create a file.
type CreateOptions struct {
	// Mode is the permission bits, as given: 0 makes a file of mode 0, as
	// open(2) does. Callers that want the usual mode pass DefaultFileMode.
	Mode uint32
	// Layout chooses the distribution; zero means inherit from the
	// directory, else the server's default.
	Layout dist.Layout
	// Hints are MPI-IO style create hints (dist, strip_size, strips,
	// num_datafiles, layout, varstrip_dist:string:strips). They may not be
	// combined with Layout.
	Hints map[string]string
	// Exclusive fails with fs.ErrExist if the file exists; otherwise an
	// existing file is truncated to zero and keeps its layout, like os.Create.
	Exclusive bool
}

// Create creates a file, or truncates an existing one (see CreateOptions).
func (c *Client) Create(ctx context.Context, path string, opts CreateOptions) (*File, error) {
	l := opts.Layout
	if len(opts.Hints) > 0 {
		if !l.IsZero() {
			return nil, &fs.PathError{Op: "create", Path: path, Err: errors.New("both a layout and hints given; use one")}
		}
		var err error
		if l, err = dist.ParseHints(opts.Hints); err != nil {
			return nil, &fs.PathError{Op: "create", Path: path, Err: fmt.Errorf("%w: %w", err, syscall.EINVAL)}
		}
	}
	if err := checkLayout("create", path, l); err != nil {
		return nil, err
	}
	// A name that exists is opened and truncated, as open(2) with O_CREAT
	// and O_TRUNC does; if another client removes it between the create
	// and the open (or the truncate), the create is tried again, as the
	// kernel retries, rather than failing with ENOENT or ESTALE.
	for try := 1; ; try++ {
		a, err := metaAttr(ctx, c, meta.OpCreate, meta.CreateRequest{Path: path, Mode: opts.Mode, Layout: l, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
		if err == nil {
			return c.newFile(path, a)
		}
		if !errors.Is(err, fs.ErrExist) || opts.Exclusive {
			return nil, err
		}
		hook("create exists")
		f, err := c.Open(ctx, path)
		if err == nil {
			if err = f.TruncateContext(ctx, 0); err == nil {
				return f, nil
			}
		}
		if try == maxCreateTries || !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESTALE) {
			return nil, err
		}
	}
}

// maxCreateTries bounds Create's tries against a name that other clients
// keep creating and removing.
const maxCreateTries = 8

// Open opens an existing file.
func (c *Client) Open(ctx context.Context, path string) (*File, error) {
	a, err := c.Lookup(ctx, path)
	if err != nil {
		return nil, err
	}
	if a.Kind != meta.KindFile {
		return nil, notAFile(path, a.Kind)
	}
	return c.newFile(path, a)
}

func (c *Client) newFile(path string, a meta.Attr) (*File, error) {
	d, err := buildDist(a)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	for _, idx := range a.Servers {
		if _, err := c.server(idx); err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
	return &File{c: c, path: path, attr: a, d: d}, nil
}

func buildDist(a meta.Attr) (dist.Distribution, error) {
	d, err := dist.New(a.Layout.Dist, a.Layout.Params, len(a.Servers))
	if err != nil {
		return nil, err
	}
	if d.Datafiles() != len(a.Servers) {
		return nil, fmt.Errorf("layout %s has %d datafiles but %d servers are listed", a.Layout, d.Datafiles(), len(a.Servers))
	}
	return d, nil
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.path }

// Attr returns the file's metadata as of open (or the last layout change).
func (f *File) Attr() meta.Attr {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.attr
}

// Distribution returns the file's distribution function.
func (f *File) Distribution() dist.Distribution {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.d
}

func (f *File) snapshot() (meta.Attr, dist.Distribution) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.attr, f.d
}

// activeDatafiles is how many datafiles hold data: one while stuffed.
func activeDatafiles(a meta.Attr) int {
	if a.Stuffed {
		return 1
	}
	return len(a.Servers)
}

// stuffedLimit is the logical size a stuffed file may reach: the first
// strip, which maps onto datafile 0 at the same offsets under every layout
// the metadata server agrees to stuff.
func stuffedLimit(d dist.Distribution) int64 { return d.ContiguousLength(0) }

// ensureRoom unstuffs the file before anything is written at or past end.
func (f *File) ensureRoom(ctx context.Context, end int64) error {
	a, d := f.snapshot()
	if !a.Stuffed || end <= stuffedLimit(d) {
		return nil
	}
	na, err := metaAttr(ctx, f.c, meta.OpUnstuff, meta.UnstuffRequest{ID: a.ID})
	if err != nil {
		return fmt.Errorf("unstuff %s: %w", f.path, f.gone(err))
	}
	nd, err := buildDist(na)
	if err != nil {
		return &fs.PathError{Op: "unstuff", Path: f.path, Err: err}
	}
	f.mu.Lock()
	f.attr, f.d = na, nd
	f.mu.Unlock()
	return nil
}

// settled returns the file's attributes for an operation that must see
// every datafile holding data (size, truncate, sync, viewdist). While this
// handle thinks the file is stuffed it asks the metadata server again:
// another client may have unstuffed it since, putting data on datafiles
// this handle would otherwise skip.
func (f *File) settled(ctx context.Context) (meta.Attr, dist.Distribution, error) {
	a, d := f.snapshot()
	if !a.Stuffed {
		return a, d, nil
	}
	na, err := f.c.GetByID(ctx, a.ID)
	if err != nil {
		return meta.Attr{}, nil, fmt.Errorf("%s: %w", f.path, f.gone(err))
	}
	nd, err := buildDist(na)
	if err != nil {
		return meta.Attr{}, nil, &fs.PathError{Op: "open", Path: f.path, Err: err}
	}
	f.mu.Lock()
	f.attr, f.d = na, nd
	f.mu.Unlock()
	return na, nd, nil
}

// extent is a run of bytes contiguous on one datafile: what one request to
// an I/O server carries.
type extent struct {
	datafile int
	physical int64
	length   int64
	bufs     [][]byte // the caller's memory, in order; or staged
	pieces   int      // how many pieces of the distribution it holds
	staged   bool     // bufs is one buffer of its own (see extents)
}

// maxSlices is how many pieces of the caller's memory one extent lists
// before it gets a buffer of its own. Tiny strips make a piece per strip
// (a 1-byte strip, one per byte): listing each would cost far more memory
// than the data, and a writev of that many slices is slow anyway.
const maxSlices = 256

// extents maps [off, off+len(p)) onto per-datafile extents, merging pieces
// that follow each other on a datafile (a transfer covering whole stripes
// becomes one request per server) and cutting at max bytes.
//
// The memory it takes is bounded by the request, not by how finely the
// layout cuts it: pieces are walked, not collected, and an extent of more
// than maxSlices pieces is staged, with one buffer of its length instead
// of a slice per piece. A write fills staged buffers with gather; a read
// copies them back with scatter.
func extents(d dist.Distribution, p []byte, off int64, max int64) []extent {
	var out []extent
	open := map[int]int{} // datafile -> index in out of its growing extent
	end := off + int64(len(p))
	for lo := off; lo < end; {
		df, phys := d.ToPhysical(lo)
		n := min(d.ContiguousLength(lo), end-lo)
		buf := p[lo-off : lo-off+n]
		lo += n
		if i, ok := open[df]; ok {
			x := &out[i]
			if x.physical+x.length == phys && x.length+n <= max {
				x.length += n
				x.pieces++
				switch {
				case x.pieces <= maxSlices:
					x.bufs = append(x.bufs, buf)
				case !x.staged:
					x.staged, x.bufs = true, nil
				}
				continue
			}
		}
		// Pieces longer than max are cut into several extents.
		for len(buf) > 0 {
			m := min(int64(len(buf)), max)
			open[df] = len(out)
			out = append(out, extent{datafile: df, physical: phys, length: m, bufs: [][]byte{buf[:m]}, pieces: 1})
			phys += m
			buf = buf[m:]
		}
	}
	for i := range out {
		if out[i].staged {
			out[i].bufs = [][]byte{make([]byte, out[i].length)}
		}
	}
	return out
}

// eachPiece calls fn for every piece of extent x: its bytes in p (which
// starts at logical offset off) and where they sit in the extent.
func eachPiece(d dist.Distribution, p []byte, off int64, x *extent, fn func(inP []byte, at int64)) {
	for at := int64(0); at < x.length; {
		lo := d.ToLogical(x.datafile, x.physical+at)
		n := min(d.ContiguousLength(lo), x.length-at)
		fn(p[lo-off:lo-off+n], at)
		at += n
	}
}

// gather fills the staged extents' buffers from p, for a write.
func gather(d dist.Distribution, p []byte, off int64, xs []extent) {
	for i := range xs {
		if x := &xs[i]; x.staged {
			eachPiece(d, p, off, x, func(inP []byte, at int64) { copy(x.bufs[0][at:], inP) })
		}
	}
}

// scatter copies the staged extents' buffers into p, after a read.
func scatter(d dist.Distribution, p []byte, off int64, xs []extent) {
	for i := range xs {
		if x := &xs[i]; x.staged {
			eachPiece(d, p, off, x, func(inP []byte, at int64) { copy(inP, x.bufs[0][at:]) })
		}
	}
}

// WriteAt writes p at off. It implements io.WriterAt.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	return f.WriteAtContext(context.Background(), p, off)
}

// WriteAtContext writes p at off; pieces go to all servers at once. On error
// some pieces may have been written: the error names each server that failed.
func (f *File) WriteAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if err := f.usable("write", off, len(p)); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.ensureRoom(ctx, off+int64(len(p))); err != nil {
		return 0, err
	}
	a, d := f.snapshot()
	xs := extents(d, p, off, int64(f.c.opts.MaxRequest))
	gather(d, p, off, xs)
	origin := f.c.originOf(ctx)
	err := f.each(ctx, a, xs, func(_ int, ep *wire.Endpoint, x *extent) error {
		_, _, err := wire.Call(ctx, ep, data.OpWrite, data.WriteRequest{ID: uint64(a.ID), Offset: x.physical, Origin: origin}, x.bufs, nil)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("write %s at offset %d: %w", f.path, off, f.stale(cancelled(ctx, err)))
	}
	return len(p), nil
}

// stale says, for an error of an I/O server that no longer has the
// file's datafile (ESTALE: writes never create one), that the file was
// removed; the caller's message names the path, and the errno stays.
func (f *File) stale(err error) error {
	if errors.Is(err, syscall.ESTALE) {
		return fmt.Errorf("stale file handle: %s was removed: %w", f.path, err)
	}
	return err
}

// gone is stale for the metadata server's answer about the file's ID
// (a stuffed file asks it for its attributes, and to unstuff): ENOENT
// there means the file was removed, which is what an I/O server says
// with ESTALE. The error matches both; its errno (wire.ErrnoOf) stays
// the server's ENOENT.
func (f *File) gone(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &staleError{msg: fmt.Sprintf("stale file handle: %s was removed", f.path), err: err}
	}
	return err
}

type staleError struct {
	msg string
	err error
}

func (e *staleError) Error() string        { return e.msg + ": " + e.err.Error() }
func (e *staleError) Unwrap() error        { return e.err }
func (e *staleError) Is(target error) bool { return target == syscall.ESTALE }

// cancelled replaces the joined errors of a request's pieces by the
// context's when the caller cancelled it: every piece then failed with
// the same cause, each server's way of saying so (a frame cut off, a
// dial given up) adds nothing. A deadline keeps the pieces' errors, which
// name the servers that had not answered.
func cancelled(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return err
}

// usable refuses a call on a closed File, and a range [off, off+n) that
// no file can hold: a negative offset, or an end past math.MaxInt64,
// which would otherwise map to no piece at all and report n bytes moved
// while none were (pread(2) and pwrite(2) answer EINVAL to both).
func (f *File) usable(op string, off int64, n int) error {
	if f.closed.Load() {
		return &fs.PathError{Op: op, Path: f.path, Err: fs.ErrClosed}
	}
	if off < 0 {
		return &fs.PathError{Op: op, Path: f.path, Err: fmt.Errorf("negative offset %d: %w", off, syscall.EINVAL)}
	}
	if int64(n) > math.MaxInt64-off {
		return &fs.PathError{Op: op, Path: f.path, Err: fmt.Errorf("%d bytes at offset %d end past the largest offset, %d: %w", n, off, int64(math.MaxInt64), syscall.EINVAL)}
	}
	return nil
}

// each runs fn for every extent concurrently and joins the errors.
func (f *File) each(ctx context.Context, a meta.Attr, xs []extent, fn func(i int, ep *wire.Endpoint, x *extent) error) error {
	if len(xs) == 1 {
		ep, err := f.c.server(a.Servers[xs[0].datafile])
		if err != nil {
			return err
		}
		return fn(0, ep, &xs[0])
	}
	errs := make([]error, len(xs))
	var wg sync.WaitGroup
	for i := range xs {
		ep, err := f.c.server(a.Servers[xs[i].datafile])
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Go(func() { errs[i] = fn(i, ep, &xs[i]) })
	}
	wg.Wait()
	return joinUnique(errs)
}

// joinUnique joins errors, keeping one of each message: a dead server
// failing sixteen pieces of one write is reported once.
func joinUnique(errs []error) error {
	seen := map[string]bool{}
	var out []error
	for _, err := range errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// ReadAt reads len(p) bytes at off. It implements io.ReaderAt: a read that
// reaches the end of the file returns the bytes before it and io.EOF.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt with a context. Holes read as zeros. A file
// removed by another client fails with ESTALE, as its writes do, once its
// datafiles are gone (the stale-file error names the path); a datafile
// missing from a file that is still there reads as a hole
// (missingDatafiles).
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if err := f.usable("read", off, len(p)); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	a, d := f.snapshot()
	xs := extents(d, p, off, int64(f.c.opts.MaxRequest))
	got := make([]int64, len(xs))
	if err := f.readExtents(ctx, a, xs, got); err != nil {
		return 0, fmt.Errorf("read %s at offset %d: %w", f.path, off, err)
	}
	short := false
	for i := range xs {
		short = short || got[i] < xs[i].length
	}
	if !short {
		scatter(d, p, off, xs)
		return len(p), nil
	}
	size, err := f.settleShort(ctx, a, d, xs, got)
	if err != nil {
		return 0, fmt.Errorf("read %s at offset %d: %w", f.path, off, err)
	}
	for i := range xs {
		zeroFrom(xs[i].bufs, got[i])
	}
	scatter(d, p, off, xs)
	n := max(0, min(int64(len(p)), size-off))
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return len(p), nil
}

// readExtents reads every extent into its bufs, adding to got how many
// bytes each brought (short at its datafile's end).
func (f *File) readExtents(ctx context.Context, a meta.Attr, xs []extent, got []int64) error {
	active := activeDatafiles(a)
	missing := make([]error, len(xs))
	err := f.each(ctx, a, xs, func(i int, ep *wire.Endpoint, x *extent) error {
		req := data.ReadRequest{ID: uint64(a.ID), Offset: x.physical, Length: x.length}
		_, n, err := wire.Call(ctx, ep, data.OpRead, req, nil, x.bufs)
		if errors.Is(err, syscall.ESTALE) {
			// No such datafile. A stuffed file's other datafiles are made
			// when it is unstuffed: until then there is nothing to read
			// there (they are still asked: another client may have
			// unstuffed it). Any other is judged below.
			if x.datafile < active {
				missing[i] = err
			}
			n, err = 0, nil
		}
		got[i] += int64(n)
		return err
	})
	if err == nil {
		err = f.c.missingDatafiles(ctx, a, missing)
	}
	return f.stale(cancelled(ctx, err))
}

// settleShort tells, for a read that some datafile answered short, the
// end of the file from holes, and returns the file's size. A run missing
// from an extent is past the end of the file or a hole, and only the size
// tells which; but a size taken after another client wrote there (an
// append, or an unstuffing write) would put a run that was missing at the
// read inside the file, and it would read as zeros the file never held.
// So the runs the size puts inside the file are read again: what is still
// missing then was missing after the size was taken, a hole (bytes do
// not go away but by a truncate); runs that brought bytes are asked about
// with a new size. Every round brings at least one byte more, so it ends;
// with no writer about, the end of the file costs no round and a hole one.
func (f *File) settleShort(ctx context.Context, a meta.Attr, d dist.Distribution, xs []extent, got []int64) (int64, error) {
	for {
		hook("short read")
		size, err := f.size(ctx)
		if err != nil {
			return 0, err
		}
		var again []extent
		var idx []int
		for i, x := range xs {
			if got[i] < x.length && d.ToLogical(x.datafile, x.physical+got[i]) < size {
				again = append(again, extent{datafile: x.datafile, physical: x.physical + got[i], length: x.length - got[i], bufs: tail(x.bufs, got[i])})
				idx = append(idx, i)
			}
		}
		if len(again) == 0 {
			return size, nil
		}
		more := make([]int64, len(again))
		if err := f.readExtents(ctx, a, again, more); err != nil {
			return 0, err
		}
		grew := false
		for j, i := range idx {
			got[i] += more[j]
			grew = grew || more[j] > 0
		}
		if !grew {
			return size, nil
		}
	}
}

// tail is bufs without their first n bytes.
func tail(bufs [][]byte, n int64) [][]byte {
	for len(bufs) > 0 && n >= int64(len(bufs[0])) {
		n -= int64(len(bufs[0]))
		bufs = bufs[1:]
	}
	if len(bufs) == 0 {
		return nil
	}
	return append([][]byte{bufs[0][n:]}, bufs[1:]...)
}

// testHook, if set, runs at these points of a call, where tests change
// the file from another client: "short read", in a read that came back
// short, before the file's size is asked; "size", in a size of a file
// this handle has stuffed, before its datafile is asked; "create exists",
// in a Create that found its name taken, before it opens the file.
var testHook atomic.Pointer[func(point string)]

func hook(point string) {
	if h := testHook.Load(); h != nil {
		(*h)(point)
	}
}

// zeroFrom clears the bytes of bufs after the first n.
func zeroFrom(bufs [][]byte, n int64) {
	for _, b := range bufs {
		if n >= int64(len(b)) {
			n -= int64(len(b))
			continue
		}
		clear(b[n:])
		n = 0
	}
}

// datafileCall sends one small request per active datafile concurrently;
// fn receives the datafile number and its server.
func (c *Client) datafileCall(ctx context.Context, a meta.Attr, fn func(df int, ep *wire.Endpoint) error) error {
	n := activeDatafiles(a)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for df := 0; df < n; df++ {
		ep, err := c.server(a.Servers[df])
		if err != nil {
			return err
		}
		wg.Go(func() { errs[df] = fn(df, ep) })
	}
	wg.Wait()
	return joinUnique(errs)
}

// datafileSizes returns the physical size of every datafile of a file.
func (c *Client) datafileSizes(ctx context.Context, a meta.Attr) ([]int64, error) {
	sizes, _, err := c.datafileUsage(ctx, a)
	return sizes, err
}

// datafileUsage returns the physical size of every datafile of a file and
// the bytes they hold on disk, summed.
func (c *Client) datafileUsage(ctx context.Context, a meta.Attr) ([]int64, int64, error) {
	sizes := make([]int64, len(a.Servers))
	allocs := make([]int64, len(a.Servers))
	missing := make([]error, len(a.Servers))
	err := c.datafileCall(ctx, a, func(df int, ep *wire.Endpoint) error {
		resp, _, err := wire.Call(ctx, ep, data.OpSize, data.SizeRequest{ID: uint64(a.ID)}, nil, nil)
		if errors.Is(err, syscall.ESTALE) {
			missing[df], err = err, nil
		}
		sizes[df], allocs[df] = resp.Size, resp.Allocated
		return err
	})
	if err == nil {
		err = c.missingDatafiles(ctx, a, missing)
	}
	var alloc int64
	for _, n := range allocs {
		alloc += n
	}
	return sizes, alloc, err
}

// missingDatafiles judges the datafiles of file a that their I/O servers
// do not have (ESTALE; nil entries are datafiles that answered). If the
// metadata server still has the file, they are holes and the answer is
// nil: an I/O server lost them in a crash before the file's first sync
// (pario fsck reports them), or the store was written before creates made
// every datafile. If it does not, the file was removed, and the answer is
// the I/O server's ESTALE: a reader must not take a removed file for a
// shorter one (a copy would end early and report success).
func (c *Client) missingDatafiles(ctx context.Context, a meta.Attr, missing []error) error {
	i := slices.IndexFunc(missing, func(err error) bool { return err != nil })
	if i < 0 {
		return nil
	}
	_, err := c.GetByID(ctx, a.ID)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return missing[i]
	default:
		return fmt.Errorf("%w; asking the metadata server whether the file is still there: %w", missing[i], err)
	}
}

// Usage is a file's logical size and the bytes its datafiles hold on the
// I/O servers' disks (st_blocks of each, so holes take none).
type Usage struct {
	Size, Allocated int64
}

// DiskBlock is the unit of allocation Grown assumes of the I/O servers'
// file systems: ext4's and XFS's default block, tmpfs's page.
const DiskBlock = 4096

// denseAllocated is what the datafiles of a file of the given logical
// size hold on disk when it has no hole: each datafile's bytes, in whole
// blocks.
func denseAllocated(d dist.Distribution, size int64) int64 {
	var n int64
	for df := range d.Datafiles() {
		n += (d.PhysicalSize(df, size) + DiskBlock - 1) / DiskBlock * DiskBlock
	}
	return n
}

// Grown returns the usage of a file with distribution d after a write of
// n bytes at off, from its usage u before, where that can be told without
// asking the I/O servers: the file has no hole (u.Allocated is what its
// size takes in whole blocks, as every file written from its start
// without a gap has) and the write leaves none (off <= u.Size). A mount
// that is the file's only writer (fusefs) keeps its size this way
// instead of asking every server after each write.
func (u Usage) Grown(d dist.Distribution, off, n int64) (Usage, bool) {
	if off < 0 || n < 0 || off > u.Size || off > math.MaxInt64-n || u.Allocated != denseAllocated(d, u.Size) {
		return Usage{}, false
	}
	if end := off + n; end > u.Size {
		return Usage{Size: end, Allocated: denseAllocated(d, end)}, true
	}
	return u, true
}

func (c *Client) fileSize(ctx context.Context, a meta.Attr) (int64, error) {
	u, err := c.fileUsage(ctx, a)
	return u.Size, err
}

func (c *Client) fileUsage(ctx context.Context, a meta.Attr) (Usage, error) {
	d, err := buildDist(a)
	if err != nil {
		return Usage{}, err
	}
	sizes, alloc, err := c.datafileUsage(ctx, a)
	if err != nil {
		return Usage{}, err
	}
	return Usage{Size: d.LogicalSize(sizes), Allocated: alloc}, nil
}

// Size returns the file's logical size, computed from its datafiles.
func (f *File) Size(ctx context.Context) (int64, error) {
	if err := f.usable("size", 0, 0); err != nil {
		return 0, err
	}
	return f.size(ctx)
}

// size is Size for a call under way, which a Close meanwhile does not stop.
func (f *File) size(ctx context.Context) (int64, error) {
	u, err := f.usage(ctx)
	return u.Size, err
}

// Usage returns the file's logical size and the bytes its datafiles hold.
func (f *File) Usage(ctx context.Context) (Usage, error) {
	if err := f.usable("stat", 0, 0); err != nil {
		return Usage{}, err
	}
	return f.usage(ctx)
}

// usage is Usage for a call under way. A handle that has the file stuffed
// asks its first datafile, and then the metadata server whether the file
// is still stuffed: unstuffing is one way, so a file still stuffed then
// was stuffed when its datafile answered, and the size holds. One that
// another client unstuffed meanwhile (growing it past its first strip)
// is asked again, every datafile. Asked the other way round, as before,
// an unstuffing between the two gave the first datafile's size alone, a
// size the file never had.
func (f *File) usage(ctx context.Context) (Usage, error) {
	a, _ := f.snapshot()
	if a.Stuffed {
		hook("size")
		u, err := f.c.fileUsage(ctx, a)
		na, _, serr := f.settled(ctx)
		switch {
		case serr != nil: // removed: the metadata server says so best
			return Usage{}, fmt.Errorf("size of %s: %w", f.path, serr)
		case !na.Stuffed:
			a = na
		case err != nil:
			return Usage{}, fmt.Errorf("size of %s: %w", f.path, f.stale(err))
		default:
			return u, nil
		}
	}
	u, err := f.c.fileUsage(ctx, a)
	if err != nil {
		return Usage{}, fmt.Errorf("size of %s: %w", f.path, f.stale(err))
	}
	return u, nil
}

// Stat returns the file's metadata and current size.
func (f *File) Stat() (FileInfo, error) { return f.StatContext(context.Background()) }

// StatContext is Stat with a context.
func (f *File) StatContext(ctx context.Context) (FileInfo, error) {
	u, err := f.Usage(ctx)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Path: f.path, Attr: f.Attr(), Size: u.Size, Allocated: u.Allocated}, nil
}

// Truncate sets the file's size, cutting or extending (with a hole) every
// datafile to its share.
func (f *File) Truncate(size int64) error { return f.TruncateContext(context.Background(), size) }

// TruncateContext is Truncate with a context.
func (f *File) TruncateContext(ctx context.Context, size int64) error {
	if err := f.usable("truncate", 0, 0); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.path, Err: fmt.Errorf("negative size %d: %w", size, syscall.EINVAL)}
	}
	if err := f.ensureRoom(ctx, size); err != nil {
		return err
	}
	a, d, err := f.settled(ctx)
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", f.path, size, err)
	}
	err = f.c.datafileCall(ctx, a, func(df int, ep *wire.Endpoint) error {
		req := data.TruncateRequest{ID: uint64(a.ID), Size: d.PhysicalSize(df, size)}
		_, _, err := wire.Call(ctx, ep, data.OpTruncate, req, nil, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", f.path, size, f.stale(cancelled(ctx, err)))
	}
	return nil
}

// Sync makes everything written so far durable on every I/O server
// holding the file: when it returns nil, the bytes are on disk.
func (f *File) Sync() error { return f.SyncContext(context.Background()) }

// SyncContext is Sync with a context.
func (f *File) SyncContext(ctx context.Context) error {
	if err := f.usable("sync", 0, 0); err != nil {
		return err
	}
	a, _, err := f.settled(ctx)
	if err != nil {
		return fmt.Errorf("sync %s: %w", f.path, err)
	}
	err = f.c.datafileCall(ctx, a, func(_ int, ep *wire.Endpoint) error {
		_, _, err := wire.Call(ctx, ep, data.OpSync, data.SyncRequest{ID: uint64(a.ID)}, nil, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("sync %s: %w", f.path, f.stale(cancelled(ctx, err)))
	}
	// The file's name too: the metadata server answers a create before
	// its fdatasync (server/meta/durable.go).
	if err := f.c.SyncNamespace(ctx); err != nil {
		return fmt.Errorf("sync %s: %w", f.path, err)
	}
	return nil
}

// Check asks the metadata server whether this handle still writes the
// store's file. It returns nil while the file is known there (under any
// name) with the layout the handle has, and ESTALE otherwise: "stale file
// handle: PATH was removed" once another client removed it or replaced
// it by a rename over its name, and a layout error once another client
// gave it a new layout (which an empty file allows: pario layout set, the
// mount's user.pario.layout). Neither reaches the handle by itself: the
// writes and syncs of a removed file succeed until the metadata server's
// reaper has removed its datafiles, about 50 ms after the remove
// (docs/store.md, "Removing a file"), and a handle keeps placing bytes by
// the layout it opened, where readers by the new one find them scrambled.
// A writer that must not report success for such bytes (pario cp) asks
// after its last Sync.
func (f *File) Check(ctx context.Context) error {
	if err := f.usable("stat", 0, 0); err != nil {
		return err
	}
	a, _ := f.snapshot()
	na, err := f.c.GetByID(ctx, a.ID)
	if errors.Is(err, fs.ErrNotExist) {
		return f.gone(err) // names the path
	}
	if err != nil {
		return fmt.Errorf("check that %s is still there: %w", f.path, err)
	}
	if na.Layout != a.Layout || !slices.Equal(na.Servers, a.Servers) {
		return fmt.Errorf("stale file handle: another client changed the layout of %s from %s to %s while it was open here: bytes written through this handle are placed by the old one: %w",
			f.path, a.Layout, na.Layout, syscall.ESTALE)
	}
	return nil
}

// SyncNamespace returns once every namespace change the metadata server
// answered before the call is durable (what fsync of a directory asks).
// A metadata server from before deferred durability answers ENOSYS: it
// synced every change before answering it, so there is nothing to wait for.
func (c *Client) SyncNamespace(ctx context.Context) error {
	_, _, err := wire.Call(ctx, c.meta, meta.OpSync, meta.SyncRequest{}, nil, nil)
	if errors.Is(err, syscall.ENOSYS) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync the namespace: %w", err)
	}
	return nil
}

// Close releases the file. pario keeps no per-open state on the servers,
// so Close does not sync: call Sync for durability. Calls after Close
// fail with fs.ErrClosed, a second Close too (as os.File); calls already
// under way finish.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	return nil
}

// DatafileInfo describes one datafile of a file, for viewdist.
type DatafileInfo struct {
	Datafile int
	Server   meta.ServerInfo
	Index    uint32 // the server's index in the cluster
	Size     int64  // physical bytes held
	Active   bool   // false for the datafiles of a stuffed file beyond the first
}

// Datafiles reports where each datafile lives and how many bytes it holds.
func (f *File) Datafiles(ctx context.Context) ([]DatafileInfo, error) {
	if err := f.usable("viewdist", 0, 0); err != nil {
		return nil, err
	}
	a, _, err := f.settled(ctx)
	if err != nil {
		return nil, fmt.Errorf("viewdist %s: %w", f.path, err)
	}
	sizes, err := f.c.datafileSizes(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("viewdist %s: %w", f.path, err)
	}
	out := make([]DatafileInfo, len(a.Servers))
	for df, idx := range a.Servers {
		out[df] = DatafileInfo{Datafile: df, Server: f.c.infos[idx], Index: idx, Size: sizes[df], Active: df < activeDatafiles(a)}
	}
	return out, nil
}
