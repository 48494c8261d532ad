package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// openFile is the state of a file open through this mount, shared by all
// its descriptors: one client.File (which holds the layout and server
// list, so data calls need no metadata round trip), the open count, and
// whether the file's name is gone while it is open.
type openFile struct {
	id meta.FileID

	// Guarded by fileSystem.mu.
	opens     int
	releasing int       // of opens, those whose release has begun
	cached    int       // descriptors that use the kernel's page cache
	unlinked  bool      // the namespace entry is gone; data goes at last release
	gone      meta.Attr // the attributes the entry had, for RemoveData

	mu sync.RWMutex
	f  *client.File

	// wb holds the writes of all descriptors on the file that are on
	// their way to the I/O servers.
	wb writeBehind

	// dirty is set by writes and truncates and cleared when the
	// modification time is recorded (at close, fsync, or an explicit
	// utimes).
	dirty atomic.Bool

	// writes counts the writes and truncates through this mount once
	// they are handed on (queued or done), so that a size read after a
	// count was taken is known to include every write counted.
	writes atomic.Uint64

	// known is what the mount last read or was answered of the file's
	// attributes and usage; notes counts the changes to the file the
	// lease brought, own the mount's own attribute changes in flight
	// (ownBegun those begun). See known.go.
	knownMu  sync.Mutex
	known    knownAttr
	notes    uint64
	own      int
	ownBegun uint64

	used time.Time // a directory's state: when last used (dirState)

	// madeIn is the directory this mount made the file in, while its
	// attribute changes may be answered here (attrhere.go); 0 otherwise.
	madeIn atomic.Uint64
}

func (of *openFile) file() *client.File {
	if of == nil {
		return nil
	}
	of.mu.RLock()
	defer of.mu.RUnlock()
	return of.f
}

// refresh gives the shared File newer attributes: a layout set on the
// empty file, or an unstuffing done by another client. It never goes back
// from unstuffed to stuffed (a stale answer racing our own unstuff).
func (of *openFile) refresh(a meta.Attr) {
	of.mu.Lock()
	defer of.mu.Unlock()
	of.refreshLocked(a)
}

func (of *openFile) refreshLocked(a meta.Attr) {
	if of.f == nil {
		return
	}
	cur := of.f.Attr()
	same := cur.Layout == a.Layout && slices.Equal(cur.Servers, a.Servers)
	if same && (cur.Stuffed == a.Stuffed || !cur.Stuffed) {
		// Writes look at the mode (killPriv), and reads at the times
		// (relatime, accessed): an open that finds the file open here
		// already (a release that reaches the mount after the next open)
		// must not judge atime by the times of the first open.
		if cur.Mode != a.Mode || cur.Atime != a.Atime || cur.Mtime != a.Mtime || cur.Ctime != a.Ctime {
			cur.Mode, cur.Atime, cur.Mtime, cur.Ctime = a.Mode, a.Atime, a.Mtime, a.Ctime
			_ = of.f.SetAttr(cur)
		}
		return
	}
	_ = of.f.SetAttr(a) // only fails for attributes no File could use
}

// openFile returns the state of the file with this ID if it is open here.
func (fsys *fileSystem) openFile(id meta.FileID) *openFile {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	return fsys.open[id]
}

// openByDescriptor returns the state of file id if a descriptor still
// has it open here: one whose release has begun does not count (its
// release waits for the file's writes in flight, which a close in a held
// directory left to it, and an unlink right after that close need not
// keep the data for it).
func (fsys *fileSystem) openByDescriptor(id meta.FileID) (*openFile, bool) {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	of := fsys.open[id]
	return of, of != nil && of.opens > of.releasing
}

// orphan returns the attributes and File of a file open here whose name
// is gone, or a nil File.
func (fsys *fileSystem) orphan(id meta.FileID) (meta.Attr, *client.File) {
	fsys.mu.Lock()
	of := fsys.open[id]
	if of == nil || !of.unlinked {
		fsys.mu.Unlock()
		return meta.Attr{}, nil
	}
	gone := of.gone
	fsys.mu.Unlock()
	return gone, of.file()
}

// retain counts one more descriptor, opened with flags, on the file with
// this ID, and says whether it bypasses the page cache (directFor).
func (fsys *fileSystem) retain(id meta.FileID, flags uint32) (of *openFile, direct, orphan bool) {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	of = fsys.open[id]
	if of == nil {
		of = &openFile{id: id}
		of.wb.init()
		fsys.open[id] = of
		fsys.idle.busy()
	}
	direct = fsys.directFor(flags, of.opens > of.cached)
	of.opens++
	if !direct {
		of.cached++
	}
	return of, direct, of.unlinked
}

// cachedReaders reports whether a descriptor on the file uses the page
// cache, which writes through a direct descriptor then have to invalidate.
func (fsys *fileSystem) cachedReaders(of *openFile) bool {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	return of.cached > 0
}

// settle waits until the writes in flight on the file with this ID, if it
// is open here, have reached the I/O servers, so that sizes computed from
// the datafiles include them.
func (fsys *fileSystem) settle(id meta.FileID) {
	if of := fsys.openFile(id); of != nil {
		of.wb.wait()
	}
}

// DirectIO chooses which descriptors bypass the kernel's page cache
// (FOPEN_DIRECT_IO, with FOPEN_PARALLEL_DIRECT_WRITES): their data goes
// from the program's memory to the mount without a copy into cache pages
// nobody will read, and writers of disjoint ranges of one file proceed in
// parallel, where a cached descriptor's writes go through the page cache
// one at a time under the inode lock. Descriptors that read keep the page
// cache and its read-ahead. Read-only descriptors are always cached.
type DirectIO uint8

const (
	// DirectWriters (the default): write-only descriptors, and read-write
	// ones that are likely to be written big: those that create the file
	// (O_CREAT that reached the mount as a create, as IOR's, ROMIO's and
	// HDF5's opens of a new file do) or truncate it, and those that open
	// a file some descriptor of this mount already writes direct (the
	// other ranks of a shared file, so that one file is not in both
	// modes, which serialises the kernel's direct writes). Other
	// read-write opens of an existing file keep the page cache.
	DirectWriters DirectIO = iota
	// DirectWriteOnly: only write-only descriptors (before 2026-11-24).
	DirectWriteOnly
	// DirectReadWrite: every descriptor that can write.
	DirectReadWrite
	// DirectNone: every descriptor uses the page cache.
	DirectNone
)

var directIONames = [...]string{
	DirectWriters:   "writers",
	DirectWriteOnly: "wronly",
	DirectReadWrite: "rdwr",
	DirectNone:      "none",
}

func (d DirectIO) String() string {
	if int(d) < len(directIONames) {
		return directIONames[d]
	}
	return fmt.Sprintf("DirectIO(%d)", d)
}

// ParseDirectIO parses a DirectIO's name: writers, wronly, rdwr or none.
func ParseDirectIO(s string) (DirectIO, error) {
	for d, name := range directIONames {
		if s == name {
			return DirectIO(d), nil
		}
	}
	return 0, fmt.Errorf("direct I/O policy %q: want writers, wronly, rdwr or none", s)
}

// directFor says whether a new descriptor opened with flags bypasses the
// page cache, joining whether one of the file's descriptors open here
// already does.
//
// A read-write descriptor is direct only if the kernel lets programs map
// it MAP_SHARED (FUSE_DIRECT_IO_ALLOW_MMAP, Linux 6.6): without it the
// kernel answers such an mmap ENODEV, and databases and HDF5's core
// driver map the files they open read-write. A write-only descriptor
// cannot be mapped writable at all.
//
// The kernel passes O_CREAT only with a create (FUSE_CREATE), never with
// an open of an existing file, and O_TRUNC only with atomic_o_trunc,
// which this mount does not ask for (the kernel truncates with a setattr
// first): hence the joining rule for IOR's other ranks.
func (fsys *fileSystem) directFor(flags uint32, joining bool) bool {
	policy := fsys.opts.DirectIO
	switch flags & syscall.O_ACCMODE {
	case syscall.O_WRONLY:
		return policy != DirectNone
	case syscall.O_RDWR:
		if !fsys.directMmap.Load() {
			return false
		}
		switch policy {
		case DirectReadWrite:
			return true
		case DirectWriters:
			return flags&(syscall.O_CREAT|syscall.O_TRUNC) != 0 || joining
		}
	}
	return false
}

// openFlags is the FOPEN_* answer for a descriptor opened with flags:
// direct ones may write in parallel (handle.Write invalidates the pages
// other descriptors of the file cached for what they write, so that
// within one mount a reader sees a concurrent writer's data once it is on
// the servers); a read-only one needs no flush at close.
func openFlags(flags uint32, direct bool) uint32 {
	if direct {
		return fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES
	}
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return fuse.FOPEN_NOFLUSH
	}
	return 0
}

// accessFor is the access open(2) with flags asks of a file.
func accessFor(flags uint32) uint32 {
	var want uint32
	switch flags & syscall.O_ACCMODE {
	case syscall.O_RDONLY:
		want = meta.MayRead
	case syscall.O_WRONLY:
		want = meta.MayWrite
	default:
		want = meta.MayRead | meta.MayWrite
	}
	if flags&syscall.O_TRUNC != 0 {
		want |= meta.MayWrite
	}
	return want
}

// open opens the file for a new descriptor, with attributes read afresh
// and the caller's access checked (accessFor).
func (n *node) open(ctx context.Context, flags uint32) (*handle, uint32, syscall.Errno) {
	fsys := n.fsys
	p := n.path()
	// Before retain: madeSize answers only for a file not open here.
	kept, keptDir, isKept := fsys.keptFor(n)
	of, direct, orphan := fsys.retain(n.id, flags)
	h := &handle{fsys: fsys, n: n, of: of, direct: direct}
	if orphan {
		// Reopened through /proc/PID/fd after its name went.
		if of.file() == nil {
			h.release(ctx)
			return nil, 0, syscall.ESTALE
		}
		return h, openFlags(flags, direct), 0
	}
	if flags&syscall.O_APPEND != 0 && fsys.ttl() > 0 && !fsys.fresh(n.id) && !isKept {
		// The kernel appends at the size it holds, and a cached name
		// means no lookup gave it the current one: ESTALE makes it look
		// the name up (fresh attributes) and open again.
		h.release(ctx)
		return nil, 0, syscall.ESTALE
	}
	start, gen, notes, writes := time.Now(), fsys.leaseGen(), of.notesNow(), of.writes.Load()
	a, err := fsys.c.Access(ctx, n.id, accessFor(flags))
	if err != nil {
		h.release(ctx)
		if errors.Is(err, fs.ErrNotExist) {
			// Replaced or removed by another client since the kernel
			// looked the name up: it looks again on ESTALE.
			return nil, 0, syscall.ESTALE
		}
		return nil, 0, fsys.errno("open", p, err)
	}
	if a.Kind != meta.KindFile {
		h.release(ctx)
		return nil, 0, syscall.EISDIR
	}
	of.forget() // close-to-open: what a new open shows is read afresh
	of.mu.Lock()
	if of.f == nil {
		f, err := fsys.c.OpenAttr(p, a)
		if err != nil {
			of.mu.Unlock()
			h.release(ctx)
			return nil, 0, fsys.errno("open", p, err)
		}
		of.f = f
	} else {
		of.refreshLocked(a)
	}
	of.mu.Unlock()
	if isKept {
		// Its size is still the one kept at its last close: no one else
		// can have opened it since (madesizes.go).
		fsys.remember(of, a, kept, start, gen, notes, writes)
		fsys.madeHere(of, keptDir)
	}
	if flags&syscall.O_TRUNC != 0 {
		of.wb.wait()
		err := of.file().TruncateContext(ctx, 0)
		of.writes.Add(1)
		if err != nil {
			h.release(ctx)
			return nil, 0, fsys.errno("open", p, err)
		}
		of.dirty.Store(true)
	}
	if fsys.ttl() > 0 {
		// Close-to-open for sizes changed without a metadata change (a
		// native client's writes): a read past the size the kernel holds
		// asks for fresh attributes once they are dropped.
		fsys.lease.srv.InodeNotify(uint64(n.id), -1, 0)
	}
	return h, openFlags(flags, direct), 0
}

// adopt makes a handle for a file just created with f.
func (fsys *fileSystem) adopt(n *node, f *client.File, flags uint32) (*handle, uint32) {
	of, direct, _ := fsys.retain(n.id, flags)
	of.mu.Lock()
	if of.f == nil {
		of.f = f
	}
	of.mu.Unlock()
	return &handle{fsys: fsys, n: n, of: of, direct: direct}, openFlags(flags, direct)
}

// prepareOrphan readies a file that is about to lose its name while open
// here: a stuffed file is unstuffed now, since the metadata server cannot
// do it for an entry it no longer has.
func (fsys *fileSystem) prepareOrphan(ctx context.Context, id meta.FileID, p string) syscall.Errno {
	fsys.mu.Lock()
	of := fsys.open[id]
	fsys.mu.Unlock()
	if f := of.file(); f != nil {
		if err := f.Unstuff(ctx); err != nil {
			return fsys.errno("unlink", p, err)
		}
	}
	return 0
}

// dropData deletes the datafiles of a file whose last name went while it
// was open here (the metadata server was told to keep them), or, if it is
// still open, leaves that to its last release. A failure leaves
// orphaned datafiles behind: it is logged (naming the server) but the
// name is gone all the same, so the unlink itself succeeds.
func (fsys *fileSystem) dropData(ctx context.Context, p string, gone meta.Attr) {
	if gone.Kind != meta.KindFile || gone.Nlink > 0 { // other names keep it
		return
	}
	fsys.mu.Lock()
	if of := fsys.open[gone.ID]; of != nil && of.opens > 0 {
		of.unlinked, of.gone = true, gone
		fsys.mu.Unlock()
		return
	}
	fsys.mu.Unlock()
	if err := fsys.c.RemoveData(ctx, p, gone); err != nil {
		fsys.errno("remove data", p, err)
	}
}

// handle is one open file description.
type handle struct {
	fsys     *fileSystem
	n        *node
	of       *openFile
	direct   bool      // FOPEN_DIRECT_IO: the kernel keeps no pages for it
	ra       readAhead // a direct descriptor's small sequential reads
	wrote    atomic.Bool
	read     atomic.Bool // a read went through: atime was considered
	released atomic.Bool
}

var (
	_ gofs.FileReader   = (*handle)(nil)
	_ gofs.FileWriter   = (*handle)(nil)
	_ gofs.FileFlusher  = (*handle)(nil)
	_ gofs.FileFsyncer  = (*handle)(nil)
	_ gofs.FileReleaser = (*handle)(nil)
)

// Read reads from the I/O servers, after the writes in flight on the file;
// holes read as zeros.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	// Its only metadata request is the access time's (accessed): the
	// queued changes of other files cannot change it.
	ctx, cancel := h.n.ctxFor(ctx)
	defer cancel()
	n, done, err := 0, false, error(nil)
	if h.direct {
		n, done, err = h.ra.read(ctx, h.of, dest, off)
	}
	if !done {
		h.of.wb.wait()
		n, err = h.of.file().ReadAtContext(ctx, dest, off)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.fsys.errno("read", h.n.path(), err)
	}
	h.fsys.stats.read(n)
	if !h.read.Swap(true) {
		h.accessed(ctx)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// accessed records the first read through a descriptor as the file's
// atime when relatime asks for it (client.NeedsAtime): once after each
// change, or after a day, so reading costs no metadata write as a rule. A
// failure is logged, not returned: the data was read.
func (h *handle) accessed(ctx context.Context) {
	f := h.of.file()
	now := time.Now().UnixNano()
	if f == nil || !client.NeedsAtime(f.Attr(), now) {
		return
	}
	if _, gone := h.fsys.orphan(h.of.id); gone != nil {
		return
	}
	p := h.n.path()
	a, err := h.fsys.c.Accessed(h.n.itself(ctx), p, now)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESTALE):
	case err != nil:
		h.fsys.errno("atime", p, err)
	case a.ID == h.of.id:
		h.of.refresh(a)
	}
}

// Write sends data to the I/O servers: with write-behind (the default) it
// returns once the data is copied and queued, else once the servers have
// it.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	fsys, of := h.fsys, h.of
	f := of.file()
	if m := f.Attr().Mode; m&0o4000 != 0 || m&0o2010 == 0o2010 {
		if errno := h.killPriv(ctx); errno != 0 {
			return 0, errno
		}
	}
	limit := fsys.opts.WriteBehind
	origin := fsys.writeOrigin(ctx)
	if limit < 0 {
		ctx, cancel := h.n.ctxFor(ctx) // an unstuff changes only this file
		defer cancel()
		if _, err := f.WriteAtContext(client.WithOrigin(ctx, origin), data, off); err != nil {
			of.writes.Add(1) // part of it may have landed
			return 0, fsys.errno("write", h.n.path(), err)
		}
		if h.needsInvalidate() {
			_ = h.n.NotifyContent(off, int64(len(data)))
		}
	} else {
		held, errno := fsys.takeMemory(ctx, len(data), h.n.path())
		if errno != 0 {
			return 0, errno
		}
		sp, errno := of.wb.begin(off, int64(len(data)), limit)
		if errno != 0 {
			fsys.mem.release(held)
			return 0, errno
		}
		n := len(data)
		buf := getBuffer(n)
		copy(buf, data)
		fsys.stats.writeBehind.Add(int64(n))
		fsys.slots <- struct{}{}
		go func() {
			if hook := writeBehindSending.Load(); hook != nil {
				(*hook)()
			}
			// The request is answered by now: its context is done with.
			ctx, cancel := context.WithTimeout(client.WithOrigin(context.Background(), origin), fsys.opts.OpTimeout)
			_, err := f.WriteAtContext(ctx, buf, off)
			cancel()
			fsys.stats.writeBehind.Add(-int64(n))
			putBuffer(buf)
			fsys.mem.release(held)
			// The slot goes before the invalidation, which may wait for
			// the write-back of mmap'd pages, whose writes need slots.
			<-fsys.slots
			var errno syscall.Errno
			if err != nil {
				errno = fsys.errno("write", h.n.path(), err)
				// The size wroteHere counted may not be the servers'.
				of.forget()
			}
			// Readers waiting for this write go first (written), then the
			// pages: one of those readers may hold a page lock the
			// invalidation needs. Close and fsync wait for both.
			notify := errno == 0 && h.needsInvalidate()
			of.wb.written(sp, errno, notify)
			if notify {
				_ = h.n.NotifyContent(off, int64(n))
				of.wb.notified(sp)
			}
		}()
	}
	of.dirty.Store(true)
	fsys.wroteHere(of, off, int64(len(data)))
	h.wrote.Store(true)
	fsys.stats.write(len(data))
	return uint32(len(data)), 0
}

// killPriv clears the setuid and setgid bits of the file before a write
// by anyone but root, as the kernel's FUSE_WRITE_KILL_SUIDGID asks of a
// file system: so that no one can plant code in a program that runs with
// another's rights.
func (h *handle) killPriv(ctx context.Context) syscall.Errno {
	ctx, cancel := h.n.ctxFor(ctx)
	defer cancel()
	if c, ok := meta.CredFrom(ctx); !ok || c.Root() {
		return 0
	}
	if _, f := h.fsys.orphan(h.of.id); f != nil {
		return 0
	}
	p := h.n.path()
	a, err := h.fsys.c.SetAttr(h.n.itself(ctx), p, meta.AttrChanges{KillPriv: true})
	if err != nil {
		return h.fsys.errno("write", p, err)
	}
	h.of.refresh(a)
	return 0
}

// needsInvalidate reports whether a write through this descriptor must
// drop pages that other descriptors of the file have cached: it is direct,
// and there are such descriptors (a cached descriptor's own writes go
// through the page cache and keep it right).
func (h *handle) needsInvalidate() bool {
	return h.direct && h.fsys.cachedReaders(h.of)
}

// bufferPool holds MaxIO-sized buffers for write-behind.
var bufferPool = sync.Pool{New: func() any { b := make([]byte, MaxIO); return &b }}

func getBuffer(n int) []byte {
	if n > MaxIO/4 && n <= MaxIO {
		return (*bufferPool.Get().(*[]byte))[:n]
	}
	return make([]byte, n)
}

func putBuffer(b []byte) {
	if cap(b) == MaxIO {
		b = b[:MaxIO]
		bufferPool.Put(&b)
	}
}

// Flush runs at every close(2) of a descriptor: the data is already on
// the servers; it records the modification time (and syncs, with
// Options.SyncOnClose). Its error is close(2)'s.
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	// A close that sends the metadata server nothing waits for nothing.
	ctx, cancel := h.fsys.ctxNoWait(ctx)
	defer cancel()
	settle := h.of.wb.settle
	if h.fsys.closeWithoutWaiting(h.of) {
		settle = h.of.wb.failed
	}
	if errno := settle(); errno != 0 {
		return errno
	}
	if errno := h.recordMtime(ctx); errno != 0 {
		return errno
	}
	if h.fsys.opts.SyncOnClose && h.wrote.Load() {
		// After the mtime, so that the sync covers it, and after the
		// queue, so that it covers what was answered here.
		if err := h.fsys.flushQueue(ctx); err != nil {
			return h.fsys.errno("close", h.n.path(), err)
		}
		if err := h.of.file().SyncContext(ctx); err != nil {
			return h.fsys.errno("close", h.n.path(), err)
		}
	}
	return 0
}

// writeBehindSending, if set, runs before each write-behind write is sent
// to the I/O servers (tests hold writes there, unsent, past their file's
// close).
var writeBehindSending atomic.Pointer[func()]

// closeWithoutWaiting reports whether a close of file of need not wait
// for its writes in flight: it was made here in a directory the mount
// holds (attrhere.go), so no other client can reach it before a recall
// of the directory, which waits for them (recalled); nor can it be
// renamed or linked elsewhere before they are done (notMadeHere), and
// this mount's own reads and its last release wait for them. As with a
// local file system's write-back, a write that fails after the close is
// not reported by it: the mount logs it (release). tar x closes a file
// for every few it writes; each close waited for a round trip to the I/O
// servers.
func (fsys *fileSystem) closeWithoutWaiting(of *openFile) bool {
	if fsys.opts.WriteBehind < 0 || fsys.opts.SyncOnClose {
		return false
	}
	dir := meta.FileID(of.madeIn.Load())
	return dir != 0 && fsys.holds(dir)
}

// settleMadeIn waits until the writes in flight of the files open here
// that were made in one of dirs (nil: every file) have reached the I/O
// servers: dirs are being given up, and their closes did not wait
// (closeWithoutWaiting).
func (fsys *fileSystem) settleMadeIn(dirs map[meta.FileID]bool) {
	fsys.mu.Lock()
	var ofs []*openFile
	for _, of := range fsys.open {
		if dirs == nil || dirs[meta.FileID(of.madeIn.Load())] {
			ofs = append(ofs, of)
		}
	}
	fsys.mu.Unlock()
	for _, of := range ofs {
		of.wb.wait()
	}
}

// Fsync makes the file's data durable on every I/O server holding it,
// and its name and attributes on the metadata server: the mtime of its
// writes is recorded first, so that the sync covers it.
func (h *handle) Fsync(ctx context.Context, _ uint32) syscall.Errno {
	ctx, cancel := h.fsys.ctxNoWait(ctx) // the queue is sent below, once
	defer cancel()
	if errno := h.of.wb.settle(); errno != 0 {
		return errno
	}
	if errno := h.recordMtime(ctx); errno != 0 {
		return errno
	}
	// Everything answered here before the sync, the mtime just recorded
	// included (attrhere.go), must be covered by it.
	if err := h.fsys.flushQueue(ctx); err != nil {
		return h.fsys.errno("fsync", h.n.path(), err)
	}
	if err := h.of.file().SyncContext(ctx); err != nil {
		return h.fsys.errno("fsync", h.n.path(), err)
	}
	return 0
}

// recordMtime stores the time of the last change if data changed since
// the modification time was last set. An entry renamed or removed by
// another client meanwhile is left alone.
func (h *handle) recordMtime(ctx context.Context) syscall.Errno {
	if !h.of.dirty.Swap(false) {
		return 0
	}
	if _, f := h.fsys.orphan(h.of.id); f != nil {
		return 0
	}
	p := h.n.path()
	ch := meta.AttrChanges{Mtime: new(time.Now().UnixNano()), Now: true}
	if h.n.changeHere(ctx, h.of, ch, true) {
		return 0 // answered here (attrhere.go)
	}
	if err := h.fsys.flushQueue(ctx); err != nil {
		h.of.dirty.Store(true)
		return h.fsys.errno("close", p, err)
	}
	// As "now" (UTIME_NOW), which anyone allowed to write may set. One
	// whose permission went since open is left alone, as a vanished entry,
	// and so is one whose path here now names another file (ESTALE: moved
	// through another mount).
	_, err := h.fsys.c.SetAttr(h.n.itself(ctx), p, ch)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ESTALE) {
		return 0
	}
	if err != nil {
		h.of.dirty.Store(true)
		return h.fsys.errno("close", p, err)
	}
	return 0
}

// Release runs when the last descriptor of this open is gone.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	ctx, cancel := h.fsys.ctxNoWait(ctx) // release waits where it sends
	defer cancel()
	h.release(ctx)
	return 0
}

// release drops the handle's count; the last one of a file whose name is
// gone deletes its datafiles.
func (h *handle) release(ctx context.Context) {
	if h.released.Swap(true) {
		return
	}
	h.ra.free()
	fsys, of := h.fsys, h.of
	fsys.mu.Lock()
	of.releasing++
	fsys.mu.Unlock()
	if errno := of.wb.settle(); errno != 0 {
		fsys.log.Error("pario mount: a write failed after its descriptor's last close; the data is lost", "path", h.n.path(), "errno", errno)
	}
	fsys.mu.Lock()
	of.releasing--
	of.opens--
	if !h.direct {
		of.cached--
	}
	if of.opens > 0 {
		fsys.mu.Unlock()
		return
	}
	if fsys.open[of.id] == of {
		delete(fsys.open, of.id)
	}
	if len(fsys.open) == 0 {
		fsys.idle.idle()
	}
	unlinked, gone := of.unlinked, of.gone
	fsys.releasing++
	fsys.mu.Unlock()
	defer func() {
		fsys.mu.Lock()
		fsys.releasing--
		fsys.mu.Unlock()
	}()
	if unlinked {
		if err := fsys.c.RemoveData(ctx, h.n.path(), gone); err != nil {
			fsys.errno("remove data", h.n.path(), err)
		}
		return
	}
	fsys.keepMadeSize(of)
}
