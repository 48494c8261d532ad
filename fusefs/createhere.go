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
// reserved for that directory ahead (meta.Store.Reserve), whose datafiles
// already exist on their I/O servers, gives the file the owner, group and
// mode the metadata server would, and queues the create with the
// directory's unlinks and attribute changes. Writes go to the datafiles
// at once; the create reaches the metadata server in the next batch, and
// before any request of this mount that concerns the file, the directory,
// or what follows from them (ctxFor, ctxIn, a listing), and before any
// other client's request reaches the directory (its recall sends the
// queue first).
//
// What is lost: as for the unlinks, the queue if the mount dies before
// it is sent; fsync(2) of the file or the directory sends it first. The
// reserved IDs the mount did not use go back when it gives the directory
// up (or, if it dies, when the metadata server's reservations expire).

const (
	// firstReserve is how many IDs a directory's first reservation asks
	// for; each next one asks twice as many, up to maxReserveAsk, so that
	// tar's small directories hold few spare IDs and mdtest's large ones
	// ask rarely.
	firstReserve  = 16
	maxReserveAsk = 512
)

// spareIDs are the reserved IDs of one held directory not used yet.
type spareIDs struct {
	file  meta.Attr // the new files' kind, layout and link count
	slots []meta.Slot
	at    time.Time // when they were reserved
	next  int       // how many the next reservation asks for
}

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
// delegated to this mount under its lease and the mount knows name is
// absent from it. It reports whether it answered.
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
	sp := d.spare[n.id]
	if !ok || g.gen != gen || sp == nil || len(sp.slots) == 0 || len(d.queue) >= maxQueued {
		d.mu.Unlock()
		return nil, nil, 0, 0, false
	}
	if err := meta.MayAddTo(&g.attr, cred); err != nil {
		d.mu.Unlock()
		return nil, nil, 0, fsys.errno("create", p, err), true
	}
	a := sp.file
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
	d.enqueueLocked(meta.BatchOp{Dir: n.id, Name: name, Self: a.ID, Owner: d.owner,
		Create: &meta.BatchCreate{Mode: mode & 0o7777, Time: now}}, cred)
	d.mu.Unlock()

	fsys.addedName(n.id, name)
	fsys.ownChanged(n.id)
	child := n.newChild(ctx, a)
	fsys.lookedUp(a.ID, start)
	h, fuseFlags := fsys.adopt(child.Operations().(*node), f, flags)
	fsys.created(h.of, a, start, gen)
	fsys.madeHere(h.of, n.id)
	fsys.entry(out, a, client.Usage{})
	return child, h, fuseFlags, 0, true
}

// haveSpare reports whether held directory dir has a reserved ID young
// enough to use at now.
func (fsys *fileSystem) haveSpare(dir meta.FileID, now time.Time) bool {
	d := &fsys.deleg
	d.mu.Lock()
	defer d.mu.Unlock()
	sp := d.spare[dir]
	return sp != nil && len(sp.slots) > 0 && now.Sub(sp.at) < meta.ReserveUseFor
}

// reserve asks the metadata server for IDs for new files in held
// directory n, giving back those too old to use. A failure leaves n
// without spare IDs: its creates go to the server.
func (fsys *fileSystem) reserve(ctx context.Context, n *node, gen uint64) {
	d := &fsys.deleg
	d.mu.Lock()
	want := firstReserve
	if sp := d.spare[n.id]; sp != nil {
		want = sp.next
		d.giveBackLocked(n.id)
	}
	off := d.noReserve
	d.mu.Unlock()
	if off {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fsys.opts.OpTimeout)
	defer cancel()
	got, err := fsys.c.Reserve(n.itself(fsys.kernelsOwn(rctx)), n.path(), d.owner, want)
	at := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) {
			d.noReserve = true
		}
		return
	}
	sp := &spareIDs{file: got.Layout, slots: got.Slots, at: at, next: min(2*want, maxReserveAsk)}
	if g, ok := d.dirs[n.id]; !ok || g.gen != gen {
		// Given up meanwhile: these go back at once.
		d.returnLocked(sp)
		return
	}
	if d.spare == nil {
		d.spare = map[meta.FileID]*spareIDs{}
	}
	d.spare[n.id] = sp
}

// giveBackLocked queues the return of directory dir's spare IDs, if it
// has any: the directory is given up, or they are too old.
func (d *delegState) giveBackLocked(dir meta.FileID) {
	if sp := d.spare[dir]; sp != nil {
		delete(d.spare, dir)
		d.returnLocked(sp)
	}
}

func (d *delegState) returnLocked(sp *spareIDs) {
	for _, s := range sp.slots {
		d.enqueueLocked(meta.BatchOp{Self: s.ID, Unreserve: true, Owner: d.owner}, meta.Cred{})
	}
}

// dropDirLocked gives up held directory dir here, and its spare IDs.
func (d *delegState) dropDirLocked(dir meta.FileID) {
	delete(d.dirs, dir)
	d.giveBackLocked(dir)
}
