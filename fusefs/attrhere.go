package fusefs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// Attribute changes answered by the mount (docs/mount.md).
//
// tar x sets the times and the mode of every file it makes (futimens and
// fchmod, before close), and a program that writes a file records its
// modification time at close: each was a metadata commit and a round trip.
// For a file this mount made in a directory it holds (delegated.go), no
// one else can reach the file until the delegation is recalled, and a
// recall applies the queue first. So such a change is answered here from
// the attributes the mount knows (known.go), and queued with the unlinks,
// to be applied in order in the next batch (meta.BatchOp.SetAttr, with the
// mount's times, ctime included, so that what the server records is what
// the kernel was told). It is answered here only when all of these hold:
//
//   - the file was made by this mount's create in the directory the
//     kernel has it in, which the mount still holds under its lease,
//     and it has one name (a rename or a link through this mount ends
//     this: the file may then be known elsewhere);
//   - the mount knows the file's attributes for certain (no change noted
//     since it read them);
//   - the caller is the file's owner, or root when the metadata server
//     does not squash root;
//   - it changes the mode (keeping a setgid bit only where the server
//     would), the access time or the modification time: never the owner,
//     group or size, and never a chmod the server would answer otherwise.
//
// Requests that could see the server's attributes of such a file wait for
// the queue first (ctx, ctxFor; a listing of the directory, dirStream);
// creates in the directory do not (ctxNew). A directory's own changes
// answered here are waited for by a name made in it on the server
// (ctxNew: the name moves the times past those set), and its mode
// change by every request by a path through it (node.viaPath). What is
// lost if the mount dies before sending them: the changes, as with the
// unlinks.

// setattrLocally answers a setattr (no size) of file n, open here as of,
// without the metadata server where it can: a chown that changes nothing
// (noopChown), or an attribute change answered here (changeHere, and
// dirChangeHere for a directory). It reports whether it answered.
func (n *node) setattrLocally(ctx context.Context, of *openFile, p string, ch meta.AttrChanges, out *fuse.AttrOut) (syscall.Errno, bool) {
	fsys := n.fsys
	if n.dir && n.dirChangeHere(ctx, ch, out) {
		return 0, true
	}
	if ch.Mode == nil && ch.Mtime == nil && ch.Atime == nil && (ch.Uid != nil || ch.Gid != nil) {
		if a, ok := fsys.knownAttrs(of); ok && (ch.Uid == nil || *ch.Uid == a.Uid) && (ch.Gid == nil || *ch.Gid == a.Gid) {
			// Perhaps a chown that changes nothing, whose answer needs the
			// size: the kernel no longer reads it before a chown
			// (HANDLE_KILLPRIV_V2, mount.go), so read it here if writes
			// moved it, as its GETATTR did.
			if errno, ok := fsys.freshUsage(ctx, of, p); !ok || errno != 0 {
				return errno, errno != 0
			}
		}
		if a, u, ok := fsys.noopChown(ctx, n.id, ch); ok {
			fsys.attrOut(out, a, u)
			return 0, true
		}
		return 0, false
	}
	if !n.changeHere(ctx, of, ch, false) {
		return 0, false
	}
	// The answer needs the size: read it before anything is queued, so
	// that a failure leaves nothing answered.
	if errno, ok := fsys.freshUsage(ctx, of, p); !ok || errno != 0 {
		return errno, errno != 0
	}
	if !n.changeHere(ctx, of, ch, true) {
		return 0, false
	}
	if ch.Mtime != nil {
		of.dirty.Store(false) // an explicit time wins over close's
	}
	k, ok := fsys.current(of)
	if !ok {
		// A write or a change came in between: ask the servers, once the
		// change just queued (and any other of this file) is applied, or
		// the answer would not show it.
		if err := fsys.flushThrough(ctx, func(q queuedOp) bool { return q.touches(n.id) }); err != nil {
			return fsys.errno("setattr", p, err), true
		}
		a, u, errno := fsys.stat(ctx, n.id, p)
		if errno != 0 {
			return errno, true
		}
		fsys.attrOut(out, a, u)
		return 0, true
	}
	fsys.attrOut(out, k.a, k.u)
	return 0, true
}

// changeHere reports whether the attribute change ch of file n, open
// here as of, can be answered here (see above). With queue it also
// queues the change and records the attributes it leaves as known; the
// check and the queueing happen under the queue's lock, so that a recall
// (which takes the delegation away under the same lock, then waits for
// the queue) either finds the change queued or makes the check fail.
func (n *node) changeHere(ctx context.Context, of *openFile, ch meta.AttrChanges, queue bool) bool {
	fsys := n.fsys
	if of == nil || n.dir || (ch.Mode == nil && ch.Mtime == nil && ch.Atime == nil) ||
		ch.Uid != nil || ch.Gid != nil || ch.Size != nil || ch.KillPriv || ch.Access {
		return false
	}
	dir, gen := meta.FileID(of.madeIn.Load()), fsys.leaseGen()
	name, parent := n.Parent()
	if dir == 0 || gen == 0 || fsys.ttl() <= 0 || parent == nil || parent.StableAttr().Ino != uint64(dir) {
		return false
	}
	cred, ok := meta.CredFrom(ctx)
	if !ok || (cred.Root() && !fsys.rootIsRoot.Load()) {
		return false
	}
	of.knownMu.Lock()
	defer of.knownMu.Unlock()
	if !of.attrsCertainLocked(gen) {
		return false
	}
	k := &of.known
	a := k.a
	if a.ID != of.id || a.Kind != meta.KindFile || a.Nlink != 1 || (!cred.Root() && cred.Uid != a.Uid) {
		return false
	}
	change := meta.BatchAttrs{Atime: ch.Atime, Mtime: ch.Mtime, Ctime: time.Now().UnixNano()}
	if ch.Mode != nil {
		mode := *ch.Mode & 0o7777
		if mode&syscall.S_ISGID != 0 && !cred.Root() && !cred.InGroup(a.Gid) {
			return false // the server clears it
		}
		a.Mode, change.Mode = mode, &mode
	}
	if !queue {
		return true
	}
	if ch.Mtime != nil {
		a.Mtime = *ch.Mtime
	}
	if ch.Atime != nil {
		a.Atime = *ch.Atime
	}
	a.Ctime = change.Ctime
	d := &fsys.deleg
	d.mu.Lock()
	// madeIn again: a rename or link ends it before it waits for the
	// queue under this lock.
	if g, ok := d.dirs[dir]; !ok || g.gen != gen || len(d.queue) >= maxQueued || of.madeIn.Load() != uint64(dir) {
		d.mu.Unlock()
		return false
	}
	d.enqueueLocked(queuedOp{op: meta.BatchOp{Dir: dir, Name: name, Self: a.ID, SetAttr: &change}, cred: cred})
	d.mu.Unlock()
	k.a = a
	// A listing page read before this must not give the kernel the old
	// attributes (the metadata server sends this mount no change for
	// it). The lease's lock is never held while taking of.knownMu.
	fsys.markChanged(a.ID)
	return true
}

// freshUsage makes what the mount knows of file of, open here at p,
// current, reading its size from the I/O servers if writes moved it since
// it was read. It reports false when the mount is not certain of the
// file's other attributes (nothing was read), and the errno of a read
// that failed.
func (fsys *fileSystem) freshUsage(ctx context.Context, of *openFile, p string) (syscall.Errno, bool) {
	if _, ok := fsys.current(of); ok {
		return 0, true
	}
	start, gen, notes := time.Now(), fsys.leaseGen(), of.notesNow()
	a, ok := fsys.knownAttrs(of)
	if !ok {
		return 0, false
	}
	_, errno := fsys.usage(ctx, of, a, p, start, gen, notes)
	return errno, true
}

// dirChangeHere answers the chmod or utimes of directory n here, and
// queues it, when the mount made n in a directory it still holds
// (delegDir.madeIn) and holds n too: as for a file made here, no one else
// can reach n before a recall of its parent, which applies the queue
// first. tar x sets each directory's times, owner (as root) and mode
// once its entries are in; each was a metadata commit. The rules are
// changeHere's, and a sticky bit goes to the server (a sticky directory
// is never held); a chown that changes nothing is answered as noopChown
// answers it, with nothing queued.
//
// The answer gives the attributes the directory will have once the queue
// is applied where the mount knows them all (dirtimes.go); where it does
// not (its link count, or its times after a create in it), it tells the
// kernel to keep none of them (a timeout of 0): the next stat asks again,
// and waits for the queue (touches).
func (n *node) dirChangeHere(ctx context.Context, ch meta.AttrChanges, out *fuse.AttrOut) bool {
	fsys := n.fsys
	chown := ch.Uid != nil || ch.Gid != nil
	if (ch.Mode == nil && ch.Mtime == nil && ch.Atime == nil) == !chown || ch.Size != nil || ch.KillPriv || ch.Access {
		return false // nothing, or a chown with other changes: the server's
	}
	gen := fsys.leaseGen()
	name, parent := n.Parent()
	if gen == 0 || fsys.ttl() <= 0 || parent == nil {
		return false
	}
	cred, ok := meta.CredFrom(ctx)
	if !ok || (cred.Root() && !fsys.rootIsRoot.Load()) {
		return false
	}
	dir := meta.FileID(parent.StableAttr().Ino)
	// Before the queue's lock (names.go's is never taken under it); the
	// kernel holds n's lock over this request and over every request
	// that adds or removes a name in n, so the count cannot move.
	_, changes, shapeKnown := fsys.knownShape(n.id)
	d := &fsys.deleg
	d.mu.Lock()
	g, held := d.dirs[n.id]
	pg, parentHeld := d.dirs[dir]
	if !held || g.gen != gen || g.madeIn != dir || !parentHeld || pg.gen != gen || len(d.queue) >= maxQueued {
		d.mu.Unlock()
		return false
	}
	a := g.attr
	if a.ID != n.id || (!cred.Root() && cred.Uid != a.Uid) {
		d.mu.Unlock()
		return false
	}
	if chown {
		// A chown clears no bit of a directory's (the metadata server's
		// chownAttr, as Linux): to its owner and group it changes nothing.
		d.mu.Unlock()
		if ch.Uid != nil && *ch.Uid != a.Uid || ch.Gid != nil && *ch.Gid != a.Gid {
			return false
		}
		fsys.stats.noopChowns.Add(1)
		fsys.dirAttrOut(out, n.id, a)
		return true
	}
	change := meta.BatchAttrs{Atime: ch.Atime, Mtime: ch.Mtime, Ctime: time.Now().UnixNano()}
	if ch.Mode != nil {
		mode := *ch.Mode & 0o7777
		if mode&syscall.S_ISVTX != 0 || (mode&syscall.S_ISGID != 0 && !cred.Root() && !cred.InGroup(a.Gid)) {
			d.mu.Unlock()
			return false // a sticky directory is not held; the server clears that setgid
		}
		a.Mode, change.Mode = mode, &mode
	}
	if ch.Mtime != nil {
		a.Mtime = *ch.Mtime
	}
	if ch.Atime != nil {
		a.Atime = *ch.Atime
	}
	a.Ctime = change.Ctime
	d.enqueueLocked(queuedOp{op: meta.BatchOp{Dir: dir, Name: name, Self: n.id, SetAttr: &change}, cred: cred, dirMode: change.Mode != nil})
	// The creates and removes answered in n from now on are checked
	// against the new mode.
	g.attr = a
	if ch.Mtime != nil {
		// Both times are the mount's now (dirtimes.go).
		g.timesKnown, g.timesAt = shapeKnown, changes
	}
	d.dirs[n.id] = g
	d.mu.Unlock()
	// What the mount answered for n before this (a listing page, a
	// getattr) no longer holds.
	fsys.ownChanged(n.id)
	fsys.dirAttrOut(out, n.id, a)
	return true
}

// dirAttrOut answers with a, the attributes of held directory id as
// changed here: what the mount knows of them all if it does
// (heldDirAttrs), else a with a timeout of 0, so that the kernel keeps
// none of them and its next stat asks again.
func (fsys *fileSystem) dirAttrOut(out *fuse.AttrOut, id meta.FileID, a meta.Attr) {
	if known, _, ok := fsys.heldDirAttrs(id); ok {
		fsys.attrOut(out, known, client.Usage{})
		return
	}
	fsys.attrOut(out, a, client.Usage{})
	out.AttrValid, out.AttrValidNsec = 0, 0
}

// madeHere records that the file open here as of was just made by this
// mount in directory dir: its attribute changes may be answered here
// while the mount holds dir.
func (fsys *fileSystem) madeHere(of *openFile, dir meta.FileID) {
	if fsys.holds(dir) {
		of.madeIn.Store(uint64(dir))
	}
}

// notMadeHere ends what madeHere began, for a file renamed or linked: it
// may be known elsewhere from now on.
func (fsys *fileSystem) notMadeHere(id meta.FileID) {
	fsys.dropMadeSize(id)
	d := &fsys.deleg
	d.mu.Lock()
	if g, ok := d.dirs[id]; ok && g.madeIn != 0 {
		g.madeIn = 0 // a directory: its chmod and utimes go to the server
		d.dirs[id] = g
	}
	d.mu.Unlock()
	if of := fsys.openFile(id); of != nil {
		of.madeIn.Store(0)
		// Its close may not have waited for its writes
		// (closeWithoutWaiting): they reach the servers before anyone
		// else can reach the file.
		of.wb.wait()
	}
}
