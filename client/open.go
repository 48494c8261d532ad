package client

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// This file holds the calls a file system layer (the FUSE mount, fusefs)
// needs beyond the path-based API: addressing entries by FileID, opening a
// File from attributes already in hand, and splitting a removal into its
// namespace half and its data half, so that the data of a file still open
// can outlive its name (POSIX unlink of an open file).

// GetByID returns the metadata of the entry with the given ID, wherever it
// is now. A removed or unknown ID is fs.ErrNotExist (ENOENT). It checks
// no permission; the credentials go along so that the server knows which
// mount asks (meta.Cred.Mount: a directory delegated to it is not
// recalled by its own stat).
func (c *Client) GetByID(ctx context.Context, id meta.FileID) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpGetByID, meta.GetByIDRequest{ID: id, Cred: c.cred(ctx)})
}

// Access returns the metadata of entry id, having checked that the
// caller (meta.WithCred, else the client's Cred) may access it as want
// asks (meta.MayRead, MayWrite, MayExec): what open(2) and access(2) check
// once the path has been looked up. Denied is fs.ErrPermission (EACCES).
func (c *Client) Access(ctx context.Context, id meta.FileID, want uint32) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpGetByID, meta.GetByIDRequest{ID: id, Want: want, Cred: c.cred(ctx)})
}

// SetAttr changes the attributes ch names (mode, owner, times, ...) as
// the caller, and returns the entry's new attributes. Only the owner or
// root changes the mode, only root the owner (see meta.AttrChanges).
func (c *Client) SetAttr(ctx context.Context, path string, ch meta.AttrChanges) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpSetAttr, meta.SetAttrRequest{Path: path, AttrChanges: ch, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
}

// Chown changes the owner and group of path (nil: unchanged), as chown(2).
func (c *Client) Chown(ctx context.Context, path string, uid, gid *uint32) error {
	_, err := c.SetAttr(ctx, path, meta.AttrChanges{Uid: uid, Gid: gid})
	return err
}

// OpenAttr returns a File for attributes obtained from Lookup, GetByID,
// Readdir or Create, without asking the metadata server again. path is only
// used in errors and for Name.
func (c *Client) OpenAttr(path string, a meta.Attr) (*File, error) {
	if a.Kind != meta.KindFile {
		return nil, notAFile(path, a.Kind)
	}
	return c.newFile(path, a)
}

// SizeOf returns the logical size of the file described by a, computed
// from its datafiles.
func (c *Client) SizeOf(ctx context.Context, a meta.Attr) (int64, error) {
	if a.Kind != meta.KindFile {
		return 0, nil
	}
	return c.fileSize(ctx, a)
}

// UsageOf returns the logical size of the file described by a and the
// bytes its datafiles hold (zero for a directory).
func (c *Client) UsageOf(ctx context.Context, a meta.Attr) (Usage, error) {
	if a.Kind != meta.KindFile {
		return Usage{}, nil
	}
	return c.fileUsage(ctx, a)
}

// RemoveEntry removes a file's name (or an empty directory) from the
// namespace and returns its attributes. With keepData, a file's datafiles
// stay on the I/O servers when its last name goes (the caller holds the
// file open): call RemoveData when the last user of the data is gone.
// Without, the metadata server removes them (see Remove).
func (c *Client) RemoveEntry(ctx context.Context, path string, keepData bool) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpRemove, meta.RemoveRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx), KeepData: keepData})
}

// RenameEntry is Rename returning the replaced entry's attributes (nil
// when nothing was replaced); keepData as for RemoveEntry, for the
// replaced file.
func (c *Client) RenameEntry(ctx context.Context, oldpath, newpath string, keepData bool) (*meta.Attr, error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpRename, meta.RenameRequest{OldPath: oldpath, NewPath: newpath, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx), KeepData: keepData}, nil, nil)
	return resp.Replaced, err
}

// RemoveData deletes the datafiles of a file whose last name went with
// keepData (see RemoveEntry, RenameEntry); path is only used in errors.
// A directory's attributes are ignored. If an I/O server is down its
// datafile stays behind and the error names the server.
func (c *Client) RemoveData(ctx context.Context, path string, a meta.Attr) error {
	return c.removeDatafiles(ctx, path, a)
}

// SetMode records new permission bits.
func (c *Client) SetMode(ctx context.Context, path string, mode uint32) error {
	req := meta.SetAttrRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}
	req.Mode = &mode
	_, err := metaAttr(ctx, c, meta.OpSetAttr, req)
	return err
}

// LayoutSame reports whether setting layout l on a file described by a
// would change nothing: same distribution, parameters and datafile count
// once l is resolved for this cluster.
func (c *Client) LayoutSame(a meta.Attr, l dist.Layout) bool {
	if a.Kind != meta.KindFile || l.IsZero() {
		return false
	}
	d, err := l.Build(len(c.servers))
	if err != nil {
		return false
	}
	return a.Layout.Dist == l.Dist && a.Layout.Params == l.Params && d.Datafiles() == len(a.Servers)
}

// Unstuff spreads a stuffed file to its full layout now (it does nothing
// for a file that is not stuffed). A file about to lose its namespace
// entry while still open must be unstuffed first: the metadata server
// cannot unstuff an entry it no longer has.
func (f *File) Unstuff(ctx context.Context) error {
	a, d := f.snapshot()
	if !a.Stuffed {
		return nil
	}
	return f.ensureRoom(ctx, stuffedLimit(d)+1)
}

// SetAttr replaces the attributes the File works with (after a layout
// change of an empty file, or when another client unstuffed it). a must
// describe the same file.
func (f *File) SetAttr(a meta.Attr) error {
	d, err := buildDist(a)
	if err != nil {
		return &fs.PathError{Op: "open", Path: f.path, Err: err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.ID != f.attr.ID {
		return &fs.PathError{Op: "open", Path: f.path, Err: fmt.Errorf("attributes of file %d given for file %d: %w", a.ID, f.attr.ID, syscall.EINVAL)}
	}
	f.attr, f.d = a, d
	return nil
}

// Mknod creates a FIFO, socket or device node (kind; rdev for a device):
// metadata only, it has no datafiles.
func (c *Client) Mknod(ctx context.Context, path string, kind meta.Kind, mode uint32, rdev uint64) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpMknod, meta.MknodRequest{Path: path, Kind: kind, Mode: mode, Rdev: rdev, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
}

// MkdirAttr creates a directory and returns its attributes.
func (c *Client) MkdirAttr(ctx context.Context, path string, mode uint32) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpMkdir, meta.MkdirRequest{Path: path, Mode: mode, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
}

// Delegate asks for the delegation of the directory at path (see
// meta.Store.Delegate) for the mount that ctx's credentials name
// (meta.Cred.Mount), and returns its attributes and whether it was
// given. A server from before delegations answers ENOSYS.
func (c *Client) Delegate(ctx context.Context, path string) (meta.Attr, bool, error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpDelegate, meta.DelegateRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}, nil, nil)
	return resp.Attr, resp.Given, err
}

// RemoveBatch sends a delegation holder's unlinks (meta.Store.ApplyBatch)
// on behalf of ctx's credentials and returns each one's outcome.
func (c *Client) RemoveBatch(ctx context.Context, ops []meta.BatchOp) ([]error, error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpBatch, meta.BatchRequest{Ops: ops, Cred: c.cred(ctx)}, nil, nil)
	if err == nil && len(resp.Errs) != len(ops) {
		err = fmt.Errorf("%s: answered %d outcomes for a batch of %d removes", c.meta.Name, len(resp.Errs), len(ops))
	}
	return resp.Errs, err
}

// Reserve reserves up to n IDs (at least one) for new files in the
// directory at path, which the mount that ctx's credentials name holds
// delegated, for the owner token owner (meta.Store.Reserve).
func (c *Client) Reserve(ctx context.Context, path string, owner uint64, n int) (meta.ReservedIDs, error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpReserve, meta.ReserveRequest{Path: path, Owner: owner, Count: n, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}, nil, nil)
	if err == nil && (len(resp.IDs.Slots) > n || len(resp.IDs.Slots) == 0) {
		err = fmt.Errorf("%s: answered %d IDs where 1 to %d were reserved", c.meta.Name, len(resp.IDs.Slots), n)
	}
	return resp.IDs, err
}

// MkdirHeld makes a directory for the mount that ctx's credentials name
// and, unless the metadata server refuses (given false), delegates it to
// that mount and reserves n IDs in it for owner (meta.Store.MkdirHeld).
// A server from before it answers ENOSYS.
func (c *Client) MkdirHeld(ctx context.Context, path string, mode uint32, owner uint64, n int) (meta.Attr, bool, meta.ReservedIDs, error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpMkdirHeld, meta.MkdirHeldRequest{Path: path, Mode: mode, Owner: owner, Count: n, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}, nil, nil)
	return resp.Attr, resp.Given, resp.IDs, err
}
