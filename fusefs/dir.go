package fusefs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/server/meta"
)

// dirStream lists a directory for the kernel one page of the metadata
// server's listing at a time, so that a mount holds one page per open
// directory whatever the directory's size.
//
// Offsets are ordinals: the entry listed k-th has offset k, and seeking to
// k goes on after it. A seek within the page at hand costs nothing; any
// other reads the listing again from its start (a rewinddir, or the rare
// seekdir to an earlier telldir), and then names created or removed since
// shift the ordinals, as on any file system whose directories change.
type dirStream struct {
	fsys *fileSystem
	path string
	// cred is who opened the listing (nil: the client's own): later
	// pages are read as them.
	cred *meta.Cred
	page []meta.DirEntry
	i    int    // next entry of page
	base uint64 // ordinal of the entry before page[0]
	next string // cookie of the page after page; "" when page is the last
	err  syscall.Errno
}

var _ gofs.FileSeekdirer = (*dirStream)(nil)

// openDirStream reads the first page, so that a directory that cannot be
// listed fails opendir's first read with its own errno.
func (fsys *fileSystem) openDirStream(ctx context.Context, p string) (*dirStream, syscall.Errno) {
	d := &dirStream{fsys: fsys, path: p}
	if c, ok := meta.CredFrom(fsys.withCaller(ctx)); ok {
		d.cred = &c
	}
	if errno := d.fetch(ctx, ""); errno != 0 {
		return nil, errno
	}
	return d, 0
}

// fetch replaces the page with the one after cookie.
func (d *dirStream) fetch(ctx context.Context, cookie string) syscall.Errno {
	if d.cred != nil {
		ctx = meta.WithCred(ctx, *d.cred)
	}
	ctx, cancel := d.fsys.ctx(ctx)
	defer cancel()
	page, next, err := d.fsys.c.ReaddirPage(ctx, d.path, cookie, 0)
	if err != nil {
		return d.fsys.errno("readdir", d.path, err)
	}
	d.base += uint64(len(d.page))
	d.page, d.i, d.next = page, 0, next
	return 0
}

// HasNext fetches the next page when this one is used up; a failure is
// reported by the Next that follows.
func (d *dirStream) HasNext() bool {
	if d.err != 0 {
		return true
	}
	if d.i < len(d.page) {
		return true
	}
	if d.next == "" {
		return false
	}
	if errno := d.fetch(context.Background(), d.next); errno != 0 {
		d.err = errno
		return true
	}
	return d.i < len(d.page)
}

// Next returns the next entry: name, type and inode number (the FileID),
// no attributes (plain READDIR: see Options in mount.go).
func (d *dirStream) Next() (fuse.DirEntry, syscall.Errno) {
	if d.err != 0 {
		errno := d.err
		d.err = 0
		return fuse.DirEntry{}, errno
	}
	e := d.page[d.i]
	d.i++
	return fuse.DirEntry{Name: e.Name, Mode: typeBits(e.Attr.Kind), Ino: uint64(e.Attr.ID), Off: d.base + uint64(d.i)}, 0
}

// Seekdir goes on after the off-th entry (0: from the start).
func (d *dirStream) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	d.err = 0
	if off < d.base {
		// Back before this page: list again from the start.
		d.page, d.i, d.base, d.next = nil, 0, 0, ""
		if errno := d.fetch(ctx, ""); errno != 0 {
			return errno
		}
	}
	for off > d.base+uint64(len(d.page)) && d.next != "" {
		if errno := d.fetch(ctx, d.next); errno != 0 {
			return errno
		}
	}
	d.i = int(min(off-d.base, uint64(len(d.page))))
	return 0
}

// Close drops the page.
func (d *dirStream) Close() { d.page = nil }
