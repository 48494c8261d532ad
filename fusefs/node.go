package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// fileSystem is what every node of one mount shares.
type fileSystem struct {
	c       *client.Client
	log     *slog.Logger
	opts    Options
	root    *node
	callers callers
	stats   stats
	lease   leaseState // lease.go
	deleg   delegState // delegated.go

	// mu guards open and the opens, unlinked and gone fields of every
	// openFile in it, and dirs (known.go) and their used fields.
	mu   sync.Mutex
	open map[meta.FileID]*openFile
	dirs map[meta.FileID]*openFile
	// releasing counts the last releases past open that have not yet
	// done what follows it (a size kept, the data removed).
	releasing int

	// slots bounds the write-behind requests in flight, mem their
	// buffers' bytes; idle hands free memory back when no file is open.
	slots chan struct{}
	mem   *memBudget
	idle  idleFree

	logMu  sync.Mutex
	logged map[string]time.Time

	// recent holds the sizes READDIRPLUS read just now (dir.go), and
	// listings the first pages of listings read just now.
	recent   recentSizes
	listings recentListings
	made     madeSizes // sizes of files made here, after their last close
	// dirNodes holds the directories of the kernel's tree by ID, those
	// children were added to (newChild), so that a name removed
	// elsewhere leaves the tree too (dropAlias).
	dirNodes sync.Map // meta.FileID -> *gofs.Inode
	// dirAttrs holds the attributes last answered for directories
	// (dirattrs.go).
	dirAttrs dirAttrs

	// rootIsRoot says the metadata server gave root's last new entry to
	// root: it does not squash root (noopChown).
	rootIsRoot atomic.Bool

	// directMmap says the kernel maps files open with FOPEN_DIRECT_IO
	// MAP_SHARED (FUSE_DIRECT_IO_ALLOW_MMAP was granted): read-write
	// descriptors may then be direct (directFor).
	directMmap atomic.Bool
}

// ctx gives a request's server calls their deadline and the caller's
// credentials (withCaller). The kernel's interrupt (any signal to the
// caller, even the Go runtime's preemption signal) does not cancel them: a
// namespace change cut off halfway could have happened without the caller
// knowing.
//
// Before the request goes on, the unlinks and attribute changes this
// mount answered itself and has not sent yet are applied (delegated.go),
// so that the metadata server sees this mount's requests in the order
// they were answered. If that fails, so does the request: its context
// has ended.
func (fsys *fileSystem) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return fsys.ctxAfter(ctx, nil)
}

// ctxFor is ctx for a request that reads only n: it waits for the
// queued operations only up to the last that changes n (removes it or a
// name in it, or changes its attributes), since the others cannot
// change the answer, and for the mode changes on n's path (ctxVia).
func (n *node) ctxFor(ctx context.Context) (context.Context, context.CancelFunc) {
	return n.ctxVia(ctx, func(q queuedOp) bool { return q.touches(n.id) })
}

// ctxIn is ctx for a request that reads an entry of directory n (a
// lookup): it waits for the queued operations in n (the entry's own
// attribute changes among them: a file answered here has its one name
// there) and for every queued unlink and rmdir (one may be in the entry,
// a directory whose link count and times it changes), not for the
// attribute changes of files elsewhere.
func (n *node) ctxIn(ctx context.Context) (context.Context, context.CancelFunc) {
	return n.ctxVia(ctx, func(q queuedOp) bool { return q.op.Dir == n.id || q.removes() })
}

// ctxNew is ctx for a request that makes a new name in directory n
// (create, mkdir, mknod): it waits for the queued unlinks and rmdirs, one
// of which may free the name, and for n's own attribute changes, whose
// times the new name must move past, but not for the attribute changes
// of other files, which change no name and concern files that only this
// mount can reach until they are applied (delegated.go): tar x's next
// create does not wait for the mode and times of the file before it.
func (n *node) ctxNew(ctx context.Context) (context.Context, context.CancelFunc) {
	return n.ctxVia(ctx, func(q queuedOp) bool { return q.removes() || q.op.SetAttr != nil && q.op.Self == n.id })
}

// ctxVia is ctx for a request by a path through n (n's own, or a name in
// directory n) that depends on the queued operations matters picks (nil:
// none), and on the mode changes on its path (viaPath).
func (n *node) ctxVia(ctx context.Context, matters func(queuedOp) bool) (context.Context, context.CancelFunc) {
	if matters = n.viaPath(matters); matters == nil {
		return n.fsys.ctxNoWait(ctx)
	}
	return n.fsys.ctxAfter(ctx, matters)
}

// viaPath adds to matters (nil: none) the queued mode changes of n and
// of the directories above it, answered here (attrhere.go): the metadata
// server checks the caller's search permission at every directory a
// path walks, and the last one's write permission and setgid bit, and
// must find the modes the kernel checked against.
func (n *node) viaPath(matters func(queuedOp) bool) func(queuedOp) bool {
	if n.fsys.deleg.dirModes.Load() == 0 {
		return matters
	}
	path := n.pathIDs()
	return func(q queuedOp) bool {
		return q.dirMode && slices.Contains(path, q.op.Self) || matters != nil && matters(q)
	}
}

// pathIDs lists n and the directories above it, up to the root.
func (n *node) pathIDs() []meta.FileID {
	var ids []meta.FileID
	for in := n.EmbeddedInode(); in != nil; _, in = in.Parent() {
		ids = append(ids, meta.FileID(in.StableAttr().Ino))
	}
	return ids
}

// ctxAfter is ctxNoWait once the queued operations up to the last that
// matters (nil: all) are applied; if that fails, its context has ended.
func (fsys *fileSystem) ctxAfter(ctx context.Context, matters func(queuedOp) bool) (context.Context, context.CancelFunc) {
	c, cancel := fsys.ctxNoWait(ctx)
	if err := fsys.flushThrough(c, matters); err != nil {
		cancel()
	}
	return c, cancel
}

// ctxNoWait is ctx without the wait for the queued operations, for a
// request that accounts for them itself (a listing, a lookup of a name
// the mount knows is absent, an attribute change answered here).
func (fsys *fileSystem) ctxNoWait(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(fsys.withCaller(ctx)), fsys.opts.OpTimeout)
}

// node is a file or directory of the mount. Its identity is the pario
// FileID, which renames keep; state of open files lives in
// fileSystem.open, keyed by the same ID.
type node struct {
	gofs.Inode
	fsys *fileSystem
	id   meta.FileID
	dir  bool
}

var (
	_ gofs.NodeLookuper      = (*node)(nil)
	_ gofs.NodeGetattrer     = (*node)(nil)
	_ gofs.NodeSetattrer     = (*node)(nil)
	_ gofs.NodeMkdirer       = (*node)(nil)
	_ gofs.NodeMknoder       = (*node)(nil)
	_ gofs.NodeCreater       = (*node)(nil)
	_ gofs.NodeOpener        = (*node)(nil)
	_ gofs.NodeUnlinker      = (*node)(nil)
	_ gofs.NodeRmdirer       = (*node)(nil)
	_ gofs.NodeRenamer       = (*node)(nil)
	_ gofs.NodeLinker        = (*node)(nil)
	_ gofs.NodeSymlinker     = (*node)(nil)
	_ gofs.NodeReadlinker    = (*node)(nil)
	_ gofs.NodeStatfser      = (*node)(nil)
	_ gofs.NodeFsyncer       = (*node)(nil)
	_ gofs.NodeGetxattrer    = (*node)(nil)
	_ gofs.NodeSetxattrer    = (*node)(nil)
	_ gofs.NodeListxattrer   = (*node)(nil)
	_ gofs.NodeRemovexattrer = (*node)(nil)
	_ gofs.NodeAccesser      = (*node)(nil)
)

// path is the node's path in the store, as this mount last saw it.
func (n *node) path() string { return "/" + n.Path(n.Root()) }

func (n *node) child(name string) string { return path.Join(n.path(), name) }

// The path of a request is this mount's, which can be out of date: another
// mount may have moved n (or a directory above it), and something else
// may have taken the old path since. Each request by path therefore says
// which file it means, and the metadata server refuses it with ESTALE
// rather than act on another file (meta.Expect).

// inDir is ctx for a request by a path whose last name is in directory n.
func (n *node) inDir(ctx context.Context) context.Context {
	return meta.WithExpect(ctx, meta.Expect{Dir: n.id})
}

// itself is ctx for a request on n by its path.
func (n *node) itself(ctx context.Context) context.Context {
	return meta.WithExpect(ctx, meta.Expect{Self: n.id})
}

// newChild returns the inode for an entry; the kernel tree reuses an
// existing one with the same FileID.
func (n *node) newChild(ctx context.Context, a meta.Attr) *gofs.Inode {
	// n, which a request came to, is the kernel's; the child returned may
	// not be (go-fuse keeps the inode it knows for the ID).
	if in := n.EmbeddedInode(); n.dir {
		if v, ok := n.fsys.dirNodes.Load(n.id); !ok || v != in {
			n.fsys.dirNodes.Store(n.id, in)
		}
	}
	return n.NewInode(ctx, &node{fsys: n.fsys, id: a.ID, dir: a.Kind == meta.KindDir}, gofs.StableAttr{Mode: typeBits(a.Kind), Ino: uint64(a.ID), Gen: 1})
}

// OnForget drops a directory the kernel forgot from dirNodes.
func (n *node) OnForget() {
	if n.dir {
		n.fsys.dirNodes.CompareAndDelete(n.id, n.EmbeddedInode())
	}
}

// dropAlias takes name out of directory parent in the kernel's tree
// where it still names file id there, after another client removed or
// renamed it. The kernel drops the name itself (EntryNotify), but keeps
// the inode while another name of it is in use, and requests about the
// inode go by a path of the tree's (node.path): a file with several
// links would keep being named by the one gone, and its truncate, chmod
// or utimes fail with ENOENT. A file's only name stays, so that its path
// stays what it was (its requests fail as before, ESTALE or ENOENT,
// instead of naming no directory at all).
func (fsys *fileSystem) dropAlias(parent meta.FileID, name string, id meta.FileID) {
	var dir *gofs.Inode
	if v, ok := fsys.dirNodes.Load(parent); ok {
		dir = v.(*gofs.Inode)
	}
	if dir == nil {
		return
	}
	ch := dir.GetChild(name)
	if ch == nil || ch.IsDir() || ch.StableAttr().Ino != uint64(id) {
		return
	}
	dir.RmChild(name)
	if _, other := ch.Parent(); other == nil {
		dir.AddChild(name, ch, false)
	}
}

// The file type bits (S_IFMT) of each kind, and back.
var kindTypes = map[meta.Kind]uint32{
	meta.KindDir:      syscall.S_IFDIR,
	meta.KindFile:     syscall.S_IFREG,
	meta.KindFIFO:     syscall.S_IFIFO,
	meta.KindSocket:   syscall.S_IFSOCK,
	meta.KindCharDev:  syscall.S_IFCHR,
	meta.KindBlockDev: syscall.S_IFBLK,
	meta.KindSymlink:  syscall.S_IFLNK,
}

func typeBits(k meta.Kind) uint32 {
	if t, ok := kindTypes[k]; ok {
		return t
	}
	return syscall.S_IFREG
}

func kindOf(mode uint32) (meta.Kind, bool) {
	for k, t := range kindTypes {
		if mode&syscall.S_IFMT == t {
			return k, true
		}
	}
	return 0, false
}

// entry fills a reply that names an entry: its attributes, and how long
// the kernel may keep them and the name. With a cache lease, until the
// lease ends (changes elsewhere drop them: lease.go). Without one,
// directories keep the name for Options.EntryTimeout, files for no time
// at all, so that every open and stat of a file looks its name up afresh
// (close-to-open: the kernel then also has the file's current size before
// an O_APPEND write).
func (fsys *fileSystem) entry(out *fuse.EntryOut, a meta.Attr, u client.Usage) {
	fsys.fillAttr(&out.Attr, a, u)
	if ttl := fsys.kernelTTL(); ttl > 0 {
		out.SetEntryTimeout(ttl)
		out.SetAttrTimeout(ttl)
		return
	}
	if a.Kind == meta.KindDir {
		out.SetEntryTimeout(fsys.opts.EntryTimeout)
	}
}

// attrOut fills a reply with attributes, kept by the kernel until the
// lease ends (or for Options.AttrTimeout without one). A file open here
// whose name is gone has no link left: POSIX's fstat says 0.
func (fsys *fileSystem) attrOut(out *fuse.AttrOut, a meta.Attr, u client.Usage) {
	fsys.fillAttr(&out.Attr, a, u)
	if _, f := fsys.orphan(a.ID); f != nil {
		out.Nlink = 0
	}
	if ttl := fsys.kernelTTL(); ttl > 0 {
		out.SetTimeout(ttl)
	}
}

// fillAttr turns pario's attributes into the kernel's. Owners are the
// stored ones; blocks are what the datafiles hold on the I/O servers'
// disks, so holes take none.
func (fsys *fileSystem) fillAttr(out *fuse.Attr, a meta.Attr, u client.Usage) {
	out.Ino = uint64(a.ID)
	out.Mode = a.Mode&0o7777 | typeBits(a.Kind)
	out.Nlink = a.Nlink // 0 for an open file whose last name is gone
	if a.Kind == meta.KindDir && a.Nlink == 0 {
		out.Nlink = 1 // a directory from before link counts: unknown, which 1 tells find(1)
	}
	out.Rdev = uint32(a.Rdev)
	switch a.Kind {
	case meta.KindFile:
		out.Size = uint64(u.Size)
		out.Blocks = uint64(u.Allocated+511) / 512
	case meta.KindSymlink:
		out.Size = uint64(len(a.Target))
	}
	at, mt, ct := time.Unix(0, a.Atime), time.Unix(0, a.Mtime), time.Unix(0, a.Ctime)
	out.SetTimes(&at, &mt, &ct)
	out.Uid, out.Gid = a.Uid, a.Gid
	out.Blksize = MaxIO
}

// stat returns the current attributes and size of the entry with this
// ID. An open file whose name is gone answers from what its last close
// will remove; any other vanished ID is ESTALE, on which the kernel looks
// the name up again.
func (fsys *fileSystem) stat(ctx context.Context, id meta.FileID, p string) (meta.Attr, client.Usage, syscall.Errno) {
	of := fsys.openFile(id)
	if k, ok := fsys.current(of); ok {
		return k.a, k.u, 0
	}
	var notes uint64
	if of != nil {
		notes = of.notesNow()
	}
	start, gen := time.Now(), fsys.leaseGen()
	a, err := fsys.c.GetByID(ctx, id)
	if errors.Is(err, fs.ErrNotExist) {
		if gone, f := fsys.orphan(id); f != nil {
			fsys.settle(id)
			u, err := f.Usage(ctx)
			if err != nil {
				return meta.Attr{}, client.Usage{}, fsys.errno("getattr", p, err)
			}
			return gone, u, 0
		}
		return meta.Attr{}, client.Usage{}, syscall.ESTALE
	}
	if err != nil {
		return meta.Attr{}, client.Usage{}, fsys.errno("getattr", p, err)
	}
	if a.Kind != meta.KindFile {
		return a, client.Usage{}, 0
	}
	u, errno := fsys.usage(ctx, of, a, p, start, gen, notes)
	return a, u, errno
}

// usage returns the size and allocation of a file whose attributes a
// were read under lease gen, after the writes in flight through this
// mount; for a file open here (of) it remembers both unless a change came
// after notes was taken (known.go).
func (fsys *fileSystem) usage(ctx context.Context, of *openFile, a meta.Attr, p string, start time.Time, gen, notes uint64) (client.Usage, syscall.Errno) {
	var writes uint64
	if of != nil {
		of.refresh(a)
		writes = of.writes.Load()
		of.wb.wait()
	}
	u, err := fsys.c.UsageOf(ctx, a)
	if err != nil {
		return client.Usage{}, fsys.errno("getattr", p, err)
	}
	fsys.remember(of, a, u, start, gen, notes, writes)
	return u, 0
}

// Lookup finds a name in the store.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.fsys.knowsAbsent(n.id, name) {
		return nil, syscall.ENOENT // queued unlinks included (names.go)
	}
	if a, ok := n.heldChildDir(name); ok {
		// The kernel drops a directory's entry at its chmod: tar's next
		// walk through it need not wait for the queue (dirtimes.go).
		n.fsys.entry(out, a, client.Usage{})
		return n.newChild(ctx, a), 0
	}
	ctx, cancel := n.ctxIn(ctx)
	defer cancel()
	p := n.child(name)
	asked := time.Now()
	a, err := n.fsys.c.Lookup(n.inDir(ctx), p)
	if err != nil {
		return nil, n.fsys.errno("lookup", p, err)
	}
	var u client.Usage
	if a.Kind == meta.KindFile {
		n.fsys.settle(a.ID)
		var ok bool
		if u, ok = n.fsys.madeSize(a.ID, n.id); !ok {
			if u, err = n.fsys.c.UsageOf(ctx, a); err != nil {
				return nil, n.fsys.errno("lookup", p, err)
			}
		}
	}
	start := time.Now()
	n.fsys.entry(out, a, u)
	n.fsys.lookedUp(a.ID, start)
	n.fsys.sawDirAttrs(a, u, asked)
	return n.newChild(ctx, a), 0
}

// Getattr reads attributes from the servers (the kernel keeps them: see
// entry). An inode whose old name the kernel may still hold (renamed or
// removed elsewhere, lease.go) answers ESTALE unless asked through an
// open file: the kernel then looks the name up again.
func (n *node) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if fh == nil && n.fsys.guarded(n.id) {
		return syscall.ESTALE
	}
	if k, ok := n.fsys.current(n.fsys.openFile(n.id)); ok {
		// Before any wait: what the mount knows includes the attribute
		// changes it answered and has not sent yet.
		n.fsys.attrOut(out, k.a, k.u)
		return 0
	}
	if n.dir {
		if a, _, ok := n.fsys.heldDirAttrs(n.id); ok {
			n.fsys.stats.dirAttrsAgain.Add(1)
			n.fsys.attrOut(out, a, client.Usage{})
			return 0
		}
		if a, u, ok := n.fsys.knownDirAttrs(n.id); ok {
			n.fsys.stats.dirAttrsAgain.Add(1)
			n.fsys.attrOut(out, a, u)
			return 0
		}
	}
	ctx, cancel := n.ctxFor(ctx)
	defer cancel()
	asked := time.Now()
	a, u, errno := n.fsys.stat(ctx, n.id, n.path())
	if errno != 0 {
		return errno
	}
	n.fsys.attrOut(out, a, u)
	if n.dir {
		n.fsys.sawDirAttrs(a, u, asked)
	}
	return 0
}

// Access answers access(2) (and the kernel's checks before exec and
// chdir): the metadata server checks the caller against the entry's owner,
// group and mode. With default_permissions (AllowOther) the kernel checks
// by itself and does not ask.
func (n *node) Access(ctx context.Context, mask uint32) syscall.Errno {
	ctx, cancel := n.ctxFor(ctx) // by ID: this inode alone
	defer cancel()
	_, err := n.fsys.c.Access(ctx, n.id, mask&(meta.MayRead|meta.MayWrite|meta.MayExec))
	if errors.Is(err, fs.ErrNotExist) {
		return syscall.ESTALE
	}
	return n.fsys.errno("access", n.path(), err)
}

// Setattr changes size (truncate), mode, owner, atime and mtime, as the
// caller: the metadata server checks who may (chmod by the owner or root,
// chown by root, times by the owner, or to now by a writer).
func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := n.fsys.ctxNoWait(ctx)
	defer cancel()
	p := n.path()
	of := n.fsys.openFile(n.id)
	_, orphan := n.fsys.orphan(n.id)
	mtime, setMtime := in.GetMTime()
	atime, setAtime := in.GetATime()
	// UTIME_NOW for every time given: a writer may do that much.
	now := (!setMtime || in.Valid&fuse.FATTR_MTIME_NOW != 0) && (!setAtime || in.Valid&fuse.FATTR_ATIME_NOW != 0)
	size, sized := in.GetSize()
	if !sized && orphan == nil {
		if errno, done := n.setattrLocally(ctx, of, p, attrChanges(in, mtime, setMtime, atime, setAtime, now), out); done {
			return errno
		}
	}
	if n.dir {
		n.fsys.forgetDirAttrs(n.id)
	}
	// Only the queued changes of this inode (its entries', for a
	// directory) and the modes on its path can change what the server
	// answers: tar's chmod and utimes of each directory it made do not
	// wait for the attribute changes of the files it made there.
	if err := n.fsys.flushThrough(ctx, n.viaPath(func(q queuedOp) bool { return q.touches(n.id) })); err != nil {
		return n.fsys.errno("setattr", p, err)
	}
	if sized {
		if n.dir {
			return syscall.EISDIR
		}
		n.fsys.dropMadeSize(n.id)
		if _, isHandle := fh.(*handle); !isHandle && orphan == nil {
			// truncate(2) by name: the caller must be allowed to write the file
			// (ftruncate's descriptor was checked at open).
			if _, err := n.fsys.c.Access(ctx, n.id, meta.MayWrite); err != nil {
				return n.fsys.errno("truncate", p, err)
			}
		}
		f, errno := n.fsys.fileFor(ctx, n.id, p, fh)
		if errno != 0 {
			return errno
		}
		n.fsys.settle(n.id)
		err := f.TruncateContext(ctx, int64(size))
		if of != nil {
			of.writes.Add(1)
		}
		if err != nil {
			return n.fsys.errno("truncate", p, err)
		}
		if !setMtime {
			mtime, setMtime = time.Now(), true
		}
	}
	// Mode, owner and times change in one request, so the server checks
	// and applies them together (a chown's clearing of setuid included).
	ch := attrChanges(in, mtime, setMtime, atime, setAtime, now)
	// A truncate by all but root clears setuid and setgid: with
	// HANDLE_KILLPRIV_V2 (mount.go) the kernel leaves that to the mount.
	ch.KillPriv = sized && in.Valid&fuse.FATTR_KILL_SUIDGID != 0
	if setMtime && of != nil {
		// An explicit time wins over the one close would record.
		of.dirty.Store(false)
	}
	if orphan == nil && (ch.Mode != nil || ch.Uid != nil || ch.Gid != nil || ch.Mtime != nil || ch.Atime != nil || ch.KillPriv) {
		if n.dir && of == nil {
			of = n.fsys.dirState(n.id)
		}
		start, gen := time.Now(), n.fsys.leaseGen()
		a, current, notes, err := n.fsys.setAttr(n.itself(ctx), of, p, ch)
		if n.dir {
			// The owner and mode that unlinks answered here are checked
			// against (delegated.go).
			n.fsys.delegatedAttr(n.id, a, err)
		}
		if err != nil {
			return n.fsys.errno("setattr", p, err)
		}
		if a.ID == n.id {
			// The answer holds the attributes as changed: no second
			// request for them, nor for the size when it is known.
			if k, ok := n.fsys.current(of); ok && current {
				n.fsys.attrOut(out, k.a, k.u)
				return 0
			}
			if !current {
				of = nil // nothing to remember
			}
			if a.Kind != meta.KindFile {
				n.fsys.remember(of, a, client.Usage{}, start, gen, notes, 0)
				n.fsys.attrOut(out, a, client.Usage{})
				return 0
			}
			u, errno := n.fsys.usage(ctx, of, a, p, start, gen, notes)
			if errno != 0 {
				return errno
			}
			n.fsys.attrOut(out, a, u)
			return 0
		}
		// The path names another entry now (renamed here meanwhile):
		// answer for this one.
	}
	a, u, errno := n.fsys.stat(ctx, n.id, p)
	if errno != 0 {
		return errno
	}
	n.fsys.attrOut(out, a, u)
	return 0
}

// attrChanges is the mode, owner and time changes a setattr asks for
// (its size aside).
func attrChanges(in *fuse.SetAttrIn, mtime time.Time, setMtime bool, atime time.Time, setAtime, now bool) meta.AttrChanges {
	var ch meta.AttrChanges
	if mode, ok := in.GetMode(); ok {
		ch.Mode = new(mode)
	}
	if uid, ok := in.GetUID(); ok {
		ch.Uid = new(uid)
	}
	if gid, ok := in.GetGID(); ok {
		ch.Gid = new(gid)
	}
	if setMtime {
		ch.Mtime = new(mtime.UnixNano())
	}
	if setAtime {
		ch.Atime = new(atime.UnixNano())
	}
	ch.Now = now
	return ch
}

// fileFor returns a File for a truncate: the open handle's if there is
// one, else one made from fresh attributes.
func (fsys *fileSystem) fileFor(ctx context.Context, id meta.FileID, p string, fh gofs.FileHandle) (*client.File, syscall.Errno) {
	if h, ok := fh.(*handle); ok {
		return h.of.file(), 0
	}
	if of := fsys.openFile(id); of != nil {
		if f := of.file(); f != nil {
			return f, 0
		}
	}
	a, err := fsys.c.GetByID(ctx, id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, syscall.ESTALE
	}
	if err != nil {
		return nil, fsys.errno("open", p, err)
	}
	f, err := fsys.c.OpenAttr(p, a)
	if err != nil {
		return nil, fsys.errno("open", p, err)
	}
	return f, 0
}

var _ gofs.NodeOpendirHandler = (*node)(nil)

// OpendirHandle opens a listing of the directory, read a page at a time
// (dirStream).
func (n *node) OpendirHandle(ctx context.Context, _ uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	d, errno := n.fsys.openDirStream(ctx, n)
	if errno != 0 {
		return nil, 0, errno
	}
	return d, 0, 0
}

// Mkdir creates a directory.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx, cancel := n.ctxNew(ctx)
	defer cancel()
	p := n.child(name)
	start, gen := time.Now(), n.fsys.leaseGen()
	a, asked, err := n.fsys.mkdir(n.inDir(n.fsys.kernelsOwn(ctx)), n.id, p, mode&0o7777, gen)
	if err != nil {
		n.fsys.forgetNames(n.id)
		return nil, n.fsys.errno("mkdir", p, err)
	}
	n.fsys.addedName(n.id, name, true)
	n.fsys.madeDir(a.ID, start, gen)
	n.fsys.ownChanged(n.id)
	n.fsys.learnSquash(ctx, a)
	if !asked {
		n.fsys.delegate(ctx, p, a, gen)
	}
	n.fsys.entry(out, a, client.Usage{})
	return n.newChild(ctx, a), 0
}

// Mknod creates a regular file, or a FIFO, socket or device node: those
// are metadata only (the kernel serves their opens itself), with the
// device number the kernel gives (its 32-bit encoding).
func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx, cancel := n.ctxNew(ctx)
	defer cancel()
	p := n.child(name)
	kind, ok := kindOf(mode)
	switch {
	case mode&syscall.S_IFMT == 0 || kind == meta.KindFile:
	case !ok || kind == meta.KindDir:
		return nil, syscall.EINVAL
	default:
		a, err := n.fsys.c.Mknod(n.inDir(n.fsys.kernelsOwn(ctx)), p, kind, mode&0o7777, uint64(rdev))
		if err != nil {
			n.fsys.forgetNames(n.id)
			return nil, n.fsys.errno("mknod", p, err)
		}
		n.fsys.addedName(n.id, name, false)
		n.fsys.ownChanged(n.id)
		n.fsys.entry(out, a, client.Usage{})
		return n.newChild(ctx, a), 0
	}
	f, err := n.fsys.c.Create(n.inDir(n.fsys.kernelsOwn(ctx)), p, client.CreateOptions{Mode: mode & 0o7777, Exclusive: true})
	if err != nil {
		n.fsys.forgetNames(n.id)
		return nil, n.fsys.errno("mknod", p, err)
	}
	n.fsys.addedName(n.id, name, false)
	n.fsys.ownChanged(n.id)
	a := f.Attr()
	n.fsys.entry(out, a, client.Usage{})
	return n.newChild(ctx, a), 0
}

// Create creates and opens a file. Like open(2) with O_CREAT it opens an
// existing file instead (another client may have created it since the
// kernel last looked), unless O_EXCL.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if child, h, fuseFlags, errno, done := n.createHere(n.fsys.withCaller(ctx), name, flags, mode, out); done {
		return child, h, fuseFlags, errno
	}
	ctx, cancel := n.ctxNew(ctx)
	defer cancel()
	p := n.child(name)
	start, gen := time.Now(), n.fsys.leaseGen()
	f, err := n.fsys.c.Create(n.inDir(n.fsys.kernelsOwn(ctx)), p, client.CreateOptions{Mode: mode & 0o7777, Exclusive: true})
	if err != nil {
		// The name exists, or the outcome is unknown.
		n.fsys.forgetNames(n.id)
	}
	if errors.Is(err, fs.ErrExist) && flags&syscall.O_EXCL == 0 {
		// The file's attributes: after every change queued here
		// (ctxNew waited for the unlinks only).
		if err := n.fsys.flushQueue(ctx); err != nil {
			return nil, nil, 0, n.fsys.errno("create", p, err)
		}
		a, err := n.fsys.c.Lookup(n.inDir(ctx), p)
		if err != nil {
			return nil, nil, 0, n.fsys.errno("create", p, err)
		}
		if a.Kind == meta.KindDir {
			return nil, nil, 0, syscall.EISDIR
		}
		child := n.newChild(ctx, a)
		h, fuseFlags, errno := child.Operations().(*node).open(ctx, flags)
		if errno != 0 {
			return nil, nil, 0, errno
		}
		h.of.wb.wait()
		u, err := h.of.file().Usage(ctx)
		if err != nil {
			h.release(ctx)
			return nil, nil, 0, n.fsys.errno("create", p, err)
		}
		n.fsys.entry(out, a, u)
		return child, h, fuseFlags, 0
	}
	if err != nil {
		return nil, nil, 0, n.fsys.errno("create", p, err)
	}
	n.fsys.addedName(n.id, name, false)
	n.fsys.ownChanged(n.id)
	a := f.Attr()
	n.fsys.learnSquash(ctx, a)
	child := n.newChild(ctx, a)
	n.fsys.lookedUp(a.ID, start)
	h, fuseFlags := n.fsys.adopt(child.Operations().(*node), f, flags)
	n.fsys.created(h.of, a, start, gen)
	n.fsys.madeHere(h.of, n.id)
	n.fsys.entry(out, a, client.Usage{})
	return child, h, fuseFlags, 0
}

// Open opens a file: its attributes are read afresh (close-to-open) and
// the kernel drops its cached pages of it (no FOPEN_KEEP_CACHE).
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	// Its metadata request (the access check, by ID) is about this file
	// alone: the queued changes of others cannot change its answer.
	ctx, cancel := n.ctxFor(ctx)
	defer cancel()
	h, fuseFlags, errno := n.open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return h, fuseFlags, 0
}

// Unlink removes a file's name. If the file is open here, its data stays
// until the last close.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if done, errno := n.unlinkHere(n.fsys.withCaller(ctx), name); done {
		return errno
	}
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	p := n.child(name)
	id, ok := n.cachedChild(name, false)
	if !ok || n.fsys.openFile(id) != nil {
		a, err := n.fsys.c.Lookup(n.inDir(ctx), p)
		if err != nil {
			return n.fsys.errno("unlink", p, err)
		}
		if a.Kind == meta.KindDir {
			return syscall.EISDIR
		}
		if errno := n.fsys.prepareOrphan(ctx, a.ID, p); errno != 0 {
			return errno
		}
		id = a.ID
	}
	// A file open here keeps its datafiles until its last release; the
	// metadata server removes any other's once the name is gone.
	keep := n.fsys.openFile(id) != nil
	defer n.fsys.mutating(n.id, name)()
	gone, err := n.fsys.c.RemoveEntry(n.inDir(n.fsys.kernelsOwn(ctx)), p, keep)
	if err != nil {
		n.fsys.forgetNames(n.id)
		return n.fsys.errno("unlink", p, err)
	}
	n.fsys.removedName(n.id, name)
	n.fsys.ownChanged(n.id, id)
	if keep {
		n.fsys.dropData(ctx, p, gone)
	}
	return 0
}

// Rmdir removes an empty directory.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if done, errno := n.rmdirHere(n.fsys.withCaller(ctx), name); done {
		return errno
	}
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	p := n.child(name)
	id, ok := n.cachedChild(name, true)
	if !ok {
		a, err := n.fsys.c.Lookup(n.inDir(ctx), p)
		if err != nil {
			return n.fsys.errno("rmdir", p, err)
		}
		if a.Kind != meta.KindDir {
			return syscall.ENOTDIR
		}
		id = a.ID
	}
	defer n.fsys.mutating(n.id, name)()
	if _, err := n.fsys.c.RemoveEntry(n.inDir(n.fsys.kernelsOwn(ctx)), p, false); err != nil {
		n.fsys.forgetNames(n.id)
		return n.fsys.errno("rmdir", p, err)
	}
	n.fsys.removedName(n.id, name)
	n.fsys.forgetNames(id)
	n.fsys.undelegate(id)
	n.fsys.ownChanged(n.id, id)
	return 0
}

// cachedChild returns the ID of the entry name, of the kind asked, when
// the kernel holds it under the lease: changes elsewhere would have
// dropped it (lease.go), so an unlink or rmdir needs no lookup first.
func (n *node) cachedChild(name string, dir bool) (meta.FileID, bool) {
	if n.fsys.ttl() <= 0 {
		return 0, false
	}
	c := n.GetChild(name)
	if c == nil {
		return 0, false
	}
	cn, ok := c.Operations().(*node)
	if !ok || cn.dir != dir || n.fsys.guarded(cn.id) {
		return 0, false
	}
	return cn.id, true
}

// Rename moves an entry, replacing a file or empty directory at the
// target; a replaced file open here keeps its data until its last close.
// RENAME_NOREPLACE is honoured; RENAME_EXCHANGE is not supported (EINVAL).
func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	// Before the wait for the queue: an attribute change answered here
	// after it would reach the metadata server after the rename, naming
	// the old entry.
	if c := n.GetChild(name); c != nil {
		if cn, ok := c.Operations().(*node); ok {
			n.fsys.notMadeHere(cn.id)
		}
	}
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	from, to := n.child(name), np.child(newName)
	if flags&gofs.RENAME_EXCHANGE != 0 {
		return syscall.EINVAL
	}
	if flags&unix.RENAME_NOREPLACE != 0 {
		if _, err := n.fsys.c.Lookup(np.inDir(ctx), to); err == nil {
			return syscall.EEXIST
		} else if !errors.Is(err, fs.ErrNotExist) {
			return n.fsys.errno("rename", to, err)
		}
	}
	// A target open here that is stuffed must be unstuffed while it still
	// has an entry (only then can the metadata server do it), and keeps
	// its datafiles until its last release.
	keep := false
	var moved, replacedID meta.FileID // as far as the kernel knows them
	if c := n.GetChild(name); c != nil {
		if cn, ok := c.Operations().(*node); ok {
			moved = cn.id
		}
	}
	if target := np.GetChild(newName); target != nil {
		if tn, ok := target.Operations().(*node); ok {
			replacedID = tn.id
		}
		if tn, ok := target.Operations().(*node); ok && !tn.dir {
			if errno := n.fsys.prepareOrphan(ctx, tn.id, to); errno != 0 {
				return errno
			}
			keep = n.fsys.openFile(tn.id) != nil
		}
	}
	defer n.fsys.mutating(n.id, name)()
	defer n.fsys.mutating(np.id, newName)()
	// Renames are rare where lookups of absent names are many (mdtest,
	// tar x): both directories are simply forgotten, whatever the outcome.
	defer n.fsys.forgetNames(n.id, np.id)
	replaced, err := n.fsys.c.RenameEntry(meta.WithExpect(n.fsys.kernelsOwn(ctx), meta.Expect{Dir: n.id, To: np.id}), from, to, keep)
	if err != nil {
		return n.fsys.errno("rename", from, err)
	}
	if replaced != nil {
		replacedID = replaced.ID
	}
	// An empty directory replaced: nothing is answered here for it again
	// (a file's ID is in no delegation).
	n.fsys.undelegate(replacedID)
	n.fsys.ownChanged(n.id, np.id, moved, replacedID)
	if replaced != nil && keep {
		n.fsys.dropData(ctx, to, *replaced)
	}
	return 0
}

// Fsync syncs a file's data (and the namespace) through its descriptor;
// a directory's, the namespace: the metadata server answers a change
// before its fdatasync (server/meta/durable.go), and fsync of a directory
// is how a program asks for the names in it to be durable.
func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := f.(*handle); ok {
		return h.Fsync(ctx, flags)
	}
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	if err := n.fsys.c.SyncNamespace(ctx); err != nil {
		return n.fsys.errno("fsync", n.path(), err)
	}
	return 0
}

// Statfs sums the capacity of the file systems under the I/O servers,
// each once however many servers share it (client.SumSpace); a server
// that does not answer is left out and logged (EIO only if none answers).
// File counts come from the metadata server.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	const bsize = 4096
	stats := n.fsys.c.Statfs(ctx)
	var lastErr error
	for _, s := range stats {
		if s.Err != nil {
			n.fsys.errno("statfs", "/", s.Err)
			lastErr = s.Err
		}
	}
	sp := client.SumSpace(stats)
	if sp.Answered == 0 {
		return n.fsys.errno("statfs", "/", lastErr)
	}
	files, dirs, err := n.fsys.c.MetaStats(ctx)
	if err != nil {
		return n.fsys.errno("statfs", "/", err)
	}
	out.Bsize, out.Frsize = bsize, bsize
	out.Blocks, out.Bfree, out.Bavail = sp.Total/bsize, sp.Free/bsize, sp.Avail/bsize
	out.Files = uint64(files + dirs)
	out.Ffree = 1 << 40
	out.NameLen = meta.MaxNameLen
	return 0
}
