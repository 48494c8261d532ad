package fusefs

import (
	"context"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// A chown(2) that changes nothing is answered by the mount alone.
//
// tar x as root ends every file with futimens, fchown to the owner the
// file already has, fchmod, close: the fchown is one metadata commit of
// the four a small file costs, and changes nothing but ctime. Before it,
// the kernel refreshes the file's attributes (a GETATTR: FUSE asks the
// file system to clear setuid at chown only with handle_killpriv, which
// the mount does not take), so the mount has just read them from the
// servers. When no change to the file has reached the mount since
// (the lease's invalidations, lease.go), no write or truncate went
// through it, and the chown neither changes an owner nor has a setuid or
// setgid bit to clear, the metadata server would change nothing either:
// the mount answers with what it read. What is lost is ctime's move,
// which the next change (tar's fchmod, the mtime close records) makes.

// seenAttr is what a stat of an open file read from the servers: the
// attributes, the usage, when it started, the lease it was read under,
// and the file's write count before its size was read.
type seenAttr struct {
	a      meta.Attr
	u      client.Usage
	at     time.Time
	gen    uint64
	writes uint64
	ok     bool
}

// see records what a stat that started at start read, if the file is
// open here.
func (fsys *fileSystem) see(of *openFile, a meta.Attr, u client.Usage, start time.Time, gen, writes uint64) {
	if of == nil || gen == 0 {
		return
	}
	of.seenMu.Lock()
	defer of.seenMu.Unlock()
	if of.seen.ok && of.seen.at.After(start) {
		return // a later stat already answered
	}
	of.seen = seenAttr{a: a, u: u, at: start, gen: gen, writes: writes, ok: true}
}

// forget drops what was seen of an open file: the mount itself changed
// it.
func (of *openFile) forget() {
	if of == nil {
		return
	}
	of.seenMu.Lock()
	of.seen.ok = false
	of.seenMu.Unlock()
}

// noopChown reports whether the chown ch (only Uid and Gid set) of the
// file with this ID would change nothing on the metadata server, and if
// so the attributes to answer with. The caller must be the file's owner,
// or root when this mount has seen that the metadata server does not
// squash root (a squashed root is refused what it does not own).
func (fsys *fileSystem) noopChown(ctx context.Context, id meta.FileID, ch meta.AttrChanges) (meta.Attr, client.Usage, bool) {
	of := fsys.openFile(id)
	if of == nil {
		return meta.Attr{}, client.Usage{}, false
	}
	if _, f := fsys.orphan(id); f != nil {
		return meta.Attr{}, client.Usage{}, false
	}
	of.seenMu.Lock()
	s := of.seen
	of.seenMu.Unlock()
	if !s.ok || time.Since(s.at) > freshWindow || fsys.ttl() <= 0 || fsys.leaseGen() != s.gen ||
		fsys.changedSince(id, s.at) || of.writes.Load() != s.writes {
		return meta.Attr{}, client.Usage{}, false
	}
	a := s.a
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
	return a, s.u, true
}

// learnSquash notes, from an entry root just made, whether the metadata
// server takes root for root (the entry is root's) or squashes it.
func (fsys *fileSystem) learnSquash(ctx context.Context, a meta.Attr) {
	if c, ok := meta.CredFrom(ctx); ok && c.Root() {
		fsys.rootIsRoot.Store(a.Uid == 0)
	}
}
