package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
)

// The extended attributes a mount answers; everything else is ENODATA to
// read and ENOTSUP to write.
const (
	// XattrLayout is a file's layout, or a directory's default layout for
	// new files, in dist.Layout's text form.
	XattrLayout = "user.pario.layout"
	// XattrServers lists, read-only, the I/O server of each datafile.
	XattrServers = "user.pario.servers"
)

// attr returns the entry's current attributes (those it had, for an open
// file whose name is gone).
func (n *node) attr(ctx context.Context) (meta.Attr, syscall.Errno) {
	a, err := n.fsys.c.GetByID(ctx, n.id)
	if errors.Is(err, fs.ErrNotExist) {
		if gone, f := n.fsys.orphan(n.id); f != nil {
			return gone, 0
		}
		return meta.Attr{}, syscall.ESTALE
	}
	if err != nil {
		return meta.Attr{}, n.fsys.errno("getxattr", n.path(), err)
	}
	return a, 0
}

func (n *node) xattr(a meta.Attr, name string) (string, syscall.Errno) {
	switch {
	case name == XattrLayout && !a.Layout.IsZero():
		return a.Layout.String(), 0
	case name == XattrServers && a.Kind == meta.KindFile:
		infos := n.fsys.c.Servers()
		names := make([]string, len(a.Servers))
		for i, idx := range a.Servers {
			if int(idx) < len(infos) {
				names[i] = infos[idx].Name
			}
		}
		return strings.Join(names, ","), 0
	}
	return "", syscall.ENODATA
}

// Getxattr reads user.pario.layout or user.pario.servers.
func (n *node) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	if name != XattrLayout && name != XattrServers {
		return 0, syscall.ENODATA
	}
	ctx, cancel := n.ctxFor(ctx) // by ID: this inode alone
	defer cancel()
	a, errno := n.attr(ctx)
	if errno != 0 {
		return 0, errno
	}
	v, errno := n.xattr(a, name)
	if errno != 0 {
		return 0, errno
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Listxattr names the attributes the entry has.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	ctx, cancel := n.ctxFor(ctx) // by ID: this inode alone
	defer cancel()
	a, errno := n.attr(ctx)
	if errno != 0 {
		return 0, errno
	}
	var list []byte
	for _, name := range []string{XattrLayout, XattrServers} {
		if _, errno := n.xattr(a, name); errno == 0 {
			list = append(append(list, name...), 0)
		}
	}
	if len(dest) < len(list) {
		return uint32(len(list)), syscall.ERANGE
	}
	return uint32(copy(dest, list)), 0
}

// Setxattr sets user.pario.layout: a directory's default for new files,
// or the layout of a file that holds no data yet (EBUSY otherwise, unless
// the layout is the one the file already has). A value that does not
// parse, or does not fit the cluster, is EINVAL and the reason is logged.
func (n *node) Setxattr(ctx context.Context, name string, data []byte, _ uint32) syscall.Errno {
	n.fsys.forgetDirAttrs(n.id) // its ctime moves
	switch name {
	case XattrLayout:
	case XattrServers:
		return syscall.EPERM
	default:
		return syscall.ENOTSUP
	}
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	p := n.path()
	v := strings.TrimRight(string(data), "\x00\n\r\t ")
	l, err := dist.ParseLayout(v)
	if err != nil {
		n.fsys.log.Warn("pario mount: setxattr: bad layout", "path", p, "value", clip(v), "err", clip(err.Error()))
		return syscall.EINVAL
	}
	a, errno := n.attr(ctx)
	if errno != 0 {
		return errno
	}
	if n.fsys.c.LayoutSame(a, l) {
		return 0
	}
	n.fsys.settle(n.id)
	if err := n.fsys.c.SetLayout(n.itself(ctx), p, l); err != nil {
		errno := n.fsys.errno("setxattr", p, err)
		if errno != syscall.EIO {
			n.fsys.log.Warn("pario mount: setxattr: layout refused", "path", p, "value", clip(v), "err", clip(err.Error()))
		}
		return errno
	}
	if a.Kind == meta.KindFile {
		if of := n.fsys.openFile(n.id); of != nil {
			if na, err := n.fsys.c.GetByID(ctx, n.id); err == nil {
				of.refresh(na)
			}
		}
	}
	return 0
}

// Removexattr clears a directory's default layout; a file's layout cannot
// be removed (EPERM).
func (n *node) Removexattr(ctx context.Context, name string) syscall.Errno {
	n.fsys.forgetDirAttrs(n.id) // its ctime moves
	switch name {
	case XattrLayout:
	case XattrServers:
		return syscall.EPERM
	default:
		return syscall.ENODATA
	}
	if !n.dir {
		return syscall.EPERM
	}
	ctx, cancel := n.fsys.ctx(ctx)
	defer cancel()
	a, errno := n.attr(ctx)
	if errno != 0 {
		return errno
	}
	if a.Layout.IsZero() {
		return syscall.ENODATA
	}
	p := n.path()
	if err := n.fsys.c.SetLayout(n.itself(ctx), p, dist.Layout{}); err != nil {
		return n.fsys.errno("removexattr", p, err)
	}
	return 0
}

// clip cuts what a user wrote (and an error quoting it) for the log: a
// value of 60 KB made a 60 KB log line at every setxattr.
func clip(s string) string {
	const most = 256
	if len(s) <= most {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:most], ""), len(s))
}
