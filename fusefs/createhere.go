package fusefs

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// Creates answered by the mount (docs/mount.md, "Creates answered by the
// mount"; the server's side is server/meta/reserve.go).
//
// In a directory it holds (delegated.go) whose every name it knows
// (names.go), the mount answers a create itself: it takes an ID it
// reserved ahead (meta.Store.MkdirHeld, meta.Store.Reserve) for files of
// the layout that directory gives them, whose datafiles already exist on
// their I/O servers, gives the file the owner, group and mode the
// metadata server would, and queues the create with the directory's
// unlinks and attribute changes. Writes go to the datafiles
// at once; the create reaches the metadata server in the next batch, and
// before any request of this mount that concerns the file, the directory,
// or what follows from them (ctxFor, ctxIn, a listing), and before any
// other client's request reaches the directory (its recall sends the
// queue first).
//
// What is lost: as for the unlinks, the queue if the mount dies before
// it is sent; fsync(2) of the file or the directory sends it first. The
// reserved IDs are the mount's, for any directory it holds whose files
// get their layout; those it did not use go back at unmount, at a new
// lease, and once they are ReserveUseFor old (or, if it dies, when the
// metadata server's reservations expire).

const (
	// firstReserve is how many IDs the mount's first reservation asks
	// for; each next one asks twice as many, up to maxReserveAsk: tar x
	// and mdtest then ask rarely, and a mount that makes one file asks
	// for few.
	firstReserve  = 16
	maxReserveAsk = 512
)

// spareIDs are reserved IDs not used yet, for files of one layout.
type spareIDs struct {
	slots []meta.Slot
	at    time.Time // when the oldest of them was reserved
}

// fileKey names the layout of new files that tmpl (a reservation's
// template: kind, layout, link count) gives: the key of spare IDs.
func fileKey(tmpl meta.Attr) string { return tmpl.Layout.String() }

// newOwnerToken draws the token that names this mount's reservations
// for as long as it runs, across leases (meta.Store.Reserve).
func newOwnerToken() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if t := binary.LittleEndian.Uint64(b[:]); t != 0 {
			return t
		}
	}
}

// createHere answers the create of name in directory n itself, when n is
// delegated to this mount under its lease, the mount knows name is
// absent from it, and which layout its files get. It reports whether it
// answered.
func (n *node) createHere(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno, bool) {
	fsys := n.fsys
	gen := fsys.leaseGen()
	if gen == 0 || !fsys.holds(n.id) || !fsys.knowsAbsent(n.id, name) {
		return nil, nil, 0, 0, false
	}
	cred, ok := meta.CredFrom(ctx)
	if !ok || (cred.Uid == 0 && !fsys.rootIsRoot.Load()) {
		return nil, nil, 0, 0, false // root may be squashed: let the server judge
	}
	p := n.child(name)
	start := time.Now()
	if !fsys.haveSpare(n.id, start) {
		fsys.reserve(ctx, n, gen)
	}
	d := &fsys.deleg
	d.mu.Lock()
	g, ok := d.dirs[n.id]
	if !ok || g.gen != gen || g.files.Kind == 0 || len(d.queue) >= maxQueued {
		d.mu.Unlock()
		return nil, nil, 0, 0, false
	}
	sp := d.spare[g.key]
	if sp == nil || len(sp.slots) == 0 {
		d.mu.Unlock()
		return nil, nil, 0, 0, false
	}
	if err := meta.MayAddTo(&g.attr, cred); err != nil {
		d.mu.Unlock()
		return nil, nil, 0, fsys.errno("create", p, err), true
	}
	a := g.files
	a.ID, a.Servers = sp.slots[0].ID, sp.slots[0].Servers
	a.Uid, a.Gid, a.Mode = meta.NewOwner(&g.attr, cred, meta.KindFile, mode&0o7777)
	now := start.UnixNano()
	a.Atime, a.Mtime, a.Ctime = now, now, now
	f, err := fsys.c.OpenAttr(p, a)
	if err != nil {
		d.mu.Unlock()
		return nil, nil, 0, fsys.errno("create", p, err), true
	}
	sp.slots = sp.slots[1:]
	// Queued under the lock that a recall takes to give the directory
	// up: either the recall's flush carries this create, or this finds
	// the directory given up and the create goes to the server.
	d.enqueueLocked(queuedOp{op: meta.BatchOp{Dir: n.id, Name: name, Self: a.ID, Owner: d.owner,
		Create: &meta.BatchCreate{Mode: mode & 0o7777, Time: now}}, cred: cred})
	// Running low: more are asked for in the background, so that no
	// create waits for a reservation while creates keep coming.
	if refill := len(sp.slots) < d.nextReserve/4 && !d.refilling && d.stop != nil; refill {
		d.refilling = true
		d.bg.Go(func() {
			fsys.reserve(meta.WithCred(context.Background(), cred), n, gen)
			d.mu.Lock()
			d.refilling = false
			d.mu.Unlock()
		})
	}
	d.mu.Unlock()

	fsys.addedName(n.id, name, false)
	fsys.ownChanged(n.id)
	child := n.newChild(ctx, a)
	fsys.lookedUp(a.ID, start)
	h, fuseFlags := fsys.adopt(child.Operations().(*node), f, flags)
	fsys.created(h.of, a, start, gen)
	fsys.madeHere(h.of, n.id)
	fsys.entry(out, a, client.Usage{})
	return child, h, fuseFlags, 0, true
}

// haveSpare reports whether the mount has a reserved ID, young enough to
// use at now, for a file in held directory dir.
func (fsys *fileSystem) haveSpare(dir meta.FileID, now time.Time) bool {
	d := &fsys.deleg
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.dirs[dir]
	if !ok || g.files.Kind == 0 {
		return false
	}
	sp := d.spare[g.key]
	return sp != nil && len(sp.slots) > 0 && now.Sub(sp.at) < meta.ReserveUseFor
}

// reserve asks the metadata server for IDs for new files in held
// directory n, giving back those of the same layout too old to use. A
// failure leaves n without spare IDs: its creates go to the server.
func (fsys *fileSystem) reserve(ctx context.Context, n *node, gen uint64) {
	d := &fsys.deleg
	d.mu.Lock()
	if d.noReserve {
		d.mu.Unlock()
		return
	}
	if g, ok := d.dirs[n.id]; ok && g.files.Kind != 0 {
		d.giveBackLocked(g.key, time.Now())
	}
	want, owner := d.nextWantLocked(), d.owner
	d.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fsys.opts.OpTimeout)
	defer cancel()
	got, err := fsys.c.Reserve(n.itself(fsys.kernelsOwn(rctx)), n.path(), owner, want)
	d.mu.Lock()
	defer d.mu.Unlock()
	if errors.Is(err, syscall.ENOSYS) {
		d.noReserve = true
	}
	if err != nil {
		return
	}
	d.addSpareLocked(got, time.Now())
	// The layout the directory's files get now, as the server said.
	if g, ok := d.dirs[n.id]; ok && g.gen == gen {
		g.files, g.key = got.Layout, fileKey(got.Layout)
		d.dirs[n.id] = g
	}
}

// nextWantLocked is how many IDs a reservation asks for when the spare
// ones ran out: each time twice as many.
func (d *delegState) nextWantLocked() int {
	want := d.nextReserve
	d.nextReserve = min(2*d.nextReserve, maxReserveAsk)
	return want
}

// spareForLocked reports whether the mount likely has spare IDs, young
// enough, for the files of a new directory made in parent: those of its
// parent's files' layout if it holds parent, else (most likely the same
// layout) any. A wrong guess costs the first create there a Reserve.
func (d *delegState) spareForLocked(parent meta.FileID) bool {
	young := func(sp *spareIDs) bool {
		return sp != nil && len(sp.slots) > 0 && time.Since(sp.at) < meta.ReserveUseFor
	}
	if g, ok := d.dirs[parent]; ok && g.files.Kind != 0 {
		return young(d.spare[g.key])
	}
	for _, sp := range d.spare {
		if young(sp) {
			return true
		}
	}
	return false
}

// addSpareLocked adds reserved IDs got, reserved at about at, to the
// spare ones of their layout.
func (d *delegState) addSpareLocked(got meta.ReservedIDs, at time.Time) {
	if len(got.Slots) == 0 {
		return
	}
	key := fileKey(got.Layout)
	if d.spare == nil {
		d.spare = map[string]*spareIDs{}
	}
	sp := d.spare[key]
	if sp == nil {
		sp = &spareIDs{at: at}
		d.spare[key] = sp
	}
	sp.slots = append(sp.slots, got.Slots...)
}

// giveBackLocked queues the return of the spare IDs of layout key if
// they are too old to use at now (zero: all of them).
func (d *delegState) giveBackLocked(key string, now time.Time) {
	sp := d.spare[key]
	if sp == nil || (!now.IsZero() && now.Sub(sp.at) < meta.ReserveUseFor) {
		return
	}
	delete(d.spare, key)
	for _, s := range sp.slots {
		d.enqueueLocked(queuedOp{op: meta.BatchOp{Self: s.ID, Unreserve: true, Owner: d.owner}})
	}
}

// giveBackAllLocked queues the return of every spare ID: at unmount, and
// at a new lease (the metadata server restarted: its meta.db may be a
// restored backup that never reserved them).
func (d *delegState) giveBackAllLocked() {
	for key := range d.spare {
		d.giveBackLocked(key, time.Time{})
	}
}
