package meta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Directory delegations (NFSv4.1's directory delegations, Lustre's
// metadata write-back cache): a mount that holds a lease may be given a
// directory it has just made, empty, for its own. While it holds the
// delegation it answers unlinks in that directory itself and sends them
// later, in batches (ApplyBatch), so that an unlink costs no round trip.
//
// What keeps other clients from seeing the directory as it was before
// those unlinks: a delegation is given only for an empty directory, so
// no other mount has a name of it cached; and every request by anyone
// else that reads the directory's inode (which every path through it, a
// stat of it and a listing of it does: t.get) first recalls the
// delegation. A recall is a change notice naming the directory as its own
// parent (Change.Recall), sent to the holder through its watch poll
// (watch.go); the holder sends what it
// has not sent yet and then acknowledges, and only then does the request
// go on. If the holder's lease lapses first, the request goes on without
// it (the holder's batch, sent later, removes only names that still name
// what it expects, see Expect).
//
// Delegations live in the server's memory: a restarted server has none,
// and the mount, whose lease then changes, gives all of its up and sends
// what it holds (docs/store.md says what a restart can show).

// maxDelegations bounds the delegations one mount holds; past it,
// Delegate refuses (the mount then sends its unlinks one by one).
const maxDelegations = 1 << 16

// delegations is a Store's delegated directories. Its own lock, not the
// hub's: t.get asks it on every read while delegations exist.
type delegations struct {
	mu     sync.Mutex
	byDir  map[FileID]*delegation
	counts map[uint64]int // delegations per holder

	// For LeaseStats: recalls sent, those that ended with the holder's
	// lease rather than its acknowledgement, and the time requests waited.
	recalls, lapsed atomic.Uint64
	recallWait      atomic.Int64 // nanoseconds
}

type delegation struct {
	holder uint64 // the mount's watcher ID
	recall uint64 // seq of the recall notice, 0 until recalled
}

// recallError is what a transaction returns when it would read a
// directory delegated to a mount other than its caller: the caller
// recalls the delegation and runs the transaction again.
type recallError struct {
	dir    FileID
	holder uint64
}

func (e *recallError) Error() string {
	return fmt.Sprintf("directory %d is delegated to mount %d", e.dir, e.holder)
}

// checkDelegated returns a *recallError when id is a directory delegated
// to a mount other than the transaction's caller. The server's own
// transactions (no credentials) read it as it is.
func (t *txn) checkDelegated(id FileID) error {
	if t.delegs == nil || t.cred == nil {
		return nil
	}
	d := t.delegs
	d.mu.Lock()
	g := d.byDir[id]
	var holder uint64
	if g != nil {
		holder = g.holder
	}
	d.mu.Unlock()
	if g == nil || holder == t.cred.Mount {
		return nil
	}
	return &recallError{dir: id, holder: holder}
}

// active returns d if any directory is delegated, else nil, so that a
// transaction without delegations to check costs nothing more.
func (d *delegations) active() *delegations {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byDir) == 0 {
		return nil
	}
	return d
}

// drop ends the delegation of dir, if holder still holds it (0: whoever).
func (d *delegations) drop(dir FileID, holder uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if g := d.byDir[dir]; g != nil && (holder == 0 || g.holder == holder) {
		delete(d.byDir, dir)
		if d.counts[g.holder]--; d.counts[g.holder] <= 0 {
			delete(d.counts, g.holder)
		}
	}
}

// holds reports whether holder holds dir's delegation, not being
// recalled.
func (d *delegations) holds(dir FileID, holder uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.byDir[dir]
	return g != nil && g.holder == holder && g.recall == 0
}

// dropHolder ends every delegation holder holds (its lease ended).
func (d *delegations) dropHolder(holder uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts[holder] == 0 {
		return
	}
	for dir, g := range d.byDir {
		if g.holder == holder {
			delete(d.byDir, dir)
		}
	}
	delete(d.counts, holder)
}

// Delegations reports how many directories are delegated (for tests and
// metrics).
func (s *Store) Delegations() int {
	d := &s.delegs
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.byDir)
}

// withRecalls runs fn, and again after recalling the delegation it ran
// into, until it runs into none. Each recall waits at most for the
// holder's lease; a directory delegated again meanwhile (by the same
// empty-directory rule, so rarely) is recalled again. fn must start
// afresh each time: what it gathered from a run that ran into a recall
// is of a transaction that did not finish.
func (s *Store) withRecalls(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		var re *recallError
		if !errors.As(err, &re) {
			return err
		}
		if err := s.recall(ctx, re.dir, re.holder); err != nil {
			return err
		}
	}
}

// recallEvery recalls every delegation, all at once (their holders get
// the recalls in one watch poll each).
func (s *Store) recallEvery(ctx context.Context) error {
	d := &s.delegs
	d.mu.Lock()
	held := make(map[FileID]uint64, len(d.byDir))
	for dir, g := range d.byDir {
		held[dir] = g.holder
	}
	d.mu.Unlock()
	errs := make(chan error, len(held))
	sem := make(chan struct{}, 256)
	for dir, holder := range held {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- s.recall(ctx, dir, holder)
		}()
	}
	var err error
	for range held {
		err = errors.Join(err, <-errs)
	}
	return err
}

// recall asks holder to give dir up and waits until it has (acknowledged
// the notice, having sent what it held back) or its lease has ended.
func (s *Store) recall(ctx context.Context, dir FileID, holder uint64) error {
	h := &s.hub
	d := &s.delegs
	h.mu.Lock()
	s.startHubLocked()
	d.mu.Lock()
	g := d.byDir[dir]
	if g == nil || g.holder != holder {
		d.mu.Unlock()
		h.mu.Unlock()
		return nil
	}
	w := h.watchers[holder]
	if w == nil || !time.Now().Before(w.expires) {
		d.mu.Unlock()
		h.mu.Unlock()
		d.drop(dir, holder)
		return nil
	}
	if g.recall == 0 {
		d.recalls.Add(1)
		h.seq++
		g.recall = h.seq
		w.pending = append(w.pending, pendingChange{h.seq, Change{ID: dir, Parent: dir}})
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	seq := g.recall
	d.mu.Unlock()
	h.mu.Unlock()
	start := time.Now()
	defer func() { d.recallWait.Add(int64(time.Since(start))) }()
	for {
		h.mu.Lock()
		w := h.watchers[holder]
		now := time.Now()
		lapsed := w == nil || !now.Before(w.expires)
		gone := lapsed || w.acked >= seq
		var until time.Time
		if w != nil {
			until = w.expires
		}
		ch := h.acked
		h.mu.Unlock()
		if gone {
			if lapsed {
				d.lapsed.Add(1)
			}
			d.drop(dir, holder)
			return nil
		}
		t := time.NewTimer(until.Sub(now))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("recall of directory %d from mount %d: %w", dir, holder, ctx.Err())
		}
		t.Stop()
	}
}

// Delegate gives the directory at path (Expect.Self, if set, says which)
// to the asking mount (Cred.Mount), if it is empty, not the root, not
// sticky, and the mount holds a lease and not too many delegations
// already; it answers the directory's attributes and whether it gave it.
// A directory the mount holds already is given again. It runs as a
// mutation, so that no other mutation can add a name between the check
// that the directory is empty and the delegation: every later one that
// reaches the directory recalls it.
func (s *Store) Delegate(ctx context.Context, path string) (Attr, bool, error) {
	c := credOf(ctx)
	if c == nil || c.Mount == 0 {
		return Attr{}, false, wrapErr("delegate", path, fmt.Errorf("only a mount holding a lease can hold a delegation: %w", syscall.EINVAL))
	}
	if !s.leaseHeld(c.Mount) {
		a, err := s.Lookup(ctx, path)
		return a, false, err
	}
	var a Attr
	var given, fresh bool
	err := s.update(ctx, "delegate", path, func(t *txn, comps []string) (err error) {
		if fresh {
			s.delegs.drop(a.ID, c.Mount) // fn runs again (committer.update)
		}
		given, fresh = false, false
		if a, err = t.lookup(comps); err != nil {
			return err
		}
		if a.Kind != KindDir {
			return syscall.ENOTDIR
		}
		if a.ID == RootID || a.Mode&modeSticky != 0 || !t.isEmpty(a.ID) {
			return nil
		}
		given, fresh = s.delegs.give(a.ID, c.Mount)
		return nil
	})
	if err != nil {
		if fresh {
			s.delegs.drop(a.ID, c.Mount)
		}
		return Attr{}, false, err
	}
	return a, given, nil
}

// give delegates dir to holder unless another holds it or holder holds
// too many; fresh says the delegation is new.
func (d *delegations) give(dir FileID, holder uint64) (given, fresh bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if g := d.byDir[dir]; g != nil {
		return g.holder == holder && g.recall == 0, false
	}
	if d.counts[holder] >= maxDelegations {
		return false, false
	}
	if d.byDir == nil {
		d.byDir, d.counts = map[FileID]*delegation{}, map[uint64]int{}
	}
	d.byDir[dir] = &delegation{holder: holder}
	d.counts[holder]++
	return true, true
}

// leaseHeld reports whether watcher holds a lease now.
func (s *Store) leaseHeld(watcher uint64) bool {
	h := &s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	s.startHubLocked()
	w := h.watchers[watcher]
	return w != nil && time.Now().Before(w.expires)
}

// BatchOp is one operation of a batch (ApplyBatch) on the entry Name of
// directory Dir, if it still names file Self: an unlink, an rmdir, or
// an attribute change. The directory is named by ID, not path, since a
// directory above it may have been moved by another client since the
// holder answered the operation.
type BatchOp struct {
	Dir  FileID
	Name string
	Self FileID
	// Rmdir removes an empty directory, where an unlink removes anything
	// else.
	Rmdir bool
	// SetAttr, if set, changes Self's attributes instead of removing it.
	SetAttr *BatchAttrs
	// Create, if set, makes Name a new file with ID Self, which Owner
	// reserved for Dir (reserve.go), instead.
	Create *BatchCreate
	// Unreserve hands Owner's reservation of ID Self back unused, instead.
	Unreserve bool
	// Owner is the reservation's owner token, for Create and Unreserve.
	Owner uint64
}

// BatchCreate is the create of a file that the holder answered itself:
// the mode the caller asked for (the owner and group are the caller's,
// or the directory's group where it is setgid, as Create gives them),
// and the holder's time of it, as the file's times.
type BatchCreate struct {
	Mode uint32
	Time int64
}

// BatchAttrs is the attribute change of a batch operation: the chmod or
// utimens of a file the holder made in a directory it holds, which it
// answered itself (fusefs, "Attribute changes answered by the mount").
// The times are the holder's, ctime included, so that the metadata server
// records what the holder answered, as explicit times of utimensat(2)
// are the caller's.
type BatchAttrs struct {
	Mode         *uint32
	Atime, Mtime *int64
	Ctime        int64
}

// maxBatch bounds the operations of one batch.
const maxBatch = 4096

// ApplyBatch removes each entry, or changes its attributes, as the
// delegation's holder answered it (see delegations), in order and in one
// transaction, checking the caller's permission as Remove and SetAttr do
// (search permission on the directories above is not checked again: the
// holder checked it when it answered), and returns each one's outcome:
// nil, or the error Remove or SetAttr would have answered: ENOENT or
// ESTALE when the name no longer names that file (someone else removed or
// replaced it after the delegation had been recalled), EISDIR for a
// directory to unlink, ENOTDIR or ENOTEMPTY for one to rmdir, EPERM for a
// change only the owner may make. The changes are handed to
// the other mounts without waiting for them: none of them holds a name of
// a delegated directory (Delegate), and the holder's watch loop may be
// sending this batch to give a delegation up, so it must not wait for
// another mount that may be doing the same.
func (s *Store) ApplyBatch(ctx context.Context, ops []BatchOp) ([]error, error) {
	if len(ops) > maxBatch {
		return nil, fmt.Errorf("batch of %d operations, more than %d: %w", len(ops), maxBatch, syscall.EINVAL)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []error
	var gone []FileID
	var returned []reservation
	err := s.withRecalls(ctx, func() error {
		return s.mutateWith(ctx, false, func(t *txn) error {
			out, gone, returned = make([]error, len(ops)), nil, nil
			now := time.Now().UnixNano()
			for i, op := range ops {
				switch {
				case op.Unreserve:
					r, ok, err := t.unreserve(op.Self, op.Owner)
					if err != nil {
						return err
					}
					if ok {
						returned = append(returned, r)
					}
					continue
				case op.Create != nil:
					dir, f, done, err := t.batchCreate(op)
					var re *recallError
					if errors.As(err, &re) {
						return err
					}
					if err != nil {
						out[i] = createError(op, err)
						continue
					}
					if done {
						continue
					}
					// The directory's times move forward only: the
					// holder's time of the create may be before a
					// change the server made since (a mkdir in it).
					if err := t.addTouching(&dir, op.Name, &f, max(now, f.Ctime)); err != nil {
						return err
					}
					if _, _, err := t.unreserve(f.ID, op.Owner); err != nil {
						return err
					}
					if err := t.unpool(f.ID); err != nil {
						return err
					}
					continue
				}
				dir, entry, err := t.batchCheck(op)
				var re *recallError
				if errors.As(err, &re) {
					return err
				}
				if err != nil {
					out[i] = &fs.PathError{Op: op.name(), Path: fmt.Sprintf("%s/%s", idPath(op.Dir), op.Name), Err: err}
					continue
				}
				// From here an error is the database's: the batch fails.
				if op.SetAttr != nil {
					if err := t.put(&entry); err != nil {
						return err
					}
					continue
				}
				if _, err := t.unlink(&dir, op.Name, entry, now); err != nil {
					return err
				}
				if err := t.touchDir(&dir, now); err != nil {
					return err
				}
				if op.Rmdir {
					gone = append(gone, entry.ID)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for _, id := range gone {
		s.delegs.drop(id, 0)
	}
	s.putBackAll(returned)
	return out, nil
}

// name is what op does, for its error.
func (op BatchOp) name() string {
	if op.SetAttr != nil {
		return "setattr"
	}
	return "remove"
}

// batchCheck checks that op may be done now and returns its directory
// and the entry it names: for an attribute change, with the change
// applied, as SetAttr would (setOwnership's checks), for the caller to
// store; for a removal, the file it removes (batchVictim).
func (t *txn) batchCheck(op BatchOp) (dir, f Attr, err error) {
	ch := op.SetAttr
	if ch == nil {
		return t.batchVictim(op)
	}
	if ch.Mode == nil && ch.Atime == nil && ch.Mtime == nil {
		return Attr{}, Attr{}, fmt.Errorf("a batch attribute change of nothing: %w", syscall.EINVAL)
	}
	if dir, f, err = t.batchEntry(op); err != nil {
		return Attr{}, Attr{}, err
	}
	if err := t.setOwnership(&f, AttrChanges{Mode: ch.Mode, Atime: ch.Atime, Mtime: ch.Mtime}); err != nil {
		return Attr{}, Attr{}, err
	}
	if ch.Mtime != nil {
		f.Mtime = *ch.Mtime
	}
	if ch.Atime != nil {
		f.Atime = *ch.Atime
	}
	f.Ctime = ch.Ctime
	return dir, f, nil
}

// batchEntry returns the directory op names and the attributes of its
// entry, which must still be Self.
func (t *txn) batchEntry(op BatchOp) (dir, f Attr, err error) {
	if err := checkName(op.Name); err != nil {
		return Attr{}, Attr{}, err
	}
	if dir, err = t.get(op.Dir); err != nil {
		return Attr{}, Attr{}, err
	}
	if dir.Kind != KindDir {
		return Attr{}, Attr{}, syscall.ENOTDIR
	}
	f, ok, err := t.childAttr(op.Dir, op.Name)
	switch {
	case err != nil:
		return Attr{}, Attr{}, err
	case !ok:
		return Attr{}, Attr{}, syscall.ENOENT
	}
	if err := expected("entry", op.Self, &f); err != nil {
		return Attr{}, Attr{}, err
	}
	return dir, f, nil
}

// batchVictim checks that op may be done now and returns its directory
// and the file it removes.
func (t *txn) batchVictim(op BatchOp) (dir, victim Attr, err error) {
	if dir, victim, err = t.batchEntry(op); err != nil {
		return Attr{}, Attr{}, err
	}
	if err := t.mayDelete(&dir, &victim); err != nil {
		return Attr{}, Attr{}, err
	}
	switch {
	case !op.Rmdir && victim.Kind == KindDir:
		return Attr{}, Attr{}, syscall.EISDIR
	case op.Rmdir && victim.Kind != KindDir:
		return Attr{}, Attr{}, syscall.ENOTDIR
	case op.Rmdir && !t.isEmpty(victim.ID):
		return Attr{}, Attr{}, syscall.ENOTEMPTY
	}
	return dir, victim, nil
}

// checkName refuses what cannot be one path component.
func checkName(name string) error {
	comps, err := splitPath("/" + name)
	if err != nil {
		return err
	}
	if len(comps) != 1 || comps[0] != name {
		return fmt.Errorf("%q is not a name: %w", name, syscall.EINVAL)
	}
	return nil
}
