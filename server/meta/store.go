package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
)

// FormatVersion is the schema version written to the "meta" bucket.
const FormatVersion = 1

// lockTimeout is how long Open waits for the database file lock before
// reporting that another process holds it. A variable so tests can shorten it.
var lockTimeout = 2 * time.Second

var (
	bucketInodes  = []byte("inodes")
	bucketDirents = []byte("dirents")
	bucketMeta    = []byte("meta")

	keyFormat = []byte("format")
	keyNextID = []byte("next_id")
	keyRR     = []byte("rr")
	keyFiles  = []byte("files")
	keyDirs   = []byte("dirs")
)

// Store is the metadata store: the namespace, attributes and layouts of one
// pario file system in a bbolt database. All methods are safe for concurrent
// use; each mutating method is atomic and durable when it returns (its
// transaction may be shared with concurrent ones: see committer).
type Store struct {
	db     *bbolt.DB
	commit committer // every mutation but initTx goes through it
	opts   Options

	incarnation       uint64
	created, upgraded bool
	ids               ids
	rr                atomic.Uint64 // round-robin placement counter
	claims            []claimState  // by I/O server index
	pool              pools         // precreated datafiles (pool.go)
	hub               hub           // mounts' leases (watch.go)
	delegs            delegations   // directories delegated to mounts (deleg.go)
	reaper            reaper        // removes the datafiles of removed files (reaper.go)
	dur               *durability   // deferred durability (durable.go); nil if off
}

// AttrChanges lists the attributes SetAttr changes; nil fields stay.
type AttrChanges struct {
	Mode  *uint32 // permission bits
	Mtime *int64  // unix nanoseconds
	Atime *int64  // unix nanoseconds
	Size  *int64  // size hint of a file (see Attr.Size)
	// Access marks an Atime that records a read (relatime), which does
	// not change ctime, unlike utimensat(2). Other fields must be nil.
	Access bool
	// Uid and Gid change the owner and group (chown(2)).
	Uid, Gid *uint32
	// KillPriv clears the setuid bit, and the setgid bit if
	// group-executable: what a write by anyone but root does.
	KillPriv bool
	// Now says Mtime and Atime are the current time (utimensat's
	// UTIME_NOW), which a writer may set without owning the file.
	Now bool
}

// Open opens the metadata database at path, creating it (with the root
// directory, ID 1, mode 0755, owned by Options.RootUid and RootGid) if it
// does not exist. Options.Servers must be
// at least 1, and a non-zero Options.DefaultLayout must build for that many
// servers. If another process holds the database, Open fails after a short
// wait with an error saying so.
func Open(path string, opts Options) (*Store, error) {
	if opts.Servers < 1 {
		return nil, fmt.Errorf("meta: open %s: Options.Servers must be at least 1, got %d", path, opts.Servers)
	}
	if !opts.DefaultLayout.IsZero() {
		if _, err := opts.DefaultLayout.Build(opts.Servers); err != nil {
			return nil, fmt.Errorf("meta: open %s: default layout %q for %d servers: %w", path, opts.DefaultLayout.String(), opts.Servers, err)
		}
	}
	s := &Store{opts: opts, claims: make([]claimState, opts.Servers)}
	if err := s.open(path); err != nil {
		return nil, err
	}
	if err := s.checkServers(path); err != nil {
		s.closeDB()
		return nil, err
	}
	if err := s.checkServerNames(path); err != nil {
		s.closeDB()
		return nil, err
	}
	if err := s.startReaper(); err != nil {
		s.closeDB()
		return nil, fmt.Errorf("meta: open %s: %w", path, err)
	}
	return s, nil
}

// MissingServersError is Open's refusal of a cluster smaller than its
// files: every request for such a file would fail ("layout names I/O
// server 2 but the cluster has 2"), so the server does not start.
type MissingServersError struct {
	Path    string // the database
	Servers int    // I/O servers configured
	Need    int    // I/O servers the files use: indexes 0 to Need-1
	Files   int    // files with a datafile at an index >= Servers
}

func (e *MissingServersError) Error() string {
	missing := fmt.Sprintf("I/O server %d", e.Servers)
	if e.Need-1 > e.Servers {
		missing = fmt.Sprintf("I/O servers %d to %d", e.Servers, e.Need-1)
	}
	return fmt.Sprintf("meta: open %s: %d files have datafiles on %s (counting from 0), but the cluster is given only %d I/O servers; "+
		"start it with all %d, in their original order (servers can be added at the end, never removed)", e.Path, e.Files, missing, e.Servers, e.Need)
}

// checkServers refuses a cluster with fewer I/O servers than the files use.
func (s *Store) checkServers(path string) error {
	e := &MissingServersError{Path: path, Servers: s.opts.Servers}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketInodes).ForEach(func(k, v []byte) error {
			a, err := decodeAttr(v)
			if err != nil {
				return fmt.Errorf("inode %x: %w", k, err)
			}
			beyond := false
			for _, idx := range a.Servers {
				if int(idx) >= e.Servers {
					beyond = true
					e.Need = max(e.Need, int(idx)+1)
				}
			}
			if beyond {
				e.Files++
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("meta: open %s: %w", path, err)
	}
	if e.Files > 0 {
		return e
	}
	return nil
}

// open opens and checks the database. A damaged file makes bbolt panic, or
// fault on a page number past the end of its memory map, which would kill
// the process with a trace that names neither the file nor a way out; here
// either becomes an error that does both.
func (s *Store) open(path string) (err error) {
	damaged := func(why any) error {
		return fmt.Errorf("meta: open %s: the metadata database is damaged (%v); the metadata server will not use it. "+
			"Stop, keep this file for analysis, and restore meta.db from a backup (afterwards check the store against it with `pario fsck` where your pario has it)", path, why)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if s.db != nil {
				s.closeDB()
			}
			err = damaged(r)
		}
	}()
	bo := *bbolt.DefaultOptions
	bo.Timeout = lockTimeout
	interval := s.opts.SyncInterval
	if interval == 0 {
		interval = DefaultSyncInterval
	}
	deferred := interval > 0 && strconv.IntSize == 64
	var boot string
	if deferred {
		bootID := s.opts.BootID
		if bootID == nil {
			bootID = kernelBootID
		}
		if boot, err = bootID(); err != nil {
			return fmt.Errorf("meta: open %s: %w", path, err)
		}
		note, err := recoverUnsynced(path, boot)
		if err != nil {
			return fmt.Errorf("meta: open %s: %w", path, err)
		}
		if note != "" {
			slog.Warn("pario meta: " + note)
		}
		bo.InitialMmapSize = int(deferredMmapSize)
	}
	db, err := bbolt.Open(path, 0o600, &bo)
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("meta: open %s: database is locked by another process (is another metadata server using it?); gave up after %v: %w", path, lockTimeout, err)
	}
	if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
		return damaged(err)
	}
	if err != nil {
		return fmt.Errorf("meta: open %s: %w", path, err)
	}
	s.db = db
	s.commit.db = db
	if err := db.View(checkTx); err != nil {
		db.Close()
		return damaged(err)
	}
	if deferred {
		// Before any commit of this run: the checkpoint makes what an
		// earlier run left (killed, its last changes unsynced) durable,
		// and the anchor keeps it whole while initTx commits.
		d, err := startDurability(db, path, boot, interval)
		if err != nil {
			db.Close()
			return fmt.Errorf("meta: open %s: %w", path, err)
		}
		s.dur, s.commit.dur = d, d
	}
	if err := db.Update(s.initTx); err != nil {
		s.closeDB()
		return fmt.Errorf("meta: open %s: %w", path, err)
	}
	if s.dur != nil {
		if err := s.dur.checkpoint(); err != nil {
			s.closeDB()
			return fmt.Errorf("meta: open %s: %w", path, err)
		}
	}
	return nil
}

// SyncStats reports the deferred durability (durable.go): checkpoints
// made, answered transactions not yet synced, and whether a sync failed
// (changes are refused since). All zero when it is off.
func (s *Store) SyncStats() (syncs, unsynced uint64, failed bool) {
	d := s.dur
	if d == nil {
		return 0, 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.committed > d.synced {
		unsynced = d.committed - d.synced
	}
	return d.checkpoints.Load(), unsynced, d.failed != nil
}

// Sync returns once every change answered before the call is durable
// (see durable.go); with deferred durability off, at once.
func (s *Store) Sync(ctx context.Context) error {
	if s.dur == nil {
		return nil
	}
	if err := s.dur.sync(ctx); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	return nil
}

// checkTx reads the whole database: every key and value byte, and a
// search for every key, all in this goroutine, so that a fault on a bad
// page or element offset becomes a panic that open recovers. Only then
// does it run bbolt's own consistency check (page references, free list,
// key order) in bbolt's goroutine, where a fault would be fatal: by then
// every page and key it visits has been read here.
func checkTx(tx *bbolt.Tx) error {
	var sum byte
	var walk func(b *bbolt.Bucket, name string) error
	walk = func(b *bbolt.Bucket, name string) error {
		c, seek := b.Cursor(), b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			for _, x := range k {
				sum ^= x
			}
			for _, x := range v {
				sum ^= x
			}
			if got, _ := seek.Seek(k); !bytes.Equal(got, k) {
				return fmt.Errorf("bucket %s: key %x is stored but a search for it finds %x", name, k, got)
			}
			if v == nil {
				if sub := b.Bucket(k); sub != nil {
					if err := walk(sub, fmt.Sprintf("%s/%x", name, k)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return walk(b, string(name)) })
	runtime.KeepAlive(sum)
	if err != nil {
		return err
	}
	var errs []error
	for err := range tx.Check() {
		if len(errs) < 5 {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// initTx creates the buckets and the root directory of a new database, or
// checks the format of an existing one.
func (s *Store) initTx(tx *bbolt.Tx) error {
	for _, name := range [][]byte{bucketInodes, bucketDirents, bucketMeta, bucketRemovals} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	t := newTxn(tx)
	if v := t.meta.Get(keyFormat); v != nil {
		if len(v) != 8 || binary.BigEndian.Uint64(v) != FormatVersion {
			return fmt.Errorf("unsupported metadata format %x (this server reads format %d)", v, FormatVersion)
		}
		if _, err := t.get(RootID); err != nil {
			return fmt.Errorf("root directory: %w", err)
		}
		return s.loadCounters(t)
	}
	if k, _ := t.inodes.Cursor().First(); k != nil {
		return errors.New("database has inodes but no format record")
	}
	now := time.Now().UnixNano()
	root := Attr{ID: RootID, Kind: KindDir, Nlink: 2, Mode: 0o755, Uid: s.opts.RootUid, Gid: s.opts.RootGid, Mtime: now, Ctime: now, Atime: now}
	if err := t.put(&root); err != nil {
		return err
	}
	for _, kv := range []struct {
		k []byte
		v uint64
	}{{keyFormat, FormatVersion}, {keyNextID, uint64(RootID) + 1}, {keyRR, 0}, {keyFiles, 0}, {keyDirs, 1}} {
		if err := t.setCounter(kv.k, kv.v); err != nil {
			return err
		}
	}
	s.created = true
	return s.loadCounters(t)
}

// loadCounters reads the incarnation (making one if there is none) and
// the counters Store keeps in memory.
func (s *Store) loadCounters(t *txn) error {
	inc, made, err := t.loadIncarnation()
	if err != nil {
		return err
	}
	s.incarnation, s.upgraded = inc, made && !s.created
	next := t.counter(keyNextID)
	if next <= uint64(RootID) {
		return fmt.Errorf("%w: next_id counter is %d", errCorrupt, next)
	}
	s.ids.next, s.ids.reserved = next, next
	s.rr.Store(t.counter(keyRR))
	return s.initPools(t.tx)
}

// Close closes the database. Calls after Close fail.
func (s *Store) Close() error {
	s.closePools()
	s.stopReaper()
	return s.closeDB()
}

// closeDB makes every change durable and closes the database.
func (s *Store) closeDB() error {
	var err error
	if s.dur != nil {
		err = s.dur.close()
		s.dur, s.commit.dur = nil, nil
	}
	return errors.Join(err, s.db.Close())
}

// txn bundles a transaction's buckets with the helpers every method uses.
type txn struct {
	tx                    *bbolt.Tx
	inodes, dirents, meta *bbolt.Bucket
	// cred is who asks; nil for the server's own callers, which are not
	// checked.
	cred    *Cred
	changes []Change // what mounts may have cached that this changed (watch.go)
	// keepData says a removed file's datafiles are the caller's to
	// remove (WithKeepData); removals are the files whose intents it
	// recorded.
	keepData bool
	removals []FileID
	// expect is what the caller believes the path resolves to (Expect).
	expect Expect
	// delegs is the Store's delegations when there are any (deleg.go).
	delegs *delegations
}

// may checks cred's access to a (see permits); nil cred may do anything.
func (t *txn) may(a *Attr, want uint32) error {
	if t.cred == nil {
		return nil
	}
	return checkAccess(a, *t.cred, want)
}

// caller is cred, or root for the server's own callers.
func (t *txn) caller() Cred {
	if t.cred == nil {
		return Cred{}
	}
	return *t.cred
}

func newTxn(tx *bbolt.Tx) *txn {
	return &txn{
		tx:      tx,
		inodes:  tx.Bucket(bucketInodes),
		dirents: tx.Bucket(bucketDirents),
		meta:    tx.Bucket(bucketMeta),
	}
}

func idKey(id FileID) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(id))
}

func direntKey(parent FileID, name string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(name)), uint64(parent))
	return append(k, name...)
}

// get reads an inode; a missing one is ENOENT.
func (t *txn) get(id FileID) (Attr, error) {
	if err := t.checkDelegated(id); err != nil {
		return Attr{}, err
	}
	v := t.inodes.Get(idKey(id))
	if v == nil {
		return Attr{}, syscall.ENOENT
	}
	a, err := decodeAttr(v)
	if err != nil {
		return Attr{}, fmt.Errorf("inode %d: %w", id, err)
	}
	if a.ID != id {
		return Attr{}, fmt.Errorf("inode %d: %w: record holds ID %d", id, errCorrupt, a.ID)
	}
	return a, nil
}

func (t *txn) put(a *Attr) error {
	t.changed(a.ID)
	return t.inodes.Put(idKey(a.ID), encodeAttr(a))
}

// child looks a name up in a directory.
func (t *txn) child(parent FileID, name string) (FileID, bool, error) {
	v := t.dirents.Get(direntKey(parent, name))
	if v == nil {
		return 0, false, nil
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("directory entry %q in %d: %w: bad child ID", name, parent, errCorrupt)
	}
	return FileID(binary.BigEndian.Uint64(v)), true, nil
}

// childAttr looks a name up and reads its inode.
func (t *txn) childAttr(parent FileID, name string) (Attr, bool, error) {
	id, ok, err := t.child(parent, name)
	if err != nil || !ok {
		return Attr{}, false, err
	}
	a, err := t.get(id)
	if errors.Is(err, syscall.ENOENT) {
		return Attr{}, false, fmt.Errorf("directory entry %q in %d: %w: dangling child %d", name, parent, errCorrupt, id)
	}
	return a, err == nil, err
}

// isEmpty reports whether directory id has no entries.
func (t *txn) isEmpty(id FileID) bool {
	prefix := idKey(id)
	k, _ := t.dirents.Cursor().Seek(prefix)
	return k == nil || !bytes.HasPrefix(k, prefix)
}

func (t *txn) counter(key []byte) uint64 {
	v := t.meta.Get(key)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func (t *txn) setCounter(key []byte, v uint64) error {
	return t.meta.Put(key, binary.BigEndian.AppendUint64(nil, v))
}

func (t *txn) addCounter(key []byte, delta int64) error {
	return t.setCounter(key, uint64(int64(t.counter(key))+delta))
}

// countFor is the counter key of a kind.
func countFor(k Kind) []byte {
	if k == KindDir {
		return keyDirs
	}
	return keyFiles
}

// walkDir resolves the directory named by comps. It also returns the
// nearest default layout set on it or any of its ancestors (zero if none).
func (t *txn) walkDir(comps []string) (dir Attr, inherit dist.Layout, err error) {
	dir, err = t.get(RootID)
	if err != nil {
		return Attr{}, dist.Layout{}, fmt.Errorf("root directory: %w", err)
	}
	inherit = dir.Layout
	for _, c := range comps {
		if err := t.may(&dir, MayExec); err != nil {
			return Attr{}, dist.Layout{}, err
		}
		a, ok, err := t.childAttr(dir.ID, c)
		if err != nil {
			return Attr{}, dist.Layout{}, err
		}
		if !ok {
			return Attr{}, dist.Layout{}, syscall.ENOENT
		}
		if a.Kind != KindDir {
			return Attr{}, dist.Layout{}, syscall.ENOTDIR
		}
		dir = a
		if !a.Layout.IsZero() {
			inherit = a.Layout
		}
	}
	return dir, inherit, nil
}

// resolve finds the entry named by comps (len(comps) > 0) and its parent.
// A missing entry is ENOENT.
func (t *txn) resolve(comps []string) (parent, a Attr, err error) {
	parent, _, err = t.walkDir(comps[:len(comps)-1])
	if err != nil {
		return Attr{}, Attr{}, err
	}
	if err := expected("directory", t.expect.Dir, &parent); err != nil {
		return Attr{}, Attr{}, err
	}
	if err := t.may(&parent, MayExec); err != nil {
		return Attr{}, Attr{}, err
	}
	a, ok, err := t.childAttr(parent.ID, comps[len(comps)-1])
	if err != nil {
		return Attr{}, Attr{}, err
	}
	if !ok {
		return Attr{}, Attr{}, syscall.ENOENT
	}
	if err := expected("entry", t.expect.Self, &a); err != nil {
		return Attr{}, Attr{}, err
	}
	return parent, a, nil
}

// lookup resolves any path, the root included.
func (t *txn) lookup(comps []string) (Attr, error) {
	if len(comps) == 0 {
		a, err := t.get(RootID)
		if err != nil {
			return Attr{}, err
		}
		return a, expected("entry", t.expect.Self, &a)
	}
	_, a, err := t.resolve(comps)
	return a, err
}

// touchDir sets a directory's mtime and ctime and stores it.
func (t *txn) touchDir(dir *Attr, now int64) error {
	dir.Mtime, dir.Ctime = now, now
	return t.put(dir)
}

// view and update check ctx before they start: a request whose caller
// has gone is not executed. update checks again once its transaction
// runs, since waiting for the commit before it is where a mutation blocks.
// update's fn may run more than once (see committer.update).
func (s *Store) view(ctx context.Context, op, path string, fn func(t *txn, comps []string) error) error {
	if err := ctx.Err(); err != nil {
		return wrapErr(op, path, err)
	}
	comps, err := splitPath(path)
	if err != nil {
		return wrapErr(op, path, err)
	}
	cred := credOf(ctx)
	return wrapErr(op, path, s.withRecalls(ctx, func() error {
		return s.db.View(func(tx *bbolt.Tx) error {
			t := newTxn(tx)
			t.cred = cred
			t.delegs = s.delegs.active()
			t.expect = ExpectFrom(ctx)
			if err := t.trailingSlash(op, path, comps); err != nil {
				return err
			}
			return fn(t, comps)
		})
	}))
}

func (s *Store) update(ctx context.Context, op, path string, fn func(t *txn, comps []string) error) error {
	if err := ctx.Err(); err != nil {
		return wrapErr(op, path, err)
	}
	comps, err := splitPath(path)
	if err != nil {
		return wrapErr(op, path, err)
	}
	return wrapErr(op, path, s.withRecalls(ctx, func() error {
		return s.mutate(ctx, func(t *txn) error {
			if err := t.trailingSlash(op, path, comps); err != nil {
				return err
			}
			return fn(t, comps)
		})
	}))
}

// trailingSlash checks what a slash at the end of a path asks for, as
// POSIX path resolution does: that its last component is a directory.
// "f/" of a file is ENOTDIR for every op (stat, unlink, setattr...), and
// an op that would make a non-directory under a name that does not exist
// is refused (open(O_CREAT) is EISDIR, mknod, symlink and link ENOENT),
// so that `rm f/` does not remove file f and `cp x d/` does not create a
// file d. Other failures (a missing parent, permissions, recalls) are
// left to the op, which finds them itself.
func (t *txn) trailingSlash(op, path string, comps []string) error {
	if len(comps) == 0 || !strings.HasSuffix(path, "/") {
		return nil
	}
	if _, _, err := t.walkDir(comps[:len(comps)-1]); err != nil {
		return nil
	}
	_, a, err := t.resolve(comps)
	switch {
	case err == nil && a.Kind != KindDir:
		return fmt.Errorf("a trailing slash asks for a directory, and %s is not one: %w", strings.TrimRight(path, "/"), syscall.ENOTDIR)
	case errors.Is(err, syscall.ENOENT) && op == "create":
		return fmt.Errorf("a trailing slash names a directory, not a file to create: %w", syscall.EISDIR)
	case errors.Is(err, syscall.ENOENT) && (op == "mknod" || op == "symlink" || op == "link"):
		return fmt.Errorf("a trailing slash names a directory, and there is none: %w", syscall.ENOENT)
	}
	return nil
}

// Lookup returns the attributes of the entry at path.
func (s *Store) Lookup(ctx context.Context, path string) (Attr, error) {
	var a Attr
	err := s.view(ctx, "lookup", path, func(t *txn, comps []string) (err error) {
		a, err = t.lookup(comps)
		return err
	})
	return a, err
}

// GetByID returns the attributes of the entry with the given ID, wherever it
// is now (open files keep working across renames). A removed or unknown ID
// is ENOENT.
func (s *Store) GetByID(ctx context.Context, id FileID) (Attr, error) {
	return s.Access(ctx, id, 0)
}

// Access is GetByID that also checks the caller's access (WithCred) to
// the entry as want asks (MayRead, MayWrite, MayExec; EACCES), as open(2)
// and access(2) do. It checks nothing of the path: the caller has looked
// the entry up already.
func (s *Store) Access(ctx context.Context, id FileID, want uint32) (Attr, error) {
	if err := ctx.Err(); err != nil {
		return Attr{}, wrapErr("getbyid", idPath(id), err)
	}
	var a Attr
	err := s.withRecalls(ctx, func() error {
		return s.db.View(func(tx *bbolt.Tx) (err error) {
			t := newTxn(tx)
			t.cred = credOf(ctx)
			t.delegs = s.delegs.active()
			if a, err = t.get(id); err != nil || want == 0 {
				return err
			}
			if err = t.may(&a, want); err != nil {
				a = Attr{}
			}
			return err
		})
	})
	return a, wrapErr("getbyid", idPath(id), err)
}

// idPath names an entry by ID in errors.
func idPath(id FileID) string { return fmt.Sprintf("#%d", id) }

// Mkdir creates a directory with the given permission bits. Its default
// layout starts unset: it inherits its nearest ancestor's at create time.
func (s *Store) Mkdir(ctx context.Context, path string, mode uint32) (Attr, error) {
	var a Attr
	id, err := s.allocID(ctx)
	if err != nil {
		return Attr{}, wrapErr("mkdir", path, err)
	}
	err = s.update(ctx, "mkdir", path, func(t *txn, comps []string) (err error) {
		a, err = t.mkdir(comps, id, mode)
		return err
	})
	if err != nil {
		return Attr{}, err
	}
	return a, nil
}

// mkdir adds directory id at comps with the mode asked for.
func (t *txn) mkdir(comps []string, id FileID, mode uint32) (Attr, error) {
	if len(comps) == 0 {
		return Attr{}, syscall.EEXIST
	}
	parent, err := t.parentToAdd(comps)
	if err != nil {
		return Attr{}, err
	}
	now := time.Now().UnixNano()
	a := Attr{ID: id, Kind: KindDir, Nlink: 2, Mtime: now, Ctime: now, Atime: now}
	a.Uid, a.Gid, a.Mode = NewOwner(&parent, t.caller(), KindDir, mode)
	return a, t.add(&parent, comps[len(comps)-1], &a)
}

// Mknod creates a special file: a FIFO, socket or device node (kind, with
// rdev for a device). It is metadata only: no layout, no datafiles.
func (s *Store) Mknod(ctx context.Context, path string, kind Kind, mode uint32, rdev uint64) (Attr, error) {
	if !kind.Special() {
		return Attr{}, wrapErr("mknod", path, fmt.Errorf("kind %d is not a special file: %w", kind, syscall.EINVAL))
	}
	if kind != KindCharDev && kind != KindBlockDev {
		rdev = 0
	}
	var a Attr
	id, err := s.allocID(ctx)
	if err != nil {
		return Attr{}, wrapErr("mknod", path, err)
	}
	err = s.update(ctx, "mknod", path, func(t *txn, comps []string) error {
		if len(comps) == 0 {
			return syscall.EEXIST
		}
		if err := checkMknod(kind, t.caller()); err != nil {
			return err
		}
		parent, err := t.parentToAdd(comps)
		if err != nil {
			return err
		}
		now := time.Now().UnixNano()
		a = Attr{ID: id, Kind: kind, Nlink: 1, Rdev: rdev, Mtime: now, Ctime: now, Atime: now}
		a.Uid, a.Gid, a.Mode = NewOwner(&parent, t.caller(), kind, mode)
		return t.add(&parent, comps[len(comps)-1], &a)
	})
	if err != nil {
		return Attr{}, err
	}
	return a, nil
}

// parentToAdd resolves the directory a new entry named by comps goes in,
// which the caller must be allowed to search and, unless the name is
// taken (EEXIST first, as Linux answers), to write.
func (t *txn) parentToAdd(comps []string) (Attr, error) {
	parent, _, err := t.walkDir(comps[:len(comps)-1])
	if err != nil {
		return Attr{}, err
	}
	if err := expected("directory", t.expect.Dir, &parent); err != nil {
		return Attr{}, err
	}
	return parent, t.mayAdd(&parent, comps[len(comps)-1])
}

func (t *txn) mayAdd(parent *Attr, name string) error {
	if err := t.may(parent, MayExec); err != nil {
		return err
	}
	if _, ok, err := t.child(parent.ID, name); err != nil {
		return err
	} else if ok {
		return syscall.EEXIST
	}
	return t.may(parent, MayWrite)
}

// add links the new entry a under name in parent (EEXIST if the name is
// taken) and updates the parent's times and the counters.
func (t *txn) add(parent *Attr, name string, a *Attr) error {
	return t.addTouching(parent, name, a, a.Ctime)
}

// addTouching is add with the parent's new times given: a create the
// holder of a delegation answered keeps its own time, applied later, and
// its directory's times must not go back (ApplyBatch).
func (t *txn) addTouching(parent *Attr, name string, a *Attr, dirTime int64) error {
	if _, ok, err := t.child(parent.ID, name); err != nil {
		return err
	} else if ok {
		return syscall.EEXIST
	}
	if v := t.inodes.Get(idKey(a.ID)); v != nil {
		return fmt.Errorf("%w: new ID %d is already an inode", errCorrupt, a.ID)
	}
	if err := t.put(a); err != nil {
		return err
	}
	if err := t.dirents.Put(direntKey(parent.ID, name), idKey(a.ID)); err != nil {
		return err
	}
	if a.Kind == KindDir && parent.Nlink > 0 {
		parent.Nlink++ // its new subdirectory's ".."
	}
	if err := t.touchDir(parent, dirTime); err != nil {
		return err
	}
	return t.addCounter(countFor(a.Kind), 1)
}

// Create creates a file with the given permission bits. Its layout is
// hints if non-zero, else the nearest ancestor directory's default, else
// Options.DefaultLayout, else simple_stripe with 64 KiB strips on all
// servers. Hints with an empty Dist but a non-zero Datafiles take the
// inherited layout with that many datafiles. The layout must build for
// Options.Servers (EINVAL otherwise) and is stored resolved (canonical
// parameters, actual datafile count). Datafile i goes to server
// (first+i) mod Servers, first advancing round-robin per create. With
// Options.Stuffing the file starts Stuffed (see stuffable). An existing
// entry is EEXIST.
//
// The file's datafiles (its first only, if stuffed) exist before the inode
// is committed: taken ready-made from the precreate pool of its servers
// (pool.go), or made on the I/O servers through Options.Datafiles,
// exclusively and in parallel. An ID whose datafile exists anywhere is
// never used (see newFileID), so no file can be given another's bytes,
// even by a database restored from a backup. If the commit then fails (the name
// was taken meanwhile), the datafiles are removed again; a crash between
// the two leaves empty datafiles no file points to, which pario fsck
// finds.
func (s *Store) Create(ctx context.Context, path string, mode uint32, hints dist.Layout) (Attr, error) {
	var a Attr
	// Plan: the checks the commit repeats, and the layout.
	err := s.view(ctx, "create", path, func(t *txn, comps []string) error {
		if len(comps) == 0 {
			return syscall.EEXIST
		}
		parent, inherit, err := t.walkDir(comps[:len(comps)-1])
		if err != nil {
			return err
		}
		if err := expected("directory", t.expect.Dir, &parent); err != nil {
			return err
		}
		if err := t.mayAdd(&parent, comps[len(comps)-1]); err != nil {
			return err
		}
		l, d, err := s.chooseLayout(hints, inherit)
		if err != nil {
			return err
		}
		first := uint32((s.rr.Add(1) - 1) % uint64(s.opts.Servers))
		a = Attr{
			Kind:    KindFile,
			Nlink:   1,
			Layout:  l,
			Servers: s.placeFor(hints, first, l.Datafiles),
			Stuffed: s.opts.Stuffing && stuffable(d),
		}
		return nil
	})
	if err != nil {
		return Attr{}, err
	}
	active := a.Servers
	if a.Stuffed {
		active = active[:1]
	}
	var pooled bool
	if a.ID, pooled, err = s.takeID(ctx, active); err != nil {
		return Attr{}, wrapErr("create", path, err)
	}
	if !pooled {
		defer s.makingDone(a.ID, active)
	}
	now := time.Now().UnixNano()
	a.Mtime, a.Ctime, a.Atime = now, now, now
	err = s.update(ctx, "create", path, func(t *txn, comps []string) error {
		parent, err := t.parentToAdd(comps)
		if err != nil {
			return err
		}
		a.Uid, a.Gid, a.Mode = NewOwner(&parent, t.caller(), KindFile, mode)
		if err := t.setCounter(keyRR, max(t.counter(keyRR), s.rr.Load())); err != nil {
			return err
		}
		if pooled {
			if err := t.unpool(a.ID); err != nil {
				return err
			}
		}
		return t.add(&parent, comps[len(comps)-1], &a)
	})
	if err != nil && pooled {
		s.putBack(active, a.ID)
		return Attr{}, err
	}
	if err != nil {
		s.removeDatafiles(ctx, a.ID, active)
		return Attr{}, err
	}
	return a, nil
}

// stuffable reports whether a new file with distribution d can start
// stuffed: it must have more than one datafile (with one, stuffing changes
// nothing) and its logical offset 0 must map to offset 0 of datafile 0, so
// that the data a stuffed file keeps on Servers[0] is already where the full
// layout puts it.
func stuffable(d dist.Distribution) bool {
	if d.Datafiles() < 2 {
		return false
	}
	df, phys := d.ToPhysical(0)
	return df == 0 && phys == 0
}

// chooseLayout picks, validates and resolves a new file's layout.
func (s *Store) chooseLayout(hints, inherit dist.Layout) (dist.Layout, dist.Distribution, error) {
	l := hints
	if l.IsZero() {
		if l.Params != "" {
			return dist.Layout{}, nil, fmt.Errorf("layout hints have parameters %q but no distribution name: %w", l.Params, syscall.EINVAL)
		}
		l = inherit
		if l.IsZero() {
			l = s.opts.DefaultLayout
		}
		if l.IsZero() {
			l = dist.DefaultLayout()
		}
		if hints.Datafiles != 0 {
			l.Datafiles = hints.Datafiles
		}
	}
	return s.build(l)
}

// build validates l for the cluster and returns it resolved.
func (s *Store) build(l dist.Layout) (dist.Layout, dist.Distribution, error) {
	d, err := l.Build(s.opts.Servers)
	if err != nil {
		return dist.Layout{}, nil, fmt.Errorf("invalid layout %q for %d servers: %w: %w",
			l.String(), s.opts.Servers, err, syscall.EINVAL)
	}
	n := d.Datafiles()
	if n < 1 || n > s.opts.Servers {
		return dist.Layout{}, nil, fmt.Errorf("layout %q gives %d datafiles for %d servers: %w",
			l.String(), n, s.opts.Servers, syscall.EINVAL)
	}
	return dist.Layout{Dist: d.Name(), Params: d.Params(), Datafiles: n}, d, nil
}

// place lists the servers of n datafiles starting at server first.
func (s *Store) place(first uint32, n int) []uint32 {
	servers := make([]uint32, n)
	for i := range servers {
		servers[i] = uint32((uint64(first) + uint64(i)) % uint64(s.opts.Servers))
	}
	return servers
}

// Directory listings come in pages, so that neither server nor client
// ever holds a whole directory, and a page always fits a frame.
const (
	// MaxPageEntries is the most entries one page holds (and the default).
	MaxPageEntries = 1024
	// PageBytes bounds the encoded size of a page's entries: names of up
	// to MaxNameLen bytes and attributes with long layouts stop a page
	// early. A quarter of wire.MaxArgLen leaves room for one entry with
	// an attribute record of any size a create request could have set.
	PageBytes = wire.MaxArgLen / 4
)

// entrySize is an upper bound of the encoded size of a directory entry
// whose name is name and whose attribute record is rec bytes long.
func entrySize(name string, rec []byte) int {
	return 2*binary.MaxVarintLen32 + len(name) + len(rec)
}

// ReaddirPage lists one page of a directory: the entries whose names come
// after cookie in byte order ("" for the first page), at most limit of them
// (limit <= 0 or more than MaxPageEntries: MaxPageEntries) and at most
// PageBytes of them encoded (but always at least one). It returns the
// cookie of the next page, "" when the page ends the directory.
//
// The cookie is the last name returned: each page is a fresh read
// transaction that seeks to it in the dirents bucket (keyed parent ID +
// name, so sorted). Entries created or removed between pages therefore
// never make the listing repeat or skip one that is present throughout;
// one created behind the cookie is not listed (as POSIX allows).
func (s *Store) ReaddirPage(ctx context.Context, path, cookie string, limit int) ([]DirEntry, string, error) {
	if limit <= 0 || limit > MaxPageEntries {
		limit = MaxPageEntries
	}
	var out []DirEntry
	var next string
	err := s.view(ctx, "readdir", path, func(t *txn, comps []string) error {
		// A recall of an entry reruns this (withRecalls): from the start.
		out, next = nil, ""
		if len(cookie) > MaxNameLen {
			return fmt.Errorf("cookie of %d bytes is not a name: %w", len(cookie), syscall.EINVAL)
		}
		dir, err := t.lookup(comps)
		if err != nil {
			return err
		}
		if dir.Kind != KindDir {
			return syscall.ENOTDIR
		}
		if err := t.may(&dir, MayRead); err != nil {
			return err
		}
		prefix := idKey(dir.ID)
		c := t.dirents.Cursor()
		k, v := c.Seek(direntKey(dir.ID, cookie))
		if cookie != "" && bytes.Equal(k, direntKey(dir.ID, cookie)) {
			k, v = c.Next()
		}
		size := 0
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			name := string(k[len(prefix):])
			if len(out) == limit {
				next = out[len(out)-1].Name
				return nil
			}
			if len(v) != 8 {
				return fmt.Errorf("directory entry %q in %d: %w: bad child ID", name, dir.ID, errCorrupt)
			}
			id := FileID(binary.BigEndian.Uint64(v))
			n := entrySize(name, t.inodes.Get(idKey(id)))
			if len(out) > 0 && size+n > PageBytes {
				next = out[len(out)-1].Name
				return nil
			}
			if n > wire.MaxArgLen/2 {
				return fmt.Errorf("directory entry %q in %d: its %d bytes do not fit a page: %w", name, dir.ID, n, syscall.EFBIG)
			}
			a, err := t.get(id)
			if err != nil {
				return fmt.Errorf("directory entry %q in %d: %w", name, dir.ID, err)
			}
			size += n
			out = append(out, DirEntry{Name: name, Attr: a})
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// Remove removes a name of a file or an empty directory (ENOTEMPTY
// otherwise) and returns its attributes, so the caller can delete a file's
// datafiles once its last name is gone: Nlink is the names left.
// Removing "/" is EBUSY.
func (s *Store) Remove(ctx context.Context, path string) (Attr, error) {
	var a Attr
	err := s.update(ctx, "remove", path, func(t *txn, comps []string) error {
		a = Attr{}
		if len(comps) == 0 {
			return fmt.Errorf("cannot remove the root directory: %w", syscall.EBUSY)
		}
		parent, victim, err := t.resolve(comps)
		if err != nil {
			return err
		}
		if err := t.mayDelete(&parent, &victim); err != nil {
			return err
		}
		if victim.Kind == KindDir && !t.isEmpty(victim.ID) {
			return syscall.ENOTEMPTY
		}
		now := time.Now().UnixNano()
		if a, err = t.unlink(&parent, comps[len(comps)-1], victim, now); err != nil {
			return err
		}
		return t.touchDir(&parent, now)
	})
	if err == nil && a.Kind == KindDir {
		s.delegs.drop(a.ID, 0)
	}
	return a, err
}

// mayDelete checks that the caller may remove victim from dir (checkDelete).
func (t *txn) mayDelete(dir, victim *Attr) error {
	if t.cred == nil {
		return nil
	}
	return checkDelete(dir, victim, *t.cred)
}

// unlink deletes the entry name (whose inode is a) from parent, and the
// inode with its last name (see dropName). The caller stores parent.
func (t *txn) unlink(parent *Attr, name string, a Attr, now int64) (Attr, error) {
	t.unbound(parent.ID, name, a.ID)
	if err := t.dirents.Delete(direntKey(parent.ID, name)); err != nil {
		return Attr{}, err
	}
	return t.dropName(parent, a, now)
}

// Rename moves oldpath to newpath with POSIX semantics. An existing target
// is replaced if compatible: a file by a file, an empty directory by a
// directory; its attributes are returned as replaced so the caller can delete
// a replaced file's datafiles (check Kind: a replaced directory has none;
// and Nlink: a file with names left keeps them). Renaming a name onto
// another name of the same file does nothing, as POSIX says.
// Errors: a directory over a file is ENOTDIR, a file over a directory EISDIR,
// over a non-empty directory ENOTEMPTY; moving a directory into its own
// subtree, or renaming "/" or onto "/", is EINVAL. Renaming a path onto
// itself does nothing. The error's Path is the path at fault.
func (s *Store) Rename(ctx context.Context, oldpath, newpath string) (replaced *Attr, err error) {
	const op = "rename"
	if err := ctx.Err(); err != nil {
		return nil, wrapErr(op, oldpath, err)
	}
	oldc, err := splitPath(oldpath)
	if err != nil {
		return nil, wrapErr(op, oldpath, err)
	}
	newc, err := splitPath(newpath)
	if err != nil {
		return nil, wrapErr(op, newpath, err)
	}
	if len(oldc) == 0 {
		return nil, wrapErr(op, oldpath, fmt.Errorf("cannot rename the root directory: %w", syscall.EINVAL))
	}
	if len(newc) == 0 {
		return nil, wrapErr(op, newpath, fmt.Errorf("cannot replace the root directory: %w", syscall.EINVAL))
	}
	// Run again after a recall of a directory it reaches (withRecalls):
	// it starts afresh.
	rename := func(t *txn) error {
		replaced = nil
		oldParent, a, err := t.resolve(oldc)
		if err != nil {
			return wrapErr(op, oldpath, err)
		}
		// A trailing slash on either name asks for a directory, as
		// rename(2) says.
		for _, p := range []string{oldpath, newpath} {
			if a.Kind != KindDir && strings.HasSuffix(p, "/") {
				return wrapErr(op, p, fmt.Errorf("a trailing slash asks for a directory, and %s is not one: %w", strings.TrimRight(oldpath, "/"), syscall.ENOTDIR))
			}
		}
		newParent, _, err := t.walkDir(newc[:len(newc)-1])
		if err != nil {
			return wrapErr(op, newpath, err)
		}
		if err := expected("directory", t.expect.To, &newParent); err != nil {
			return wrapErr(op, newpath, err)
		}
		if equalComps(oldc, newc) {
			return nil
		}
		if err := t.mayDelete(&oldParent, &a); err != nil {
			return wrapErr(op, oldpath, err)
		}
		if err := t.may(&newParent, MayWrite|MayExec); err != nil {
			return wrapErr(op, newpath, err)
		}
		// A directory that changes parent has its ".." rewritten: it must
		// be writable too (as Linux asks).
		if a.Kind == KindDir && newParent.ID != oldParent.ID {
			if err := t.may(&a, MayWrite); err != nil {
				return wrapErr(op, oldpath, err)
			}
		}
		if a.Kind == KindDir && len(newc) > len(oldc) && equalComps(oldc, newc[:len(oldc)]) {
			return wrapErr(op, newpath, fmt.Errorf("cannot move directory %s into itself: %w", oldpath, syscall.EINVAL))
		}
		newName := newc[len(newc)-1]
		target, exists, err := t.childAttr(newParent.ID, newName)
		if err != nil {
			return wrapErr(op, newpath, err)
		}
		if exists && target.ID == a.ID {
			return nil // two names of one file: POSIX says rename does nothing
		}
		if exists {
			if err := t.mayDelete(&newParent, &target); err != nil {
				return wrapErr(op, newpath, err)
			}
			switch {
			case a.Kind == KindDir && target.Kind != KindDir:
				return wrapErr(op, newpath, syscall.ENOTDIR)
			case a.Kind != KindDir && target.Kind == KindDir:
				return wrapErr(op, newpath, syscall.EISDIR)
			case target.Kind == KindDir && !t.isEmpty(target.ID):
				return wrapErr(op, newpath, syscall.ENOTEMPTY)
			}
			gone, err := t.unlink(&newParent, newName, target, time.Now().UnixNano())
			if err != nil {
				return err
			}
			replaced = &gone
		}
		t.unbound(oldParent.ID, oldc[len(oldc)-1], a.ID)
		if err := t.dirents.Delete(direntKey(oldParent.ID, oldc[len(oldc)-1])); err != nil {
			return err
		}
		if err := t.dirents.Put(direntKey(newParent.ID, newName), idKey(a.ID)); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		a.Ctime = now
		if err := t.put(&a); err != nil {
			return err
		}
		if newParent.ID == oldParent.ID {
			return t.touchDir(&newParent, now)
		}
		if a.Kind == KindDir {
			moveSubdir(&oldParent, &newParent)
		}
		if err := t.touchDir(&oldParent, now); err != nil {
			return err
		}
		return t.touchDir(&newParent, now)
	}
	err = s.withRecalls(ctx, func() error { return s.mutate(ctx, rename) })
	if err != nil {
		return nil, wrapErr(op, oldpath, err)
	}
	return replaced, nil
}

func equalComps(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SetLayout changes a layout. On a directory it sets the default that new
// files below it inherit (validated for Options.Servers and stored with
// canonical parameters and the requested datafile count, 0 meaning all
// servers), or clears it when l is the zero Layout. On a file it replaces
// the file's layout, which is only allowed while the file holds no data
// (fileIsEmpty, which the caller checks on the I/O servers; EBUSY otherwise):
// the layout is validated and resolved, the server list rebuilt from the same
// first server, and Stuffed cleared; the datafiles the new server list adds
// are made first (Options.Datafiles), and those it drops are removed after
// the commit. A file's layout cannot be cleared.
func (s *Store) SetLayout(ctx context.Context, path string, l dist.Layout, fileIsEmpty bool) (Attr, error) {
	var a Attr
	// A file's new datafiles exist before the commit names them.
	var old Attr
	var oldActive, added, dropped []uint32
	err := s.view(ctx, "setlayout", path, func(t *txn, comps []string) error {
		var err error
		if old, err = t.lookup(comps); err != nil || old.Kind != KindFile || l.IsZero() || !fileIsEmpty {
			return err
		}
		r, _, err := s.build(l)
		if err != nil {
			return err
		}
		var first uint32
		if len(old.Servers) > 0 {
			first = old.Servers[0] % uint32(s.opts.Servers)
		}
		oldActive = old.Servers
		if old.Stuffed {
			oldActive = oldActive[:1]
		}
		added, dropped = diffServers(oldActive, s.place(first, r.Datafiles))
		return nil
	})
	if err != nil {
		return Attr{}, err
	}
	s.makingAdd(old.ID, added)
	defer s.makingDone(old.ID, added)
	if err := s.makeDatafiles(ctx, old.ID, added, false); err != nil {
		return Attr{}, wrapErr("setlayout", path, err)
	}
	if old.Kind == KindDir {
		// The files of any held directory below may get this layout
		// from now on: no mount may go on giving them the one it knew
		// (reserve.go).
		if err := s.recallEvery(ctx); err != nil {
			return Attr{}, wrapErr("setlayout", path, err)
		}
	}
	err = s.update(ctx, "setlayout", path, func(t *txn, comps []string) error {
		var err error
		a, err = t.lookup(comps)
		if err != nil {
			return err
		}
		if t.cred != nil {
			if err := checkOwnerOrWrite(&a, *t.cred); err != nil {
				return err
			}
		}
		if a.Kind.Special() || a.Kind == KindSymlink {
			return fmt.Errorf("a special file or symbolic link has no layout: %w", syscall.EINVAL)
		}
		if l.IsZero() && (l != dist.Layout{} || a.Kind == KindFile) {
			what := "a layout without a distribution name"
			if a.Kind == KindFile {
				what = "a file's layout cannot be cleared"
			}
			return fmt.Errorf("%s: %w", what, syscall.EINVAL)
		}
		switch {
		case a.Kind == KindDir && l.IsZero():
			a.Layout = dist.Layout{}
		case a.Kind == KindDir && l.Servers != "":
			return errPinnedDefault
		case a.Kind == KindDir:
			r, _, err := s.build(l)
			if err != nil {
				return err
			}
			r.Datafiles = l.Datafiles
			a.Layout = r
		case !fileIsEmpty:
			return fmt.Errorf("the layout of a file with data cannot change: %w", syscall.EBUSY)
		default:
			r, _, err := s.build(l)
			if err != nil {
				return err
			}
			if a.ID != old.ID || a.Stuffed != old.Stuffed || !slices.Equal(a.Servers, old.Servers) {
				return fmt.Errorf("file changed during setlayout: %w", syscall.EAGAIN)
			}
			var first uint32
			if len(a.Servers) > 0 {
				first = a.Servers[0] % uint32(s.opts.Servers)
			}
			a.Layout, a.Servers, a.Stuffed = r, s.placeFor(l, first, r.Datafiles), false
		}
		a.Ctime = time.Now().UnixNano()
		return t.put(&a)
	})
	if err == nil && a.Kind == KindFile {
		s.removeDatafiles(ctx, a.ID, dropped)
	}
	return a, err
}

// diffServers returns the servers of next not in prev, and of prev not in
// next.
func diffServers(prev, next []uint32) (added, dropped []uint32) {
	for _, x := range next {
		if !slices.Contains(prev, x) {
			added = append(added, x)
		}
	}
	for _, x := range prev {
		if !slices.Contains(next, x) {
			dropped = append(dropped, x)
		}
	}
	return added, dropped
}

// Unstuff clears a file's Stuffed flag, so that its data may spread to
// the full layout: first it makes the datafiles beyond the first on the
// I/O servers (Options.Datafiles). One that exists already is the file's
// own (an earlier Unstuff that did not commit, or a database restored from
// before one that did): IDs are never handed out twice. It is idempotent.
// A directory is EISDIR.
func (s *Store) Unstuff(ctx context.Context, id FileID) (Attr, error) {
	if err := ctx.Err(); err != nil {
		return Attr{}, wrapErr("unstuff", idPath(id), err)
	}
	a, err := s.GetByID(ctx, id)
	if err != nil {
		return Attr{}, wrapErr("unstuff", idPath(id), errors.Unwrap(err))
	}
	if a.Kind != KindFile {
		return Attr{}, wrapErr("unstuff", idPath(id), syscall.EISDIR)
	}
	if !a.Stuffed {
		return a, nil
	}
	if err := s.makeDatafiles(ctx, id, a.Servers[1:], false); err != nil {
		return Attr{}, wrapErr("unstuff", idPath(id), err)
	}
	servers := a.Servers
	err = s.mutate(ctx, func(t *txn) error {
		var err error
		if a, err = t.get(id); err != nil {
			return err
		}
		if a.Kind != KindFile {
			return syscall.EISDIR
		}
		if !a.Stuffed {
			return nil
		}
		if !slices.Equal(a.Servers, servers) {
			return fmt.Errorf("layout changed during unstuff: %w", syscall.EAGAIN)
		}
		a.Stuffed = false
		a.Ctime = time.Now().UnixNano()
		return t.put(&a)
	})
	if errors.Is(err, syscall.ENOENT) {
		// Removed meanwhile, as a stuffed file: its remover deleted the
		// first datafile only.
		s.removeDatafiles(ctx, id, servers[1:])
	}
	return a, wrapErr("unstuff", idPath(id), err)
}

// SetAttr changes the attributes set in req: Mode (permission bits), Mtime,
// Atime, and for files the Size hint (negative is EINVAL; on a directory
// EISDIR). Any change sets Ctime to now, except a read's Atime (Access);
// times change only when given.
func (s *Store) SetAttr(ctx context.Context, path string, req AttrChanges) (Attr, error) {
	var a Attr
	err := s.update(ctx, "setattr", path, func(t *txn, comps []string) error {
		var err error
		if a, err = t.lookup(comps); err != nil {
			return err
		}
		if req.Size != nil {
			if a.Kind != KindFile {
				return syscall.EISDIR
			}
			if *req.Size < 0 {
				return fmt.Errorf("negative size %d: %w", *req.Size, syscall.EINVAL)
			}
		}
		if req.Access && (req.Atime == nil || req.Mode != nil || req.Mtime != nil || req.Size != nil ||
			req.Uid != nil || req.Gid != nil || req.KillPriv) {
			return fmt.Errorf("an access sets atime alone: %w", syscall.EINVAL)
		}
		if req.Mode == nil && req.Mtime == nil && req.Atime == nil && req.Size == nil &&
			req.Uid == nil && req.Gid == nil && !req.KillPriv {
			return nil
		}
		if req.Access {
			a.Atime = *req.Atime
			return t.put(&a)
		}
		if err := t.setOwnership(&a, req); err != nil {
			return err
		}
		if req.Mtime != nil {
			a.Mtime = *req.Mtime
		}
		if req.Atime != nil {
			a.Atime = *req.Atime
		}
		if req.Size != nil {
			a.Size = *req.Size
		}
		a.Ctime = time.Now().UnixNano()
		return t.put(&a)
	})
	return a, err
}

// setOwnership applies the owner, mode and time changes of req to a,
// checking that the caller may make them: chown (chownAttr), chmod
// (chmodMode), clearing setuid/setgid (checkKillPriv), times (checkTimes).
func (t *txn) setOwnership(a *Attr, req AttrChanges) error {
	c := t.caller()
	if t.cred != nil && (req.Mtime != nil || req.Atime != nil) {
		if err := checkTimes(a, c, req.Now); err != nil {
			return err
		}
	}
	if req.KillPriv {
		if t.cred != nil {
			if err := checkKillPriv(a, c); err != nil {
				return err
			}
		}
		a.Mode = killPriv(a.Mode)
	}
	if req.Uid != nil || req.Gid != nil {
		uid, gid, mode, err := chownAttr(a, c, req.Uid, req.Gid)
		if err != nil {
			return err
		}
		a.Uid, a.Gid, a.Mode = uid, gid, mode
	}
	if req.Mode != nil {
		mode := *req.Mode & 0o7777
		if t.cred != nil {
			var err error
			if mode, err = chmodMode(a, c, mode); err != nil {
				return err
			}
		}
		a.Mode = mode
	}
	return nil
}

// Stats returns how many files and directories (the root included) exist.
func (s *Store) Stats(ctx context.Context) (files, dirs int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("meta: stats: %w", err)
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		t := newTxn(tx)
		files, dirs = int64(t.counter(keyFiles)), int64(t.counter(keyDirs))
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("meta: stats: %w", err)
	}
	return files, dirs, nil
}
