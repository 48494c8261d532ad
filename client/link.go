package client

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// Symlink creates the symbolic link path pointing to target, owned by the
// caller, and returns its attributes. The target is stored as given and
// may name nothing (a dangling link).
func (c *Client) Symlink(ctx context.Context, target, path string) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpSymlink, meta.SymlinkRequest{Target: target, Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
}

// Link gives the file id (not a directory: EPERM) the new name path, as
// the caller, and returns its attributes, Nlink its names. Remove and
// Rename remove a file's datafiles only with its last name.
func (c *Client) Link(ctx context.Context, id meta.FileID, path string) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpLink, meta.LinkRequest{ID: id, Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
}

// Readlink returns the target of the symbolic link path (EINVAL for any
// other kind of entry). Lookup answers it too, in Attr.Target.
func (c *Client) Readlink(ctx context.Context, path string) (string, error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpReadlink, meta.ReadlinkRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}, nil, nil)
	return resp.Target, err
}

// notAFile is the error of opening an entry that is not a file: a
// symbolic link is ELOOP, as open(2) with O_NOFOLLOW answers, since the
// client never follows links; anything else EISDIR.
func notAFile(path string, k meta.Kind) error {
	if k == meta.KindSymlink {
		return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("a symbolic link (pario does not follow links): %w", syscall.ELOOP)}
	}
	return &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
}
