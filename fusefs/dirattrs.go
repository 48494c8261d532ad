package fusefs

import (
	"sync"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// Directory attributes answered again (docs/mount.md).
//
// The kernel drops the access time it holds for a directory after every
// readdir (fuse_invalidate_atime: the file system might have moved it),
// so the stat that follows a listing, as rm -r's fstat of every directory
// it opens a second time, is a GETATTR and a metadata round trip. The
// metadata server never moves a directory's atime on a listing, so what
// the mount last answered for the directory still holds unless it
// changed since; and every change to it reaches the mount before it is
// acknowledged (lease.go: changedSince), this mount's own through
// ownChanged or forgetDirAttrs.
//
// So the mount keeps the attributes it last answered the kernel with for
// each directory (lookup, READDIRPLUS, getattr), with the time the
// request for them began and the lease they were read under, and answers
// a getattr from them while the lease is the same, they are at most
// freshWindow old (changedSince forgets older changes), and no change to
// the directory was noted since the request began.

// seenDir is what the mount answered for one directory.
type seenDir struct {
	a   meta.Attr
	u   client.Usage
	at  time.Time // when the request that read them began
	gen uint64    // the lease they were read under
}

// dirAttrs holds seenDir by directory.
type dirAttrs struct {
	mu sync.Mutex
	m  map[meta.FileID]seenDir
}

// maxDirAttrs bounds dirAttrs; past it, entries older than freshWindow go,
// then all.
const maxDirAttrs = 4096

// sawDirAttrs records a directory's attributes, read by a request that
// began at at, as answered to the kernel.
func (fsys *fileSystem) sawDirAttrs(a meta.Attr, u client.Usage, at time.Time) {
	gen := fsys.leaseGen()
	if a.Kind != meta.KindDir || gen == 0 {
		return
	}
	d := &fsys.dirAttrs
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[meta.FileID]seenDir{}
	}
	makeRoom(d.m, maxDirAttrs, freshWindow, func(s seenDir) time.Time { return s.at })
	d.m[a.ID] = seenDir{a: a, u: u, at: at, gen: gen}
}

// knownDirAttrs returns the attributes last answered for directory id, if
// they still hold (see above).
func (fsys *fileSystem) knownDirAttrs(id meta.FileID) (meta.Attr, client.Usage, bool) {
	if fsys.ttl() <= 0 {
		return meta.Attr{}, client.Usage{}, false
	}
	d := &fsys.dirAttrs
	d.mu.Lock()
	s, ok := d.m[id]
	d.mu.Unlock()
	if !ok || s.gen != fsys.leaseGen() || time.Since(s.at) > freshWindow || fsys.changedSince(id, s.at) {
		return meta.Attr{}, client.Usage{}, false
	}
	return s.a, s.u, true
}

// forgetDirAttrs drops what the mount answered for directory id: before a
// change this mount makes to its attributes that ownChanged does not
// mark (a chmod, utimes or chown of it, its extended attributes).
func (fsys *fileSystem) forgetDirAttrs(id meta.FileID) {
	d := &fsys.dirAttrs
	d.mu.Lock()
	delete(d.m, id)
	d.mu.Unlock()
	fsys.dirTimesMoved(id)
}
