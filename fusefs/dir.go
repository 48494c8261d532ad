package fusefs

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/client"
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
	dir  *node
	path string
	// cred is who opened the listing (nil: the client's own): later
	// pages are read as them.
	cred *meta.Cred
	page []meta.DirEntry
	i    int    // next entry of page
	base uint64 // ordinal of the entry before page[0]
	next string // cookie of the page after page; "" when page is the last

	// For READDIRPLUS: when the page was read, and the sizes of its
	// files (nil until the kernel first asks for attributes).
	read    time.Time
	gen     uint64 // the lease held when the page was read (leaseGen)
	batches uint64 // changes applied by then (changeBatches)
	usage   []client.Usage
	uerr    []error
}

// dirStream is the directory's file handle itself (node.OpendirHandle),
// not a gofs.DirStream: go-fuse asks only a handle for READDIRPLUS's
// attributes (FileLookuper), and would otherwise look every entry up
// through node.Lookup, a metadata call per entry.
var (
	_ gofs.FileReaddirenter = (*dirStream)(nil)
	_ gofs.FileSeekdirer    = (*dirStream)(nil)
	_ gofs.FileLookuper     = (*dirStream)(nil)
	_ gofs.FileReleasedirer = (*dirStream)(nil)
)

// openDirStream reads the first page, so that a directory that cannot be
// listed fails opendir with its own errno (EACCES, ENOENT).
func (fsys *fileSystem) openDirStream(ctx context.Context, dir *node) (*dirStream, syscall.Errno) {
	d := &dirStream{fsys: fsys, dir: dir, path: dir.path()}
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
	if cookie == "" {
		if l, ok := d.fsys.listings.get(d.fsys, d.dir.id, d.cred); ok {
			d.base += uint64(len(d.page))
			d.page, d.i, d.next, d.read, d.gen, d.batches = d.fsys.withoutQueued(d.dir.id, l.page), 0, l.next, l.read, l.gen, l.batches
			d.usage, d.uerr = nil, nil
			d.fsys.stats.listingsReused.Add(1)
			return 0
		}
	}
	if d.cred != nil {
		ctx = meta.WithCred(ctx, *d.cred)
	}
	// A listing does not wait for the unlinks this mount answered and
	// has not sent: it leaves out the names they removed (no one else
	// changes the directory while they are queued: delegated.go). It
	// waits for the attribute changes of its files answered here, which
	// its attributes must show (attrhere.go), for the creates answered
	// here, whose names it must show (createhere.go), and, as every
	// request by a path, for the modes on its path (node.viaPath).
	ctx, cancel := d.dir.ctxVia(ctx, func(q queuedOp) bool { return q.changesAttrsIn(d.dir.id) || q.addsTo(d.dir.id) })
	defer cancel()
	read, gen, batches := time.Now(), d.fsys.leaseGen(), d.fsys.changeBatches()
	page, next, err := d.fsys.c.ReaddirPage(d.dir.itself(ctx), d.path, cookie, 0)
	if err != nil {
		return d.fsys.errno("readdir", d.path, err)
	}
	page = d.fsys.withoutQueued(d.dir.id, page)
	if cookie == "" {
		d.fsys.listings.put(recentListing{dir: d.dir.id, cred: d.cred, page: page, next: next, read: read, gen: gen, batches: batches})
	}
	d.base += uint64(len(d.page))
	d.page, d.i, d.next, d.read, d.gen, d.batches = page, 0, next, read, gen, batches
	d.usage, d.uerr = nil, nil
	return 0
}

// plusMaxAge is how old a page may be when its attributes go to the
// kernel while changes are being applied: changes are recognised
// (lease.changed) for about freshWindow.
const plusMaxAge = freshWindow / 2

// Lookup answers READDIRPLUS for the entry Readdirent gave last: its
// attributes come with the page, its size from the I/O servers, asked
// for the page's files at once, so that ls -l costs no round trip per
// entry. An entry that changed since the page was read, a page that
// cannot tell (see current), and a file open here (its size moves) get
// no attributes: the kernel then looks the name up itself.
func (d *dirStream) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	fsys := d.fsys
	if d.i == 0 || d.i > len(d.page) || d.page[d.i-1].Name != name ||
		d.gen == 0 || fsys.leaseGen() != d.gen {
		return nil, syscall.EAGAIN
	}
	a := d.page[d.i-1].Attr
	var u client.Usage
	if a.Kind == meta.KindFile {
		if d.usage == nil {
			d.sizes(ctx)
		}
		if d.uerr[d.i-1] != nil {
			return nil, syscall.EAGAIN
		}
		u = d.usage[d.i-1]
	}
	// After the sizes, which take a while on a busy machine.
	// The directory itself changed: this mount's own renames and unlinks
	// in it (ownChanged) may have moved an entry whose ID it did not know.
	if !d.current() || fsys.changedSince(a.ID, d.read) || fsys.changedSince(d.dir.id, d.read) ||
		fsys.openFile(a.ID) != nil {
		return nil, syscall.EAGAIN
	}
	if a.Kind == meta.KindFile {
		fsys.lookedUp(a.ID, d.read)
	}
	fsys.sawDirAttrs(a, u, d.read)
	fsys.entry(out, a, u)
	return d.dir.newChild(ctx, a), 0
}

// current reports whether the page's attributes may still go to the
// kernel: read under the lease held now, and either recent enough that
// changedSince knows of every change since, or with no change at all
// applied since (a page of a large listing on a busy machine, whose
// sizes took longer than plusMaxAge).
func (d *dirStream) current() bool {
	if d.fsys.leaseGen() != d.gen {
		return false
	}
	return time.Since(d.read) <= plusMaxAge || d.fsys.changeBatches() == d.batches
}

// sizes asks the I/O servers for the sizes of the page's files, one
// batch per server (client.UsagesOf: a page of 4,096 files on 4 servers
// costs 4 round trips, not 16,384), but for those another listing read
// just before (recentSizes).
func (d *dirStream) sizes(ctx context.Context) {
	// The I/O servers alone: no queued operation changes a size, and the
	// page leaves out the files queued unlinks remove (fetch), so rm -r's
	// listing of the next directory does not wait for the unlinks it
	// answered in the last one.
	ctx, cancel := d.fsys.ctxNoWait(ctx)
	defer cancel()
	d.usage, d.uerr = make([]client.Usage, len(d.page)), make([]error, len(d.page))
	start, gen := time.Now(), d.fsys.leaseGen()
	var ask []meta.Attr
	var at []int // ask[k] is d.page[at[k]]
	for i := range d.page {
		a := d.page[i].Attr
		if a.Kind != meta.KindFile {
			continue
		}
		if u, ok := d.fsys.recent.get(d.fsys, a.ID, gen); ok {
			d.usage[i] = u
			continue
		}
		if u, ok := d.fsys.madeSize(a.ID, d.dir.id); ok {
			d.usage[i] = u
			continue
		}
		ask, at = append(ask, a), append(at, i)
	}
	if len(ask) == 0 {
		return
	}
	// A failed batch (a connection lost, a server restarting) is asked
	// again once, for the files it failed: otherwise every entry of the
	// page would become a lookup of its own. A second failure leaves
	// those entries to the kernel's lookups.
	for try := 0; try < 2 && len(ask) > 0; try++ {
		us, errs := usagesOf(d.fsys.c, ctx, ask)
		var again []meta.Attr
		var againAt []int
		for k, i := range at {
			d.usage[i], d.uerr[i] = us[k], errs[k]
			switch {
			case errs[k] == nil:
				if d.fsys.openFile(ask[k].ID) == nil {
					d.fsys.recent.put(ask[k].ID, us[k], start, gen)
				}
			case ctx.Err() == nil:
				again, againAt = append(again, ask[k]), append(againAt, i)
			}
		}
		ask, at = again, againAt
	}
}

// usagesOf is client.Client.UsagesOf; tests make it fail.
var usagesOf = (*client.Client).UsagesOf

// recentSizes holds the sizes READDIRPLUS read in the last plusMaxAge,
// for a listing of the same directory right after: coreutils' rm -r
// lists every directory twice. A size is used again only under the same
// lease and with no change to the file since it was read (as a page's
// attributes are, see Lookup).
type recentSizes struct {
	mu sync.Mutex
	m  map[meta.FileID]recentSize
}

type recentSize struct {
	u   client.Usage
	at  time.Time // when the read began
	gen uint64
}

// maxRecentSizes bounds recentSizes; older entries go first.
const maxRecentSizes = 4096

func (r *recentSizes) get(fsys *fileSystem, id meta.FileID, gen uint64) (client.Usage, bool) {
	r.mu.Lock()
	e, ok := r.m[id]
	r.mu.Unlock()
	if !ok || gen == 0 || e.gen != gen || time.Since(e.at) > plusMaxAge || fsys.changedSince(id, e.at) {
		return client.Usage{}, false
	}
	return e.u, true
}

func (r *recentSizes) put(id meta.FileID, u client.Usage, at time.Time, gen uint64) {
	if gen == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[meta.FileID]recentSize{}
	}
	makeRoom(r.m, maxRecentSizes, plusMaxAge, func(e recentSize) time.Time { return e.at })
	r.m[id] = recentSize{u: u, at: at, gen: gen}
}

// recentListings keeps the first pages of the last few listings for
// plusMaxAge: rm -r opens every directory twice in a row (to see whether
// it is empty, then to read it), and each opendir read its first page
// from the metadata server. A page is used again only by the same caller,
// under the same lease, while no change to the directory (a name added
// or removed, by anyone: changedSince) came after it was read; its
// entries' attributes are then checked one by one as any page's are
// (dirStream.Lookup).
type recentListings struct {
	mu   sync.Mutex
	last []recentListing // newest last
}

type recentListing struct {
	dir     meta.FileID
	cred    *meta.Cred
	page    []meta.DirEntry
	next    string
	read    time.Time
	gen     uint64
	batches uint64
}

// Bounds of recentListings: a few pages, none large, so that the mount
// still holds about one page per open directory.
const (
	maxRecentListings   = 4
	maxRecentListingLen = 1024
)

func (r *recentListings) get(fsys *fileSystem, dir meta.FileID, cred *meta.Cred) (recentListing, bool) {
	r.mu.Lock()
	var l recentListing
	ok := false
	for i := len(r.last) - 1; i >= 0; i-- {
		if r.last[i].dir == dir {
			l, ok = r.last[i], true
			break
		}
	}
	r.mu.Unlock()
	switch {
	case !ok, l.gen == 0, l.gen != fsys.leaseGen(), time.Since(l.read) > plusMaxAge,
		(l.cred == nil) != (cred == nil), l.cred != nil && !sameCred(*l.cred, *cred),
		fsys.changedSince(dir, l.read):
		return recentListing{}, false
	}
	return l, true
}

func (r *recentListings) put(l recentListing) {
	if l.gen == 0 || len(l.page) > maxRecentListingLen {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = slices.DeleteFunc(r.last, func(o recentListing) bool { return o.dir == l.dir })
	if len(r.last) >= maxRecentListings {
		r.last = slices.Delete(r.last, 0, 1)
	}
	r.last = append(r.last, l)
}

// Readdirent returns the next entry: name, type and inode number (the
// FileID), attributes only through Lookup; nil after the last. It fetches
// the next page when this one is used up; a failure leaves the position
// where it was, so that the kernel can ask again.
func (d *dirStream) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	for d.i == len(d.page) {
		if d.next == "" {
			return nil, 0
		}
		if errno := d.fetch(ctx, d.next); errno != 0 {
			return nil, errno
		}
	}
	e := d.page[d.i]
	d.i++
	return &fuse.DirEntry{Name: e.Name, Mode: typeBits(e.Attr.Kind), Ino: uint64(e.Attr.ID), Off: d.base + uint64(d.i)}, 0
}

// Seekdir goes on after the off-th entry (0: from the start).
func (d *dirStream) Seekdir(ctx context.Context, off uint64) syscall.Errno {
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

// Releasedir drops the page.
func (d *dirStream) Releasedir(context.Context, uint32) { d.page, d.usage, d.uerr = nil, nil, nil }
