package meta

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/dist"
)

// Creates answered by the mount: reserved IDs.
//
// A mount holding a directory's delegation (deleg.go) answers the
// creates in it itself, with IDs it reserved ahead (MkdirHeld, Reserve)
// for files of the layout that directory gives them, and sends them in
// its batches (BatchOp.Create). A file's ID also names its datafiles on
// its I/O servers, so a reserved ID is a pooled one (pool.go): its
// datafiles exist, made exclusively, before the mount is told it, and the
// mount's writes go to them at once.
//
// What keeps one file's bytes out of another (issue 10's first defect),
// and new files' layouts right:
//
//   - a reservation is recorded in meta.db, in the transaction that takes
//     its ID out of the pool, with the mount that owns it (an owner token
//     the mount draws at start, which outlives its leases), the directory
//     it was asked for and the file's layout and servers. Its pool record
//     stays, so that fsck counts its datafiles as pooled rather than
//     orphaned, and a start does not discard it as it does the rest of
//     the pool;
//   - a batch's create applies only an ID reserved to the same owner, and
//     deletes the reservation in its transaction: an ID applies once. A
//     create whose reservation is gone (expired, or meta.db restored from
//     before it) fails, and the mount says so;
//   - the mount uses an ID in any directory it holds whose files get its
//     layout, which the delegation comes with (MkdirHeld, Reserve; read
//     in the transaction that gives it); a SetLayout of a directory
//     recalls every delegation first, so that no mount goes on giving new
//     files a layout that was replaced;
//   - a start gives up the reservations older than ReserveTTL: their IDs
//     join the stale pooled IDs, whose empty datafiles are removed (one
//     holding bytes is left for fsck to report). A mount never uses a
//     reservation older than ReserveUseFor, so that a metadata server
//     restarted while the mount's queue still holds a create finds its
//     reservation;
//   - an unused reservation goes back to the pool when the mount no longer
//     uses it (BatchOp.Unreserve: at unmount, at a new lease, once
//     ReserveUseFor old), or at that expiry if it never does (it died).
//
// Reserved files are never stuffed: a stuffed file's first write past its
// strip asks the metadata server to unstuff it, which cannot wait for the
// create in the mount's queue.

const (
	// maxReserve bounds the IDs one Reserve hands out.
	maxReserve = 1024
	// ReserveTTL is how long a reservation outlives a metadata server
	// start: one older is given up at the start.
	ReserveTTL = time.Hour
	// ReserveUseFor is how long a mount uses a reservation after it was
	// made: well inside ReserveTTL, so that a create queued just before
	// a restart still finds its reservation after it.
	ReserveUseFor = ReserveTTL / 4
)

var bucketReserved = []byte("reserved")

// ReservedIDs is what Reserve hands out: IDs whose datafiles exist, for
// new files of Layout in the directory, each on its servers.
type ReservedIDs struct {
	Layout Attr // a new file's Kind, Layout and Nlink; no ID or servers
	Slots  []Slot
}

// Slot is one reserved ID and the servers of its datafiles, in order.
type Slot struct {
	ID      FileID
	Servers []uint32
}

// reservation is the record of one reserved ID: whose it is, for which
// directory, since when, and the file it makes (ID, layout and servers
// set; owner and times left to the create).
type reservation struct {
	owner uint64
	dir   FileID
	made  int64 // Unix nanoseconds
	file  Attr
}

func (r *reservation) encode() []byte {
	b := make([]byte, 0, 64)
	b = binary.BigEndian.AppendUint64(b, r.owner)
	b = binary.BigEndian.AppendUint64(b, uint64(r.dir))
	b = binary.BigEndian.AppendUint64(b, uint64(r.made))
	return append(b, encodeAttr(&r.file)...)
}

func decodeReservation(v []byte) (reservation, error) {
	if len(v) < 24 {
		return reservation{}, fmt.Errorf("%w: reservation record of %d bytes", errCorrupt, len(v))
	}
	r := reservation{
		owner: binary.BigEndian.Uint64(v),
		dir:   FileID(binary.BigEndian.Uint64(v[8:])),
		made:  int64(binary.BigEndian.Uint64(v[16:])),
	}
	var err error
	if r.file, err = decodeAttr(v[24:]); err != nil {
		return reservation{}, fmt.Errorf("reservation record: %w", err)
	}
	return r, nil
}

// Reserve reserves up to n IDs (at most maxReserve; at least one) for new
// files in the directory at path, which the caller (Cred.Mount) must hold
// delegated, for the mount whose owner token is owner. Each ID's
// datafiles exist on its servers when it returns, and its reservation is
// durable.
func (s *Store) Reserve(ctx context.Context, path string, owner uint64, n int) (ReservedIDs, error) {
	c := credOf(ctx)
	switch {
	case c == nil || c.Mount == 0:
		return ReservedIDs{}, wrapErr("reserve", path, fmt.Errorf("only a mount holding a lease reserves IDs: %w", syscall.EINVAL))
	case owner == 0:
		return ReservedIDs{}, wrapErr("reserve", path, fmt.Errorf("owner token 0: %w", syscall.EINVAL))
	case n < 1 || n > maxReserve:
		return ReservedIDs{}, wrapErr("reserve", path, fmt.Errorf("%d IDs asked, not 1 to %d: %w", n, maxReserve, syscall.EINVAL))
	}
	var tmpl Attr
	var dir FileID
	err := s.view(ctx, "reserve", path, func(t *txn, comps []string) error {
		d, inherit, err := t.walkDir(comps)
		if err != nil {
			return err
		}
		if err := expected("directory", t.expect.Self, &d); err != nil {
			return err
		}
		if err := t.may(&d, MayWrite|MayExec); err != nil {
			return err
		}
		if !s.delegs.holds(d.ID, c.Mount) {
			return fmt.Errorf("directory %d is not delegated to mount %d: %w", d.ID, c.Mount, syscall.EINVAL)
		}
		tmpl, dir = Attr{Kind: KindFile, Nlink: 1}, d.ID
		tmpl.Layout, _, err = s.chooseLayout(dist.Layout{}, inherit)
		return err
	})
	if err != nil {
		return ReservedIDs{}, err
	}
	take, err := s.takeReserved(ctx, tmpl, owner, n)
	if err != nil {
		return ReservedIDs{}, wrapErr("reserve", path, err)
	}
	defer take.settle()
	err = s.mutate(ctx, func(t *txn) error {
		// A SetLayout of a directory above, committed since the layout
		// was read, recalled the delegation first.
		if !s.delegs.holds(dir, c.Mount) {
			return fmt.Errorf("directory %d was recalled from mount %d meanwhile: %w", dir, c.Mount, syscall.EAGAIN)
		}
		return take.record(t, dir)
	})
	if err != nil {
		take.giveBack(ctx)
		return ReservedIDs{}, wrapErr("reserve", path, err)
	}
	return take.ids(tmpl), nil
}

// taken is IDs taken for a reservation, not yet recorded.
type taken struct {
	s        *Store
	recs     []reservation
	unpooled []bool // made now rather than taken from a pool
}

// takeReserved takes up to n IDs for files like tmpl (kind and layout)
// for owner, each placed on the next servers in turn, from their pools.
// It stops early at an empty pool (its refill is under way) rather than
// make each ID's datafiles one by one, unless it has none yet: the mount
// asks again when it needs more.
func (s *Store) takeReserved(ctx context.Context, tmpl Attr, owner uint64, n int) (*taken, error) {
	tk := &taken{s: s}
	made := time.Now().UnixNano()
	for range n {
		f := tmpl
		first := uint32((s.rr.Add(1) - 1) % uint64(s.opts.Servers))
		f.Servers = s.placeFor(dist.Layout{}, first, f.Layout.Datafiles)
		var id FileID
		pooled := false
		if s.batchDatafiles() != nil {
			id, pooled = s.fromPool(f.Servers)
		}
		if !pooled {
			if len(tk.recs) > 0 {
				break
			}
			var err error
			if id, err = s.newFileID(ctx, f.Servers); err != nil {
				return nil, err
			}
		}
		f.ID = id
		tk.recs = append(tk.recs, reservation{owner: owner, made: made, file: f})
		tk.unpooled = append(tk.unpooled, !pooled)
	}
	return tk, nil
}

// record records the reservations for directory dir in t.
func (tk *taken) record(t *txn, dir FileID) error {
	if err := t.setCounter(keyRR, max(t.counter(keyRR), tk.s.rr.Load())); err != nil {
		return err
	}
	pool, res := t.tx.Bucket(bucketPool), t.tx.Bucket(bucketReserved)
	for i := range tk.recs {
		r := &tk.recs[i]
		r.dir = dir
		// The pool record stays (see above); one made now, not taken
		// from a pool, gets one.
		if err := pool.Put(idKey(r.file.ID), encodeServers(r.file.Servers)); err != nil {
			return err
		}
		if err := res.Put(idKey(r.file.ID), r.encode()); err != nil {
			return err
		}
	}
	return nil
}

// settle ends the making marks (makingAdd) of the IDs made now, once
// their reservations are committed, or given back.
func (tk *taken) settle() {
	for i, r := range tk.recs {
		if tk.unpooled[i] {
			tk.s.makingDone(r.file.ID, r.file.Servers)
		}
	}
}

// giveBack returns IDs taken but not recorded: to their pools, or, made
// now, removed.
func (tk *taken) giveBack(ctx context.Context) {
	var pooled []reservation
	for i, r := range tk.recs {
		if tk.unpooled[i] {
			tk.s.removeDatafiles(context.WithoutCancel(ctx), r.file.ID, r.file.Servers)
		} else {
			pooled = append(pooled, r)
		}
	}
	tk.s.putBackAll(pooled)
	tk.settle()
	tk.recs = nil
}

func (tk *taken) ids(tmpl Attr) ReservedIDs {
	out := ReservedIDs{Layout: tmpl, Slots: make([]Slot, len(tk.recs))}
	for i, r := range tk.recs {
		out.Slots[i] = Slot{ID: r.file.ID, Servers: r.file.Servers}
	}
	return out
}

// MkdirHeld is Mkdir, then Delegate of the new directory to the caller
// (Cred.Mount) and Reserve of n IDs in it for owner, in one transaction:
// a mount's mkdir costs one commit where the three cost three (tar x
// makes a directory for every few files). given is false, and no ID
// reserved, where Delegate would refuse (no lease, a sticky directory,
// too many delegations).
func (s *Store) MkdirHeld(ctx context.Context, path string, mode uint32, owner uint64, n int) (a Attr, given bool, ids ReservedIDs, err error) {
	c := credOf(ctx)
	switch {
	case c == nil || c.Mount == 0:
		return Attr{}, false, ReservedIDs{}, wrapErr("mkdir", path, fmt.Errorf("only a mount holding a lease holds a directory: %w", syscall.EINVAL))
	case owner == 0:
		return Attr{}, false, ReservedIDs{}, wrapErr("mkdir", path, fmt.Errorf("owner token 0: %w", syscall.EINVAL))
	case n < 0 || n > maxReserve:
		return Attr{}, false, ReservedIDs{}, wrapErr("mkdir", path, fmt.Errorf("%d IDs asked, not 0 to %d: %w", n, maxReserve, syscall.EINVAL))
	}
	if !s.leaseHeld(c.Mount) || mode&modeSticky != 0 {
		a, err = s.Mkdir(ctx, path, mode)
		return a, false, ReservedIDs{}, err
	}
	// The layout the new directory's files inherit: its parent's.
	tmpl := Attr{Kind: KindFile, Nlink: 1}
	err = s.view(ctx, "mkdir", path, func(t *txn, comps []string) error {
		if len(comps) == 0 {
			return syscall.EEXIST
		}
		_, inherit, err := t.walkDir(comps[:len(comps)-1])
		if err != nil {
			return err
		}
		tmpl.Layout, _, err = s.chooseLayout(dist.Layout{}, inherit)
		return err
	})
	if err != nil {
		return Attr{}, false, ReservedIDs{}, err
	}
	take, err := s.takeReserved(ctx, tmpl, owner, n)
	if err != nil {
		return Attr{}, false, ReservedIDs{}, wrapErr("mkdir", path, err)
	}
	defer take.settle()
	id, err := s.allocID(ctx)
	if err != nil {
		take.giveBack(ctx)
		return Attr{}, false, ReservedIDs{}, wrapErr("mkdir", path, err)
	}
	var fresh bool
	err = s.update(ctx, "mkdir", path, func(t *txn, comps []string) error {
		if fresh {
			s.delegs.drop(id, c.Mount) // fn runs again (committer.update)
		}
		given, fresh = false, false
		var err error
		if a, err = t.mkdir(comps, id, mode); err != nil {
			return err
		}
		if a.Mode&modeSticky != 0 {
			return nil
		}
		// The layout read before may have changed since (SetLayout of
		// a directory above): then the directory is not given.
		var inherit dist.Layout
		if _, inherit, err = t.walkDir(comps[:len(comps)-1]); err != nil {
			return err
		}
		if l, _, err := s.chooseLayout(dist.Layout{}, inherit); err != nil || l != tmpl.Layout {
			return err
		}
		if given, fresh = s.delegs.give(id, c.Mount); !given {
			return nil
		}
		return take.record(t, id)
	})
	if err != nil {
		if fresh {
			s.delegs.drop(id, c.Mount)
		}
		take.giveBack(ctx)
		return Attr{}, false, ReservedIDs{}, err
	}
	if !given {
		take.giveBack(ctx)
		return a, false, ReservedIDs{}, nil
	}
	return a, true, take.ids(tmpl), nil
}

// batchCreate checks a batch's create and returns the directory and the
// new file, not yet added; done reports that an earlier run of the same
// batch applied it already (a retry).
func (t *txn) batchCreate(op BatchOp) (dir, f Attr, done bool, err error) {
	if err := checkName(op.Name); err != nil {
		return Attr{}, Attr{}, false, err
	}
	if dir, err = t.get(op.Dir); err != nil {
		return Attr{}, Attr{}, false, err
	}
	if dir.Kind != KindDir {
		return Attr{}, Attr{}, false, syscall.ENOTDIR
	}
	r, ok, err := t.reserved(op.Self)
	if err != nil {
		return Attr{}, Attr{}, false, err
	}
	if !ok || r.owner != op.Owner {
		if id, found, err := t.child(op.Dir, op.Name); err != nil {
			return Attr{}, Attr{}, false, err
		} else if !ok && found && id == op.Self {
			return Attr{}, Attr{}, true, nil
		}
		return Attr{}, Attr{}, false, fmt.Errorf("ID %d is not reserved for this mount (the reservation expired, or meta.db was restored from before it): %w", op.Self, syscall.ESTALE)
	}
	if err := t.mayAdd(&dir, op.Name); err != nil {
		return Attr{}, Attr{}, false, err
	}
	f = r.file
	f.Uid, f.Gid, f.Mode = NewOwner(&dir, t.caller(), KindFile, op.Create.Mode)
	f.Atime, f.Mtime, f.Ctime = op.Create.Time, op.Create.Time, op.Create.Time
	return dir, f, false, nil
}

// reserved reads the reservation of id, if there is one.
func (t *txn) reserved(id FileID) (reservation, bool, error) {
	v := t.tx.Bucket(bucketReserved).Get(idKey(id))
	if v == nil {
		return reservation{}, false, nil
	}
	r, err := decodeReservation(v)
	return r, err == nil, err
}

// unreserve deletes the reservation of id, which must be owner's, and
// returns it: the caller puts its ID back in the pool once committed.
func (t *txn) unreserve(id FileID, owner uint64) (reservation, bool, error) {
	r, ok, err := t.reserved(id)
	if err != nil || !ok || r.owner != owner {
		return reservation{}, false, err
	}
	return r, true, t.tx.Bucket(bucketReserved).Delete(idKey(id))
}

// initReserved reads the reservations at start: those older than
// ReserveTTL are deleted (their IDs, still recorded in the pool bucket,
// are then discarded with the stale pool), the others kept, and the set
// of their IDs returned so that initPools leaves them out of the stale.
func initReserved(tx *bbolt.Tx, now time.Time) (map[FileID]bool, error) {
	b, err := tx.CreateBucketIfNotExists(bucketReserved)
	if err != nil {
		return nil, err
	}
	keep := map[FileID]bool{}
	var expired [][]byte
	err = b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: reservation record with a %d-byte key", errCorrupt, len(k))
		}
		r, err := decodeReservation(v)
		if err != nil {
			return err
		}
		if now.Sub(time.Unix(0, r.made)) > ReserveTTL {
			expired = append(expired, k)
			return nil
		}
		keep[FileID(binary.BigEndian.Uint64(k))] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range expired {
		if err := b.Delete(k); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// createError names a batch create's failure.
func createError(op BatchOp, err error) error {
	return &fs.PathError{Op: "create", Path: fmt.Sprintf("%s/%s", idPath(op.Dir), op.Name), Err: err}
}
