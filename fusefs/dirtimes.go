package fusefs

import (
	"github.com/pario/pario/server/meta"
)

// Attributes of a directory the mount made, answered here (docs/mount.md,
// "Attribute changes answered by the mount").
//
// tar x sets a directory's times, owner and mode once its entries are in,
// and stats it between the chown and the chmod (fstatat, to check it is
// still the directory it made). For a directory this mount made in a
// directory it still holds (delegDir.madeIn), the chmod and utimens are
// answered here and queued (dirChangeHere), and so can the stat be, once
// the mount knows every attribute the metadata server will hold for the
// directory when the queue is applied:
//
//   - owner, group, mode and atime: the delegation keeps them
//     (delegDir.attr); no one else can change them before a recall of the
//     parent, and the server moves a directory's atime only when asked;
//   - the link count: two more than its subdirectories, which the mount
//     counts while it knows every name there (names.go: dirNames.subdirs);
//   - mtime and ctime: a create, mkdir, unlink or rename in it moves them
//     to the metadata server's time when it is applied, which the mount
//     cannot know; so they are known only from a utimens answered here
//     (its mtime, and the mount's ctime) while no name was added or
//     removed since (dirNames.changes), and from the mkdir's answer.
//
// Anything else that changes the directory through this mount (an
// extended attribute, a setattr the server answers: forgetDirAttrs), a
// rename of it (notMadeHere), or its names forgotten, ends that until the
// next utimens answered here.

// knownShape returns the link count directory dir will have once the queue
// is applied, and how many names were added to it or removed from it
// since the mount made it, if the mount knows all of its names.
func (fsys *fileSystem) knownShape(dir meta.FileID) (nlink uint32, changes uint64, ok bool) {
	ok = fsys.knownNames(dir, func(d *dirNames) bool {
		nlink, changes = uint32(2+d.subdirs), d.changes
		return true
	})
	return nlink, changes, ok
}

// heldDirAttrs returns the attributes of directory id as the metadata
// server will hold them once the queue is applied, when the mount knows
// them all (see above), and the directory the mount made it in.
func (fsys *fileSystem) heldDirAttrs(id meta.FileID) (a meta.Attr, madeIn meta.FileID, ok bool) {
	nlink, changes, ok := fsys.knownShape(id)
	if !ok {
		return meta.Attr{}, 0, false
	}
	gen := fsys.leaseGen()
	d := &fsys.deleg
	d.mu.Lock()
	defer d.mu.Unlock()
	g, held := d.dirs[id]
	if !held || g.gen != gen || g.madeIn == 0 || !g.timesKnown || g.timesAt != changes || g.attr.ID != id || g.attr.Nlink == 0 {
		return meta.Attr{}, 0, false
	}
	if p, ok := d.dirs[g.madeIn]; !ok || p.gen != gen {
		return meta.Attr{}, 0, false
	}
	a = g.attr
	a.Nlink = nlink
	return a, g.madeIn, true
}

// dirTimesMoved records that directory id's ctime moved with a change of
// this mount's that the mount does not follow.
func (fsys *fileSystem) dirTimesMoved(id meta.FileID) {
	d := &fsys.deleg
	d.mu.Lock()
	if g, ok := d.dirs[id]; ok && g.timesKnown {
		g.timesKnown = false
		d.dirs[id] = g
	}
	d.mu.Unlock()
}

// heldChildDir returns the attributes of the directory the kernel knows
// as name in n, when this mount made it there and knows them all
// (heldDirAttrs): a lookup of it then needs neither the metadata server
// nor the queue.
func (n *node) heldChildDir(name string) (meta.Attr, bool) {
	c := n.GetChild(name)
	if c == nil {
		return meta.Attr{}, false
	}
	cn, ok := c.Operations().(*node)
	if !ok || !cn.dir {
		return meta.Attr{}, false
	}
	// Made here under the name it still has (a rename clears madeIn).
	a, madeIn, ok := n.fsys.heldDirAttrs(cn.id)
	return a, ok && madeIn == n.id
}
