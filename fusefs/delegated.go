package fusefs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pario/pario/server/meta"
)

// Unlinks answered by the mount (docs/mount.md, "Unlinks answered by the
// mount").
//
// A directory this mount makes under its lease is made its own by the
// metadata server in the same request (meta.Store.MkdirHeld; with a
// server from before it, asked for right after, meta.Store.Delegate),
// while it is still empty. While the mount holds it, an unlink there of a
// name the kernel holds under the lease (and the rmdir of a directory it
// also holds and knows to be empty) is answered here at once, after the
// permission check the server would make, and queued, as are the
// attribute changes of files the mount made there (attrhere.go) and the
// creates (createhere.go); a flusher sends the queue in batches
// (meta.Store.ApplyBatch), one transaction each. The rules
// that keep this invisible to everyone else:
//
//   - every request this mount sends to the metadata server first waits
//     until the queued operations that could change its outcome have been
//     applied (fsys.ctx: all of them), so the server never sees this
//     mount's requests out of an order that matters: a getattr waits only
//     for those that touch its inode (ctxFor), a create for the removes
//     (ctxNew); a listing instead leaves out the names the queue removes
//     (withoutQueued), and waits for the attribute changes and creates
//     in it; and each request by a path waits for the mode changes of
//     the directories on it (node.viaPath), since the server checks the
//     caller's permission at each of them;
//   - every request by anyone else that reaches the directory recalls the
//     delegation: the watch loop gives it up, waits for the queue to be
//     applied and the data of the files made there to reach the I/O
//     servers, and only then acknowledges (recalled), and the request
//     goes on after that acknowledgement;
//   - a new lease (a restarted server, a lapse) ends every delegation.
//
// What is lost: the queue, if the mount dies before it is sent (as a
// local file system loses unlinks not yet written back by a power cut;
// fsync(2) on the directory, or any other request, sends it first).

const (
	// maxRemoveBatch bounds the operations of one batch.
	maxRemoveBatch = 1024
	// maxQueued bounds the operations waiting to be sent (some 6 MiB):
	// past it, unlinks and attribute changes go to the metadata server one
	// by one, after the queue, until it drains (a slow or unreachable
	// server).
	maxQueued = 1 << 16
)

// removeBatchDelay is how long the flusher lets unlinks and attribute
// changes gather before it sends a batch that nobody waits for (a
// variable for tests, which make it long so that only a wait for the
// queue can have applied it). At 2 ms tar x sent a batch for every two
// files; at 10 ms one for every six, and mdtest's removes went no slower.
var removeBatchDelay = 10 * time.Millisecond

// delegateAnswered, if set, runs when the metadata server has answered a
// request for a delegation, before the mount takes it (tests hold it
// there while another client's request recalls the directory).
var delegateAnswered atomic.Pointer[func()]

// delegState is the mount's delegated directories and the operations
// answered here and not yet applied by the metadata server.
type delegState struct {
	mu       sync.Mutex
	dirs     map[meta.FileID]delegDir
	queue    []queuedOp
	queued   uint64        // operations ever queued
	applied  uint64        // operations the metadata server has answered
	setattrs uint64        // of those queued, attribute changes
	urgent   bool          // someone waits for the queue
	wake     chan struct{} // has a value when the queue grew or urgent was set
	progress chan struct{} // closed and replaced whenever applied grows
	off      bool          // the metadata server does not delegate
	// asking holds the directories whose delegation has been asked for
	// and not yet answered; true once a recall of one came meanwhile.
	// The recall can overtake the grant (it comes through the watch
	// loop, the grant on another connection), and was acknowledged with
	// nothing to give up: such a grant is not taken.
	asking   map[meta.FileID]bool
	stop     context.CancelFunc
	done     chan struct{}
	failures int // batches that failed in a row

	// The creates answered here (createhere.go): the token naming this
	// mount's reservations, its spare reserved IDs by the layout of the
	// files they are for, and whether the metadata server reserves none.
	owner       uint64
	spare       map[string]*spareIDs // by fileKey
	nextReserve int                  // IDs the next reservation asks for
	noReserve   bool
	refilling   bool           // a reservation runs in the background
	bg          sync.WaitGroup // it, for unmount to wait for
	// mkdirs counts the mkdirs in flight that ask for their directory
	// held (mkdir); lateRecalls, while there are any, the directories
	// recalled meanwhile, which asking cannot name before the answer.
	mkdirs      int
	lateRecalls map[meta.FileID]bool
	noMkdirHeld bool   // the metadata server has no MkdirHeld
	creates     uint64 // operations queued that are creates
	returns     uint64 // those that give a reserved ID back
	// dirModes counts the queued operations marked dirMode; read
	// without mu, so that requests need not look at the queue while
	// there are none.
	dirModes atomic.Int64
}

type delegDir struct {
	gen  uint64    // the lease it was given under
	attr meta.Attr // its owner and mode, for the permission check
	// files is what a new file there gets (kind, layout and link count:
	// the spare IDs it takes, createhere.go); Kind 0 until the metadata
	// server has said. key is fileKey(files), the spare IDs' key.
	files meta.Attr
	key   string
	// madeIn is the held directory this mount made it in (MkdirHeld),
	// while it keeps its name there: its chmod and utimes may then be
	// answered here (attrhere.go). 0 otherwise.
	madeIn meta.FileID
	// timesKnown: attr's mtime and ctime are the metadata server's once
	// the queue is applied, while the directory's names have changed
	// timesAt times since it was made (dirtimes.go).
	timesKnown bool
	timesAt    uint64
}

// queuedOp is an unlink, rmdir, attribute change or create answered
// here, or a reserved ID given back; the queue holds them in the order
// they were answered, queue[i] being operation number applied+i+1.
type queuedOp struct {
	op   meta.BatchOp
	cred meta.Cred // who made it (uid, gid, groups)
	// dirMode marks a directory's mode change: until it is applied, the
	// metadata server judges requests by paths through the directory by
	// the mode before it (node.ctxVia).
	dirMode bool
}

// removes reports whether the operation removes a name.
func (q queuedOp) removes() bool {
	return q.op.SetAttr == nil && q.op.Create == nil && !q.op.Unreserve
}

// touches reports whether the operation changes inode id: makes it,
// removes it or a name in it, adds a name to it, or changes its
// attributes. A reserved ID given back is no one's.
func (q queuedOp) touches(id meta.FileID) bool {
	switch {
	case q.op.Unreserve:
		return false
	case q.op.SetAttr != nil:
		return q.op.Self == id
	}
	return q.op.Dir == id || q.op.Self == id
}

// addsTo reports whether the operation makes a file in directory dir.
func (q queuedOp) addsTo(dir meta.FileID) bool {
	return q.op.Create != nil && q.op.Dir == dir
}

// changesAttrsIn reports whether the operation changes the attributes of
// an entry of directory dir.
func (q queuedOp) changesAttrsIn(dir meta.FileID) bool {
	return q.op.SetAttr != nil && q.op.Dir == dir
}

// startDelegations starts the flusher.
func (fsys *fileSystem) startDelegations() {
	d := &fsys.deleg
	ctx, cancel := context.WithCancel(context.Background())
	d.mu.Lock()
	d.owner, d.nextReserve = newOwnerToken(), firstReserve
	d.wake = make(chan struct{}, 1)
	d.progress = make(chan struct{})
	d.stop, d.done = cancel, make(chan struct{})
	d.mu.Unlock()
	go func() {
		defer close(d.done)
		fsys.flushLoop(ctx)
	}()
}

// stopDelegations sends what is queued (for at most OpTimeout) and stops
// the flusher.
func (fsys *fileSystem) stopDelegations() {
	d := &fsys.deleg
	if d.stop == nil {
		return
	}
	d.bg.Wait() // a reservation under way adds to what goes back
	d.mu.Lock()
	d.giveBackAllLocked()
	d.mu.Unlock()
	// The data of files whose closes did not wait for it
	// (closeWithoutWaiting) and whose release has not come.
	fsys.settleMadeIn(nil)
	ctx, cancel := context.WithTimeout(context.Background(), fsys.opts.OpTimeout)
	if err := fsys.flushQueue(ctx); err != nil {
		fsys.log.Error("pario mount: creates, unlinks and attribute changes answered here were not all applied by the metadata server before unmount", "err", err)
	}
	cancel()
	d.stop()
	<-d.done
}

// delegate asks for the directory this mount just made at p (attributes
// a) under lease gen, while it is still empty.
func (fsys *fileSystem) delegate(ctx context.Context, p string, a meta.Attr, gen uint64) {
	d := &fsys.deleg
	d.mu.Lock()
	off := d.off || d.stop == nil
	d.mu.Unlock()
	if off || gen == 0 || a.Mode&syscall.S_ISVTX != 0 {
		return
	}
	d.mu.Lock()
	if d.asking == nil {
		d.asking = map[meta.FileID]bool{}
	}
	d.asking[a.ID] = false
	d.mu.Unlock()
	got, given, err := fsys.c.Delegate(meta.WithExpect(ctx, meta.Expect{Self: a.ID}), p)
	if f := delegateAnswered.Load(); f != nil {
		(*f)()
	}
	sameLease := fsys.leaseGen() == gen
	d.mu.Lock()
	defer d.mu.Unlock()
	recalled := d.asking[a.ID]
	delete(d.asking, a.ID)
	if errors.Is(err, syscall.ENOSYS) {
		d.off = true
		return
	}
	if err != nil || !given || recalled || got.ID != a.ID || !sameLease {
		return // refused, recalled already, or forgotten with the lease
	}
	if d.dirs == nil {
		d.dirs = map[meta.FileID]delegDir{}
	}
	d.dirs[got.ID] = delegDir{gen: gen, attr: got}
}

// mkdir makes the directory p (mode) in directory parent for the request
// ctx and, if it can, asks for it held by this mount under lease gen,
// with IDs reserved for its files unless the mount has some spare, in the
// same request (meta.Store.MkdirHeld). asked reports that the delegation
// was asked for (given or not): delegate need not ask again.
func (fsys *fileSystem) mkdir(ctx context.Context, parent meta.FileID, p string, mode uint32, gen uint64) (a meta.Attr, asked bool, err error) {
	d := &fsys.deleg
	d.mu.Lock()
	off := d.off || d.noMkdirHeld || d.stop == nil || gen == 0 || mode&syscall.S_ISVTX != 0
	want := 0
	if !off {
		d.mkdirs++
		if !d.spareForLocked(parent) {
			want = d.nextReserve
		}
	}
	owner := d.owner
	d.mu.Unlock()
	if off {
		a, err = fsys.c.MkdirAttr(ctx, p, mode)
		return a, false, err
	}
	a, given, ids, err := fsys.c.MkdirHeld(ctx, p, mode, owner, want)
	if f := delegateAnswered.Load(); f != nil {
		(*f)()
	}
	sameLease := fsys.leaseGen() == gen
	d.mu.Lock()
	defer d.mu.Unlock()
	recalled := d.lateRecalls[a.ID]
	if d.mkdirs--; d.mkdirs == 0 {
		d.lateRecalls = nil
	}
	if errors.Is(err, syscall.ENOSYS) {
		// A metadata server from before MkdirHeld (nothing was made).
		d.noMkdirHeld = true
		d.mu.Unlock()
		a, err = fsys.c.MkdirAttr(ctx, p, mode)
		d.mu.Lock()
		return a, false, err
	}
	if err != nil || !given {
		return a, true, err
	}
	// The IDs are the mount's whatever becomes of the directory.
	d.addSpareLocked(ids, time.Now())
	if recalled || !sameLease {
		// Recalled before this answer came (see asking), or forgotten
		// with the lease: not taken.
		return a, true, nil
	}
	if d.dirs == nil {
		d.dirs = map[meta.FileID]delegDir{}
	}
	var madeIn meta.FileID
	if p, ok := d.dirs[parent]; ok && p.gen == gen {
		// Held since before this mkdir: delegations are given only to
		// directories just made, so parent stays held from now until it
		// is recalled, and no one else learns this directory before.
		madeIn = parent
	}
	d.dirs[a.ID] = delegDir{gen: gen, attr: a, files: ids.Layout, key: fileKey(ids.Layout), madeIn: madeIn, timesKnown: true}
	return a, true, nil
}

// unlinkHere answers the unlink of name in directory n itself, when n is
// delegated to this mount, the kernel holds the name under the lease, and
// the file is not open here (those keep their data until closed, which
// the metadata server's answer arranges). It reports whether it answered.
func (n *node) unlinkHere(ctx context.Context, name string) (bool, syscall.Errno) {
	id, ok := n.cachedChild(name, false)
	if !ok {
		return false, 0
	}
	if of, open := n.fsys.openByDescriptor(id); open {
		return false, 0
	} else if of != nil {
		// Closed, its release under way: the data it waits for first,
		// so that no write reaches a datafile the unlink removes.
		of.wb.wait()
	}
	done, errno := n.removeHere(ctx, "unlink", meta.BatchOp{Dir: n.id, Name: name, Self: id})
	if done && errno == 0 {
		n.fsys.removedName(n.id, name)
		n.fsys.ownChanged(n.id, id)
	}
	return done, errno
}

// rmdirHere answers the rmdir of name in directory n itself, when both n
// and the directory are delegated to this mount and the mount knows the
// directory is empty (names.go: it made it, and every name added or
// removed since went through this mount). It reports whether it answered.
func (n *node) rmdirHere(ctx context.Context, name string) (bool, syscall.Errno) {
	id, ok := n.cachedChild(name, true)
	if !ok || !n.fsys.holds(id) || !n.fsys.knowsEmpty(id) {
		return false, 0
	}
	done, errno := n.removeHere(ctx, "rmdir", meta.BatchOp{Dir: n.id, Name: name, Self: id, Rmdir: true})
	if done && errno == 0 {
		n.fsys.undelegate(id)
		n.fsys.removedName(n.id, name)
		n.fsys.forgetNames(id)
		n.fsys.ownChanged(n.id, id)
	}
	return done, errno
}

// holds reports whether the mount holds dir's delegation under its lease.
func (fsys *fileSystem) holds(dir meta.FileID) bool {
	gen := fsys.leaseGen()
	d := &fsys.deleg
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.dirs[dir]
	return ok && gen != 0 && g.gen == gen
}

// withoutQueued returns the entries of directory dir (a page of its
// listing) less those the queue removes: what the listing shows once the
// queue is applied.
func (fsys *fileSystem) withoutQueued(dir meta.FileID, page []meta.DirEntry) []meta.DirEntry {
	d := &fsys.deleg
	d.mu.Lock()
	var gone map[string]meta.FileID
	for _, q := range d.queue {
		if q.op.Dir == dir && q.removes() {
			if gone == nil {
				gone = map[string]meta.FileID{}
			}
			gone[q.op.Name] = q.op.Self
		}
	}
	d.mu.Unlock()
	if gone == nil {
		return page
	}
	out := page[:0:0]
	for _, e := range page {
		if id, ok := gone[e.Name]; ok && id == e.Attr.ID {
			continue
		}
		out = append(out, e)
	}
	return out
}

// heldAmong returns the directories the changes name (as ID or Parent)
// that the mount holds under its lease; nil if none.
func (fsys *fileSystem) heldAmong(changes []meta.Change) map[meta.FileID]bool {
	gen := fsys.leaseGen()
	d := &fsys.deleg
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.dirs) == 0 || gen == 0 {
		return nil
	}
	var held map[meta.FileID]bool
	for _, c := range changes {
		for _, id := range []meta.FileID{c.ID, c.Parent} {
			if g, ok := d.dirs[id]; ok && g.gen == gen {
				if held == nil {
					held = map[meta.FileID]bool{}
				}
				held[id] = true
			}
		}
	}
	return held
}

// removeHere queues op when directory n is delegated to this mount under
// its lease and the caller may remove from it, and reports whether it
// answered (with the errno of a failed permission check).
func (n *node) removeHere(ctx context.Context, what string, op meta.BatchOp) (bool, syscall.Errno) {
	fsys := n.fsys
	gen := fsys.leaseGen()
	if gen == 0 {
		return false, 0
	}
	cred, ok := meta.CredFrom(ctx)
	if !ok || (cred.Uid == 0 && !fsys.rootIsRoot.Load()) {
		return false, 0 // root may be squashed: let the server judge
	}
	d := &fsys.deleg
	d.mu.Lock()
	g, ok := d.dirs[n.id]
	if !ok || g.gen != gen || len(d.queue) >= maxQueued {
		d.mu.Unlock()
		return false, 0
	}
	// The victim's owner matters only in a sticky directory, which is
	// never delegated.
	if err := meta.MayRemoveFrom(&g.attr, &meta.Attr{}, cred); err != nil {
		d.mu.Unlock()
		return true, fsys.errno(what, n.child(op.Name), err)
	}
	d.enqueueLocked(queuedOp{op: op, cred: cred})
	d.mu.Unlock()
	return true, 0
}

// enqueueLocked queues q and wakes the flusher.
func (d *delegState) enqueueLocked(q queuedOp) {
	d.queue = append(d.queue, q)
	d.queued++
	if q.dirMode {
		d.dirModes.Add(1)
	}
	switch op := q.op; {
	case op.SetAttr != nil:
		d.setattrs++
	case op.Create != nil:
		d.creates++
	case op.Unreserve:
		d.returns++
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// delegatedAttr records dir's attributes as a setattr through this mount
// answered them (a, err), if the mount holds dir: the permission check of
// the unlinks answered here uses them. A failed setattr, whose outcome
// may be unknown, or an answer for another entry, ends the delegation
// here instead.
func (fsys *fileSystem) delegatedAttr(dir meta.FileID, a meta.Attr, err error) {
	d := &fsys.deleg
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.dirs[dir]
	switch {
	case !ok:
	case err != nil || a.ID != dir || a.Mode&syscall.S_ISVTX != 0:
		delete(d.dirs, dir)
	default:
		g.attr = a
		d.dirs[dir] = g
	}
}

// undelegate gives up the delegation of dir here (it goes).
func (fsys *fileSystem) undelegate(dir meta.FileID) {
	d := &fsys.deleg
	d.mu.Lock()
	delete(d.dirs, dir)
	d.mu.Unlock()
}

// recalled gives up the delegations recalls names (Change.Recall) and,
// if any, waits until the queue is applied and the writes of the files
// made there have reached the I/O servers: the watch loop acknowledges
// them only after that. Other changes naming a delegated directory need
// nothing: another client's reached it only after a recall, and this
// mount's own (a chmod) it has applied already.
func (fsys *fileSystem) recalled(ctx context.Context, recalls []meta.Change) {
	if len(recalls) == 0 {
		return
	}
	d := &fsys.deleg
	dirs := map[meta.FileID]bool{}
	d.mu.Lock()
	for _, c := range recalls {
		dirs[c.ID] = true
		delete(d.dirs, c.ID)
		if _, ok := d.asking[c.ID]; ok {
			d.asking[c.ID] = true
		}
		if d.mkdirs > 0 {
			// Perhaps of a directory a mkdir in flight made.
			if d.lateRecalls == nil {
				d.lateRecalls = map[meta.FileID]bool{}
			}
			d.lateRecalls[c.ID] = true
		}
	}
	pending := d.applied < d.queued
	d.mu.Unlock()
	// The data of files made there whose closes did not wait for it
	// (closeWithoutWaiting), before another client may read them.
	fsys.settleMadeIn(dirs)
	if !pending {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, fsys.opts.OpTimeout)
	defer cancel()
	if err := fsys.flushQueue(fctx); err != nil {
		fsys.log.Error("pario mount: a delegated directory was recalled before what was answered in it (unlinks, attribute changes) could be applied; another client may see the old names and attributes until they are", "err", err)
	}
}

// leaseChanged ends every delegation: the metadata server gave them with
// a lease that has ended. What is queued is still sent.
func (fsys *fileSystem) leaseChanged() {
	d := &fsys.deleg
	d.mu.Lock()
	d.dirs = nil
	d.giveBackAllLocked()
	d.mu.Unlock()
}

// flushQueue waits until every operation queued before it has been
// applied by the metadata server, or ctx ends.
func (fsys *fileSystem) flushQueue(ctx context.Context) error {
	return fsys.flushThrough(ctx, nil)
}

// flushThrough waits until the queued operations up to the last one that
// matters (nil: every one) have been applied by the metadata server, or
// ctx ends: those after it cannot change what the caller asks.
func (fsys *fileSystem) flushThrough(ctx context.Context, matters func(queuedOp) bool) error {
	d := &fsys.deleg
	d.mu.Lock()
	target := d.queued
	if matters != nil {
		last := -1
		for i, q := range d.queue {
			if matters(q) {
				last = i
			}
		}
		target = d.applied + uint64(last+1)
	}
	if d.applied >= target {
		d.mu.Unlock()
		return nil
	}
	d.urgent = true
	select {
	case d.wake <- struct{}{}:
	default:
	}
	for d.applied < target {
		ch := d.progress
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		d.mu.Lock()
	}
	d.mu.Unlock()
	return nil
}

// flushLoop sends the queue in batches until ctx ends.
func (fsys *fileSystem) flushLoop(ctx context.Context) {
	d := &fsys.deleg
	for {
		d.mu.Lock()
		for len(d.queue) == 0 {
			d.mu.Unlock()
			select {
			case <-d.wake:
			case <-ctx.Done():
				return
			}
			d.mu.Lock()
		}
		if !d.urgent && len(d.queue) < maxRemoveBatch {
			d.mu.Unlock()
			if !fsys.gather(ctx) {
				return
			}
			d.mu.Lock()
		}
		// One batch acts for one caller: the longest run of the queue's
		// head that one caller answered. Reserved IDs given back are no
		// caller's: they join any run.
		var first meta.Cred
		n, found := 0, false
		for ; n < len(d.queue) && n < maxRemoveBatch; n++ {
			q := d.queue[n]
			if q.op.Unreserve {
				continue
			}
			if !found {
				first, found = q.cred, true
			} else if !sameCred(q.cred, first) {
				break
			}
		}
		ops := make([]meta.BatchOp, n)
		for i := range ops {
			ops[i] = d.queue[i].op
		}
		// Whoever waits, waits for the rest too: no gathering for it.
		d.urgent = d.urgent && n < len(d.queue)
		d.mu.Unlock()

		// A file created here becomes visible with this batch to anyone
		// who reaches its directory without a recall (the delegation
		// ended with a lease): its data first, which its close may have
		// left (closeWithoutWaiting).
		fsys.settleCreated(ops)
		errs, err := fsys.sendRemoves(ctx, first, ops)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.mu.Lock()
			d.failures++
			f := d.failures
			d.mu.Unlock()
			if f == 1 {
				fsys.log.Warn("pario mount: unlinks and attribute changes answered here could not be applied yet; retrying", "operations", len(ops), "err", err)
			}
			select {
			case <-time.After(min(time.Duration(f)*50*time.Millisecond, time.Second)):
			case <-ctx.Done():
				return
			}
			continue
		}
		for i, e := range errs {
			if e == nil {
				continue
			}
			if ops[i].Create != nil {
				// The file the caller was told it made is not there.
				fsys.log.Error("pario mount: a create answered here was refused by the metadata server: the file and what was written to it are lost",
					"path", fmt.Sprintf("#%d/%s", ops[i].Dir, ops[i].Name), "err", e)
				continue
			}
			// Gone or replaced: someone else removed or replaced it after
			// the delegation was recalled, which the unlink precedes.
			if !errors.Is(e, syscall.ENOENT) && !errors.Is(e, syscall.ESTALE) {
				what := "unlink"
				if ops[i].SetAttr != nil {
					what = "setattr"
				}
				fsys.logFailure(what+" (answered by the mount, refused when applied)", fmt.Sprintf("#%d/%s", ops[i].Dir, ops[i].Name), "", e)
			}
		}
		fsys.stats.batches.Add(1)
		d.mu.Lock()
		if d.failures > 0 {
			fsys.log.Info("pario mount: unlinks and attribute changes answered here are applied again")
		}
		d.failures = 0
		for _, q := range d.queue[:n] {
			if q.dirMode {
				d.dirModes.Add(-1)
			}
		}
		d.queue = append(d.queue[:0:0], d.queue[n:]...)
		d.applied += uint64(n)
		close(d.progress)
		d.progress = make(chan struct{})
		d.mu.Unlock()
	}
}

// settleCreated waits until the writes in flight of the files the
// creates among ops make have reached the I/O servers.
func (fsys *fileSystem) settleCreated(ops []meta.BatchOp) {
	for _, op := range ops {
		if op.Create == nil {
			continue
		}
		if of := fsys.openFile(op.Self); of != nil {
			of.wb.wait()
		}
	}
}

// gather waits removeBatchDelay for more unlinks to queue, or less if
// someone waits for the queue or it holds a full batch; false if ctx
// ended.
func (fsys *fileSystem) gather(ctx context.Context) bool {
	d := &fsys.deleg
	t := time.NewTimer(removeBatchDelay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-d.wake:
			d.mu.Lock()
			now := d.urgent || len(d.queue) >= maxRemoveBatch
			d.mu.Unlock()
			if now {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// sendRemoves sends one batch as cred, marked as this mount's own changes
// (the kernel applied them when it was answered).
func (fsys *fileSystem) sendRemoves(ctx context.Context, cred meta.Cred, ops []meta.BatchOp) ([]error, error) {
	cred.Watcher = fsys.lease.watcher.Load()
	cred.Mount = cred.Watcher
	cctx, cancel := context.WithTimeout(meta.WithCred(ctx, cred), fsys.opts.OpTimeout)
	defer cancel()
	return fsys.c.RemoveBatch(cctx, ops)
}

func sameCred(a, b meta.Cred) bool {
	if a.Uid != b.Uid || a.Gid != b.Gid || len(a.Groups) != len(b.Groups) {
		return false
	}
	for i := range a.Groups {
		if a.Groups[i] != b.Groups[i] {
			return false
		}
	}
	return true
}
