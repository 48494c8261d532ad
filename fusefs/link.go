package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// Symbolic links are metadata only: the metadata server keeps the target,
// and the kernel follows links when it resolves paths (the mount never
// does: every lookup and getattr here is lstat's).

// Symlink creates a symbolic link owned by the caller.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	p := n.child(name)
	a, err := n.fsys.c.Symlink(n.inDir(n.fsys.kernelsOwn(ctx)), target, p)
	if err != nil {
		n.fsys.forgetNames(n.id)
		return nil, n.fsys.errno("symlink", p, err)
	}
	n.fsys.addedName(n.id, name, false)
	n.fsys.ownChanged(n.id)
	n.fsys.entry(out, a, client.Usage{})
	return n.newChild(ctx, a), 0
}

// Link gives the file target another name, here: the metadata server
// counts its names, and its data goes with the last name and the last
// descriptor (dropData).
func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	tn, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	// Before the wait for the queue (see Rename): with a second name the
	// file may be known elsewhere.
	n.fsys.notMadeHere(tn.id)
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	p := n.child(name)
	a, err := n.fsys.c.Link(n.inDir(n.fsys.kernelsOwn(ctx)), tn.id, p)
	if err != nil {
		n.fsys.forgetNames(n.id)
		return nil, n.fsys.errno("link", p, err)
	}
	n.fsys.addedName(n.id, name, false)
	n.fsys.ownChanged(n.id, tn.id)
	var u client.Usage
	if a.Kind == meta.KindFile {
		n.fsys.settle(a.ID)
		if u, err = n.fsys.c.UsageOf(ctx, a); err != nil {
			return nil, n.fsys.errno("link", p, err)
		}
	}
	n.fsys.entry(out, a, u)
	return n.newChild(ctx, a), 0
}

// Readlink answers the link's target, found by its ID (wherever a rename
// put it).
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	ctx, cancel := n.ctxFor(ctx) // by ID: this inode alone
	defer cancel()
	a, err := n.fsys.c.GetByID(ctx, n.id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, syscall.ESTALE
	}
	if err != nil {
		return nil, n.fsys.errno("readlink", n.path(), err)
	}
	if a.Kind != meta.KindSymlink {
		return nil, syscall.EINVAL
	}
	return []byte(a.Target), 0
}
