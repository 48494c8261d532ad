package fusefs

import (
	"context"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// What the mount knows of a file open here, without asking the servers.
//
// tar x makes a small file with create, write, futimens, fchown (to the
// owner it already has), fchmod, close. Each answer holds the file's
// attributes and size, which cost a metadata request and a size request
// per datafile, and the fchown a metadata commit, though it changes
// nothing but ctime. (The kernel also asked for the attributes before
// every chown, to find setuid bits to clear, until the mount took
// HANDLE_KILLPRIV_V2: mount.go.)
//
// So the mount remembers, per open file (and per directory whose
// attributes it just changed, dirState), the attributes and usage it last
// read or was answered (knownAttr), and uses them while it can tell they
// are current:
//
//   - every change to the file reaches the mount through the lease before
//     the change is acknowledged (lease.go), and counts as a note; what was
//     read is current while no note came after the read began;
//   - this mount's own attribute change (setAttr) brings one note of its
//     own before its answer: when exactly one note came while it was the
//     only change of the file in flight here, that note was its own, and
//     its answer is current;
//   - writes and truncates through this mount count too (openFile.writes);
//   - a native client's writes bring no note (docs/mount.md): what was read
//     is used for at most freshWindow, and a new open forgets it.
//
// Current attributes answer GETATTR and setattr, and make a chown that
// changes nothing (same owner and group, no setuid or setgid bit to clear,
// by the owner or by a root the metadata server does not squash) an
// answer of the mount alone. What that loses is ctime's move, which the
// next change makes (tar's fchmod, the mtime close records).

// knownAttr is what the mount read or was answered of an open file.
type knownAttr struct {
	a      meta.Attr
	u      client.Usage
	at     time.Time // when the usage was read (its age is bounded)
	gen    uint64    // the lease it was read under
	notes  uint64    // openFile.notes it is current for
	writes uint64    // openFile.writes its usage includes
	ok     bool
}

// note counts a change to the file with this ID, if it is open here, or
// to the directory, if the mount tracks it (dirState). The watch loop
// calls it before it acknowledges the change.
func (fsys *fileSystem) note(id meta.FileID) {
	of := fsys.openFile(id)
	if of == nil {
		fsys.mu.Lock()
		of = fsys.dirs[id]
		fsys.mu.Unlock()
	}
	if of == nil {
		return
	}
	of.knownMu.Lock()
	of.notes++
	of.knownMu.Unlock()
}

// maxDirStates bounds the directories whose attributes the mount tracks.
const maxDirStates = 256

// dirState returns the state that tracks what the mount knows of a
// directory's attributes (an openFile with no File: tar sets a
// directory's times, owner and mode one after the other, by name). Its
// notes count from its creation, so it knows nothing before its first
// own change. Directories not used for freshWindow go when there are too
// many; a state that goes only forgets.
func (fsys *fileSystem) dirState(id meta.FileID) *openFile {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if of := fsys.dirs[id]; of != nil {
		of.used = time.Now()
		return of
	}
	if fsys.dirs == nil {
		fsys.dirs = map[meta.FileID]*openFile{}
	}
	makeRoom(fsys.dirs, maxDirStates, freshWindow, func(of *openFile) time.Time { return of.used })
	of := &openFile{id: id, used: time.Now()}
	fsys.dirs[id] = of
	return of
}

// trackedDir returns the state of a directory the mount tracks, or nil.
func (fsys *fileSystem) trackedDir(id meta.FileID) *openFile {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	return fsys.dirs[id]
}

// notesNow returns the file's note count, taken before a read.
func (of *openFile) notesNow() uint64 {
	of.knownMu.Lock()
	defer of.knownMu.Unlock()
	return of.notes
}

// remember records attributes and usage read since notes0 was taken
// (under lease gen, the usage including writes0 writes), unless a change
// came meanwhile.
func (fsys *fileSystem) remember(of *openFile, a meta.Attr, u client.Usage, at time.Time, gen, notes0, writes0 uint64) {
	if of == nil || gen == 0 || a.ID != of.id {
		return
	}
	of.knownMu.Lock()
	defer of.knownMu.Unlock()
	if of.notes != notes0 {
		return
	}
	of.known = knownAttr{a: a, u: u, at: at, gen: gen, notes: notes0, writes: writes0, ok: true}
}

// created remembers the attributes of a file this mount just created,
// with the usage of its new, empty datafiles (pooled or made for it, they
// hold no byte), so that a stat or setattr of it before its first write
// costs no metadata request and no size request per datafile. A change
// that came before of counted notes shows in changedSince: then nothing
// is remembered.
func (fsys *fileSystem) created(of *openFile, a meta.Attr, start time.Time, gen uint64) {
	if gen == 0 || time.Since(start) > freshWindow/2 {
		return
	}
	notes, writes := of.notesNow(), of.writes.Load()
	if fsys.changedSince(a.ID, start) {
		return
	}
	fsys.remember(of, a, client.Usage{}, start, gen, notes, writes)
}

// wroteHere counts a write of n bytes at off through the mount, handed on
// to the I/O servers (queued or done), and carries the usage the mount
// knows of the file over it where the result can be told without the
// servers (client.Usage.Grown): the file was made by this mount in a
// directory it holds, so that no other client can have it open, and what
// the mount knew was current. tar x's futimens and fchmod after the
// write, and the stats of a program writing a file, are then answered
// without waiting for the data to reach the servers and asking every one
// of them its datafile's size. A write-behind that fails forgets it.
func (fsys *fileSystem) wroteHere(of *openFile, off, n int64) {
	dir := meta.FileID(of.madeIn.Load())
	if dir == 0 || !fsys.holds(dir) {
		of.writes.Add(1)
		return
	}
	d := of.file().Distribution()
	of.knownMu.Lock()
	defer of.knownMu.Unlock()
	w := of.writes.Load()
	if k := &of.known; k.ok && k.writes == w && k.notes == of.notes && of.own == 0 {
		if u, ok := k.u.Grown(d, off, n); ok && of.writes.CompareAndSwap(w, w+1) {
			k.u, k.writes = u, w+1
			return
		}
	}
	of.writes.Add(1)
}

// knownAttrs returns the attributes the mount knows of the open file, if
// no change was noted since it read them, whatever writes moved its size
// since (which changes no attribute the metadata server keeps).
func (fsys *fileSystem) knownAttrs(of *openFile) (meta.Attr, bool) {
	if of == nil {
		return meta.Attr{}, false
	}
	gen := fsys.leaseGen()
	of.knownMu.Lock()
	defer of.knownMu.Unlock()
	if !of.attrsCertainLocked(gen) {
		return meta.Attr{}, false
	}
	return of.known.a, true
}

// attrsCertainLocked reports whether the attributes known of the file
// were read under lease gen and no change was noted or is in flight here
// since. The caller holds of.knownMu.
func (of *openFile) attrsCertainLocked(gen uint64) bool {
	k := &of.known
	return k.ok && gen != 0 && k.gen == gen && k.notes == of.notes && of.own == 0
}

// forget drops what the mount knows of the file.
func (of *openFile) forget() {
	of.knownMu.Lock()
	of.known.ok = false
	of.knownMu.Unlock()
}

// current returns what the mount knows of the open file if it is current.
func (fsys *fileSystem) current(of *openFile) (knownAttr, bool) {
	if of == nil || fsys.ttl() <= 0 {
		return knownAttr{}, false
	}
	gen := fsys.leaseGen()
	of.knownMu.Lock()
	k, notes, own := of.known, of.notes, of.own
	of.knownMu.Unlock()
	if !k.ok || k.gen != gen || k.notes != notes || own > 0 || k.writes != of.writes.Load() ||
		time.Since(k.at) > freshWindow {
		return knownAttr{}, false
	}
	if _, f := fsys.orphan(of.id); f != nil {
		return knownAttr{}, false
	}
	return k, true
}

// setAttr changes the attributes of the entry at p as the caller. For a
// file open here (of) it also reports whether the answer is current, and
// the note count it is current for: the change was the only one noted
// meanwhile.
func (fsys *fileSystem) setAttr(ctx context.Context, of *openFile, p string, ch meta.AttrChanges) (a meta.Attr, current bool, notes uint64, err error) {
	if of == nil {
		a, err = fsys.c.SetAttr(ctx, p, ch)
		return a, false, 0, err
	}
	gen := fsys.leaseGen()
	of.knownMu.Lock()
	of.own++
	of.ownBegun++
	solo, begun, n0 := of.own == 1, of.ownBegun, of.notes
	of.knownMu.Unlock()

	a, err = fsys.c.SetAttr(ctx, p, ch)

	held := gen != 0 && fsys.ttl() > 0 && fsys.leaseGen() == gen
	of.knownMu.Lock()
	defer of.knownMu.Unlock()
	of.own--
	current = err == nil && held && solo && of.ownBegun == begun && of.notes == n0+1 && a.ID == of.id
	if !current {
		return a, false, 0, err
	}
	if k := &of.known; k.ok && k.notes == n0 {
		// The usage known before still holds: an attribute change
		// leaves the data alone.
		k.a, k.notes = a, of.notes
	}
	return a, true, of.notes, nil
}

// noopChown reports whether the chown ch (only Uid and Gid set) of the
// file with this ID would change nothing on the metadata server, and if
// so the attributes to answer with. The caller must be the file's owner,
// or root when this mount has seen that the metadata server does not
// squash root (a squashed root is refused what it does not own).
func (fsys *fileSystem) noopChown(ctx context.Context, id meta.FileID, ch meta.AttrChanges) (meta.Attr, client.Usage, bool) {
	of := fsys.openFile(id)
	if of == nil {
		of = fsys.trackedDir(id)
	}
	k, ok := fsys.current(of)
	if !ok {
		return meta.Attr{}, client.Usage{}, false
	}
	a := k.a
	if ch.Uid != nil && *ch.Uid != a.Uid || ch.Gid != nil && *ch.Gid != a.Gid {
		return meta.Attr{}, client.Usage{}, false
	}
	if a.Mode&0o4000 != 0 || a.Mode&0o2010 == 0o2010 {
		return meta.Attr{}, client.Usage{}, false // a chown clears them
	}
	c, ok := meta.CredFrom(ctx)
	switch {
	case !ok:
		return meta.Attr{}, client.Usage{}, false
	case c.Root():
		if !fsys.rootIsRoot.Load() {
			return meta.Attr{}, client.Usage{}, false
		}
	case c.Uid != a.Uid:
		return meta.Attr{}, client.Usage{}, false
	}
	fsys.stats.noopChowns.Add(1)
	return a, k.u, true
}

// learnSquash notes, from an entry root just made, whether the metadata
// server takes root for root (the entry is root's) or squashes it.
func (fsys *fileSystem) learnSquash(ctx context.Context, a meta.Attr) {
	if c, ok := meta.CredFrom(ctx); ok && c.Root() {
		fsys.rootIsRoot.Store(a.Uid == 0)
	}
}
