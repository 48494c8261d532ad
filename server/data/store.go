package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pario/pario/vfs"
)

// Defaults for StoreOptions.
const (
	DefaultMaxOpenFiles = 1024
	DefaultWriteBehind  = 8 << 20
)

// Names inside the data directory; see the package documentation.
const (
	lockName = "LOCK"
	dfName   = "df"
)

// statfsTTL is the age past which Statfs starts a new walk of the
// datafiles (it answers from the last one meanwhile).
const statfsTTL = time.Second

var (
	// ErrClosed is returned (wrapped) by operations on a closed Store.
	ErrClosed = errors.New("data store is closed")
	// ErrLocked is returned (wrapped) by Open when another process (or
	// another Store in this process) holds the data directory.
	ErrLocked = errors.New("data directory is in use by another I/O server")
)

// DirDescriptors is how many descriptors a Store holds besides its
// datafile handles once every shard has been used: up to 259 directories
// (data dir, df, the 256 shards) and the LOCK file.
const DirDescriptors = 260

// StoreOptions tune a Store. The zero value gives the defaults.
type StoreOptions struct {
	// MaxOpenFiles bounds the LRU cache of open datafile handles; zero or
	// negative means DefaultMaxOpenFiles. Handles still in use when evicted
	// are closed by their last user, so the number of open descriptors can
	// briefly exceed it by the number of concurrent operations. The store
	// also holds up to DirDescriptors more (data dir, df, shards, the LOCK
	// file).
	MaxOpenFiles int
	// WriteBehind is the number of bytes written to one datafile after
	// which the store starts writeback of the range written since the last
	// start (sync_file_range(SYNC_FILE_RANGE_WRITE), which does not wait),
	// so that a later Sync finds little dirty data. Zero means
	// DefaultWriteBehind; negative disables write-behind.
	WriteBehind int64
	// DiskRate, if positive, caps the datafile bytes written and read per
	// second (the emulated cluster's disk, diskrate.go).
	DiskRate float64
	// DiskSeek, if positive, is the time the emulated disk charges a
	// request that does not start where the previous one on its
	// datafile ended (diskrate.go).
	DiskSeek time.Duration
	// LockRevoke, if positive, turns on the emulation of Lustre's extent
	// locks (extentlock.go): the time the emulated disk charges for each
	// lock a write takes from another writer.
	LockRevoke time.Duration
	// Name, if set, is the I/O server's name in its cluster (data0): the
	// first Open records it in the directory (identity.go), and an Open
	// with another name is refused, since a server serving another's
	// directory answers for one datafile with another's bytes.
	Name string
	// FS, if set, is the data directory itself (the dir given to Open
	// then only names it in errors and Dir), for tests that inject
	// faults (vfs/errorfs) or crash (vfs.MemFS). The Store does not
	// close it. Nil means the operating system's directory dir, created
	// if missing and confined with os.Root (vfs.OS).
	FS vfs.FS
}

// Statfs describes the space of a data directory.
type Statfs struct {
	// Total, Free and Avail are the file system's size, free bytes and
	// bytes available to unprivileged users (statfs of the data directory).
	Total, Free, Avail uint64
	// Used is the space allocated to datafiles (st_blocks*512 summed over
	// them, so holes do not count), and Datafiles how many exist. Both come
	// from a walk of df/ that is reused for up to a second.
	Used      uint64
	Datafiles uint64
	// FSID names the file system holding the data directory (see
	// vfs.DiskUsage.FSID): servers sharing one report the same, and
	// clients count its space once. 0 means unknown.
	FSID uint64
}

// Store is the set of datafiles in one data directory. All methods are safe
// for concurrent use; reads and writes (including to the same datafile) run
// in parallel, using positional I/O on shared descriptors.
type Store struct {
	dir         string
	maxOpen     int
	writeBehind int64

	root    vfs.FS   // the data directory
	ownRoot bool     // root was opened by Open, so Close closes it
	df      vfs.FS   // df/ inside it
	lock    vfs.File // LOCK, locked

	shardMu sync.Mutex
	shards  [256]atomic.Pointer[vfs.FS]

	idLocks [64]sync.Mutex

	ops sync.WaitGroup // operations in flight; Add only under mu while !closed

	mu          sync.Mutex
	closed      bool
	handles     map[uint64]*handle   // cached handles
	lru         handle               // sentinel of the LRU list of cached handles
	busy        map[*handle]struct{} // evicted handles still in use
	closedDirty bool                 // a dirty handle was closed since SyncAll
	needDirSync map[uint64]uint64    // id -> creation generation, until its shard dir is synced
	createGen   uint64
	// unlinked holds the datafiles whose file was unlinked since the last
	// syncfs: made again as unwritten (a record, no file), such an id
	// would find its old file back after a crash, so Create and
	// CreateBatch syncfs first (unwritten.go).
	unlinked map[uint64]struct{}

	// batchMu orders pool batches (CreateBatch, RemoveIfEmpty) against
	// each other and against Claim: a metadata server that starts while
	// its dead predecessor's batch is still being made here must find,
	// when it claims and then discards the old pool, every datafile that
	// batch left, not a part of it that later grows (see CreateBatch).
	batchMu sync.Mutex

	// name is the server's name (StoreOptions.Name, recorded in SERVER);
	// "" when opened without one.
	name string

	// incMu serializes Claim; incarnation is the recorded cluster
	// incarnation (0: none), unclaimed says datafiles exist without one.
	incMu       sync.Mutex
	incarnation uint64
	unclaimed   atomic.Bool

	disk diskLimit

	unw unwritten // datafiles made but never written (unwritten.go)

	statMu      sync.Mutex
	statTTL     time.Duration
	statAt      time.Time
	statUsed    uint64
	statCount   uint64
	statWalking bool // a walk in the background (usage)
}

// Open opens the data directory dir, creating it (0700) and its layout if
// missing, and locks it against other Stores until Close.
func Open(dir string, opts StoreOptions) (_ *Store, err error) {
	s := &Store{
		dir:         dir,
		maxOpen:     opts.MaxOpenFiles,
		writeBehind: opts.WriteBehind,
		handles:     make(map[uint64]*handle),
		busy:        make(map[*handle]struct{}),
		needDirSync: make(map[uint64]uint64),
		unlinked:    make(map[uint64]struct{}),
		statTTL:     statfsTTL,
		disk:        newDiskLimit(diskModel{rate: opts.DiskRate, seek: opts.DiskSeek, revoke: opts.LockRevoke}),
	}
	if s.maxOpen <= 0 {
		s.maxOpen = DefaultMaxOpenFiles
	}
	if s.writeBehind == 0 {
		s.writeBehind = DefaultWriteBehind
	}
	s.lru.next, s.lru.prev = &s.lru, &s.lru

	if opts.FS != nil {
		s.root = opts.FS
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("data: open %s: %w", dir, err)
		}
		s.root, err = vfs.OS(dir)
		if err != nil {
			return nil, fmt.Errorf("data: open %s: %w", dir, err)
		}
		s.ownRoot = true
	}
	defer func() {
		if err != nil {
			s.closeFiles()
		}
	}()

	s.lock, err = s.root.Lock(lockName)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("data: open %s: flock %s: %w%s", dir, lockName, ErrLocked, lockHolder(s.root))
	}
	if err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := s.lock.Truncate(0); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	if _, err := s.lock.WriteAt(pid, 0); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}

	if err := mkdirIfMissing(s.root, dfName); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	s.df, err = s.root.OpenRoot(dfName)
	if err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	for i := range 256 {
		if err := mkdirIfMissing(s.df, shardName(byte(i))); err != nil {
			return nil, fmt.Errorf("data: open %s: %s: %w", dir, dfName, err)
		}
	}
	if err := s.openUnwritten(); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	// Make the layout durable before any datafile is created in it. Do it
	// on every Open, not only when this one created a directory: an Open
	// that failed between creating a directory and syncing its parent
	// left the entry in the page cache only, and nothing else syncs it.
	if err := syncDir(s.df); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	if err := syncDir(s.root); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	if err := s.checkIdentity(opts.Name); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	if err := s.readIncarnation(); err != nil {
		return nil, fmt.Errorf("data: open %s: %w", dir, err)
	}
	return s, nil
}

// lockHolder returns " (pid N)" naming the process that holds the data
// directory r by the pid it wrote into LOCK, or "" if that is unknown.
func lockHolder(r vfs.FS) string {
	f, err := r.OpenFile(lockName, os.O_RDONLY, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	if pid := strings.TrimSpace(string(b[:n])); pid != "" {
		return " (pid " + pid + ")"
	}
	return ""
}

// mkdirIfMissing creates directory name (0700) in r if it is missing. An
// existing entry of any type is left alone; if it is not a usable
// directory, opening it later fails.
func mkdirIfMissing(r vfs.FS, name string) error {
	if err := r.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// syncDir fsyncs the directory r is opened on.
func syncDir(r vfs.FS) error { return r.SyncDir(".") }

const hexDigits = "0123456789abcdef"

// shardName is the name, inside df/, of shard directory i: two hex digits.
func shardName(i byte) string {
	return string([]byte{hexDigits[i>>4], hexDigits[i&0xf]})
}

// leafName is the name of datafile id inside its shard: 16 hex digits.
func leafName(id uint64) string {
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = hexDigits[id&0xf]
		id >>= 4
	}
	return string(b[:])
}

// datafilePath is the path of datafile id relative to the data directory,
// e.g. "df/ab/00000000000001ab". It depends on nothing but id.
func datafilePath(id uint64) string {
	return dfName + "/" + shardName(byte(id)) + "/" + leafName(id)
}

// Dir returns the data directory the Store was opened on.
func (s *Store) Dir() string { return s.dir }

// begin admits an operation; on success the caller must call s.ops.Done.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.ops.Add(1)
	return nil
}

func dfErr(id uint64, op string, err error) error {
	return fmt.Errorf("datafile %#x: %s: %w", id, op, err)
}

func invalid(what string, v int64) error {
	return fmt.Errorf("invalid %s %d: %w", what, v, syscall.EINVAL)
}

// checkRange validates a byte range [off, off+n).
func checkRange(off, n int64) error {
	if off < 0 {
		return invalid("offset", off)
	}
	if n > math.MaxInt64-off {
		return fmt.Errorf("offset %d + length %d overflows: %w", off, n, syscall.EINVAL)
	}
	return nil
}

// Create makes datafile id, empty. It is exclusive: a datafile that exists
// already is fs.ErrExist (EEXIST), whatever it holds, so an ID handed out
// twice (a metadata database restored from a backup) can never give one
// file another's bytes. The datafile starts unwritten (unwritten.go): a
// record, not yet a file. It becomes durable with the datafile's first
// Sync (or SyncAll), as the data written to it does: a crash before that
// may leave no datafile, which pario fsck reports as a file whose datafile
// is missing.
func (s *Store) Create(ctx context.Context, id uint64) error {
	if err := s.begin(ctx); err != nil {
		return dfErr(id, "create", err)
	}
	defer s.ops.Done()
	l := s.idLock(id)
	l.Lock()
	defer l.Unlock()
	exists, err := s.existsLocked(id)
	if err != nil {
		return dfErr(id, "create", err)
	}
	if exists {
		return dfErr(id, "create", fs.ErrExist)
	}
	if s.unlinkedSinceSync(id) {
		if err := s.syncFS(); err != nil {
			return dfErr(id, "create", err)
		}
	}
	if err := s.recordUnwritten([]uint64{id}, false); err != nil {
		return dfErr(id, "create", err)
	}
	return nil
}

// syncFS makes everything in the data directory's file system durable
// (syncfs) and forgets the unlinks it made durable.
func (s *Store) syncFS() error {
	// Removal records still in memory go to the log first, so that the
	// syncfs covers them (forgetUnwritten).
	s.unw.mu.Lock()
	err := s.appendUnwrittenLocked(nil, 0, false)
	s.unw.mu.Unlock()
	if err != nil {
		return err
	}
	return s.syncFSLocked()
}

// syncFSLocked is syncFS for a caller holding the unwritten log's lock,
// which either rewrites the log or has nothing pending in it.
func (s *Store) syncFSLocked() error {
	s.mu.Lock()
	done := make([]uint64, 0, len(s.unlinked))
	for id := range s.unlinked {
		done = append(done, id)
	}
	s.mu.Unlock()
	if err := s.root.SyncFS(); err != nil {
		return err
	}
	s.mu.Lock()
	for _, id := range done {
		delete(s.unlinked, id)
	}
	s.mu.Unlock()
	return nil
}

// unlinkedSinceSync reports whether datafile id's file was unlinked since
// the last syncfs.
func (s *Store) unlinkedSinceSync(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.unlinked[id]
	return ok
}

// existsLocked reports whether datafile id exists, as a file or
// unwritten. Holds id's lock.
func (s *Store) existsLocked(id uint64) (bool, error) {
	if h := s.lookup(id); h != nil {
		s.release(h)
		return true, nil
	}
	if s.isUnwritten(id) {
		return true, nil
	}
	sh, err := s.shard(id)
	if err != nil {
		return false, err
	}
	f, err := sh.OpenFile(leafName(id), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_ = f.Close()
	return true, nil
}

// WriteAt writes p at offset off of datafile id, making the file of an
// unwritten datafile. A datafile that does not exist is ESTALE (see
// ErrStale): only Create and CreateBatch make datafiles, so a write racing
// with the removal of its file cannot bring the file back. An empty p
// changes nothing.
func (s *Store) WriteAt(ctx context.Context, id uint64, p []byte, off int64) error {
	if err := checkRange(off, int64(len(p))); err != nil {
		return dfErr(id, "write at "+strconv.FormatInt(off, 10), err)
	}
	if err := s.begin(ctx); err != nil {
		return dfErr(id, "write at "+strconv.FormatInt(off, 10), err)
	}
	defer s.ops.Done()
	if len(p) == 0 {
		return nil
	}
	h, err := s.acquireExisting(id)
	if err != nil {
		return dfErr(id, "write at "+strconv.FormatInt(off, 10), err)
	}
	defer s.release(h)
	if err := s.disk.wait(ctx, id, originOf(ctx), off, int64(len(p))); err != nil {
		return dfErr(id, "write at "+strconv.FormatInt(off, 10), err)
	}
	n, err := h.f.WriteAt(p, off)
	h.dirty.Store(true)
	s.wrote(h, off, int64(n))
	if err != nil {
		return dfErr(id, "write at "+strconv.FormatInt(off, 10), err)
	}
	return nil
}

// WriteAtv writes the buffers of bufs back to back starting at offset off
// of datafile id (a gathered write: pwritev when there are several); a
// missing datafile is ESTALE as for WriteAt. Partial writes are retried
// until everything is written or an error occurs.
func (s *Store) WriteAtv(ctx context.Context, id uint64, bufs [][]byte, off int64) error {
	var total int64
	nonEmpty, last := 0, -1
	for i, b := range bufs {
		if len(b) > 0 {
			nonEmpty++
			last = i
		}
		if int64(len(b)) > math.MaxInt64-total {
			return dfErr(id, "writev at "+strconv.FormatInt(off, 10),
				fmt.Errorf("total length overflows: %w", syscall.EINVAL))
		}
		total += int64(len(b))
	}
	if nonEmpty <= 1 {
		var p []byte
		if last >= 0 {
			p = bufs[last]
		}
		return s.WriteAt(ctx, id, p, off)
	}
	op := func() string { return "writev at " + strconv.FormatInt(off, 10) }
	if err := checkRange(off, total); err != nil {
		return dfErr(id, op(), err)
	}
	if err := s.begin(ctx); err != nil {
		return dfErr(id, op(), err)
	}
	defer s.ops.Done()
	h, err := s.acquireExisting(id)
	if err != nil {
		return dfErr(id, op(), err)
	}
	defer s.release(h)
	if err := s.disk.wait(ctx, id, originOf(ctx), off, total); err != nil {
		return dfErr(id, op(), err)
	}
	n, err := vfs.WriteAtv(h.f, bufs, off)
	h.dirty.Store(true)
	s.wrote(h, off, n)
	if err != nil {
		return dfErr(id, op(), err)
	}
	return nil
}

// wrote does the write-behind accounting for n bytes written at off
// through h, starting writeback once WriteBehind bytes have accumulated.
func (s *Store) wrote(h *handle, off, n int64) {
	if s.writeBehind <= 0 || n <= 0 {
		return
	}
	h.wbMu.Lock()
	if h.wbPending == 0 {
		h.wbLo, h.wbHi = off, off+n
	} else {
		h.wbLo = min(h.wbLo, off)
		h.wbHi = max(h.wbHi, off+n)
	}
	h.wbPending += n
	if h.wbPending < s.writeBehind {
		h.wbMu.Unlock()
		return
	}
	lo, hi := h.wbLo, h.wbHi
	h.wbPending = 0
	h.wbMu.Unlock()
	vfs.StartWriteback(h.f, lo, hi-lo)
}

// ReadAt reads up to len(p) bytes at offset off of datafile id, with the
// semantics of os.File.ReadAt: it returns n < len(p) only together with an
// error, which is io.EOF (unwrapped) when the datafile ends before
// off+len(p). An unwritten datafile reads as empty (0, io.EOF), one that
// does not exist is ESTALE (see acquire); holes read as zeros.
func (s *Store) ReadAt(ctx context.Context, id uint64, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, dfErr(id, "read at "+strconv.FormatInt(off, 10), invalid("offset", off))
	}
	if err := s.begin(ctx); err != nil {
		return 0, dfErr(id, "read at "+strconv.FormatInt(off, 10), err)
	}
	defer s.ops.Done()
	if len(p) == 0 {
		return 0, nil
	}
	h, err := s.acquire(id)
	if err != nil {
		return 0, dfErr(id, "read at "+strconv.FormatInt(off, 10), err)
	}
	if h == nil {
		return 0, io.EOF
	}
	defer s.release(h)
	if err := s.disk.wait(ctx, id, 0, off, int64(len(p))); err != nil {
		return 0, dfErr(id, "read at "+strconv.FormatInt(off, 10), err)
	}
	n, err := h.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, dfErr(id, "read at "+strconv.FormatInt(off, 10), err)
	}
	return n, err
}

// Truncate sets the size of datafile id (making the file of an unwritten
// one); growing it adds a hole. A datafile that does not exist is ESTALE.
func (s *Store) Truncate(ctx context.Context, id uint64, size int64) error {
	op := "truncate to " + strconv.FormatInt(size, 10)
	if size < 0 {
		return dfErr(id, op, invalid("size", size))
	}
	if err := s.begin(ctx); err != nil {
		return dfErr(id, op, err)
	}
	defer s.ops.Done()
	h, err := s.acquireExisting(id)
	if err != nil {
		return dfErr(id, op, err)
	}
	defer s.release(h)
	err = h.f.Truncate(size)
	h.dirty.Store(true)
	if err != nil {
		return dfErr(id, op, err)
	}
	return nil
}

// Size returns the size of datafile id: 0 if it is unwritten, ESTALE if
// it does not exist.
func (s *Store) Size(ctx context.Context, id uint64) (int64, error) {
	size, _, err := s.Usage(ctx, id)
	return size, err
}

// Usage returns datafile id's physical size and the bytes the file system
// has allocated to it (st_blocks*512: holes take none), both 0 for a
// datafile never written. A datafile that does not exist is ESTALE.
func (s *Store) Usage(ctx context.Context, id uint64) (size, alloc int64, err error) {
	if err := s.begin(ctx); err != nil {
		return 0, 0, dfErr(id, "size", err)
	}
	defer s.ops.Done()
	h, err := s.acquire(id)
	if err != nil {
		return 0, 0, dfErr(id, "size", err)
	}
	if h == nil {
		return 0, 0, nil
	}
	defer s.release(h)
	fi, err := h.f.Stat()
	if err != nil {
		return 0, 0, dfErr(id, "size", err)
	}
	return fi.Size(), int64(allocated(fi)), nil
}

// Sync makes datafile id durable: everything written to it before Sync was
// called survives a crash once Sync returns nil. A datafile that does not
// exist is ESTALE. The first Sync after the datafile's file was made also
// fsyncs its shard directory, so the file itself survives; for an
// unwritten datafile Sync makes its record durable.
func (s *Store) Sync(ctx context.Context, id uint64) error {
	if err := s.begin(ctx); err != nil {
		return dfErr(id, "sync", err)
	}
	defer s.ops.Done()
	if s.isUnwritten(id) {
		// Nothing written: only its record needs to be durable. (A write
		// that made the file meanwhile came after this Sync was called.)
		if err := s.syncUnwritten(); err != nil {
			return dfErr(id, "sync", err)
		}
		return nil
	}
	h, err := s.acquireExisting(id)
	if err != nil {
		return dfErr(id, "sync", err)
	}
	// Data written through a handle that has since been closed is still in
	// the inode's page cache, so fdatasync on this handle covers it too.
	h.dirty.Store(false)
	err = h.f.Sync()
	if err != nil {
		h.dirty.Store(true)
	}
	s.release(h)
	if err != nil {
		return dfErr(id, "sync", err)
	}
	s.mu.Lock()
	gen, need := s.needDirSync[id]
	s.mu.Unlock()
	if !need {
		return nil
	}
	if err := s.syncShard(byte(id)); err != nil {
		return dfErr(id, "sync", err)
	}
	s.mu.Lock()
	if s.needDirSync[id] == gen {
		delete(s.needDirSync, id)
	}
	s.mu.Unlock()
	return nil
}

// syncShard fsyncs shard directory i.
func (s *Store) syncShard(i byte) error {
	sh, err := s.shard(uint64(i))
	if err != nil {
		return err
	}
	if err := syncDir(sh); err != nil {
		return fmt.Errorf("sync directory %s/%s: %w", dfName, shardName(i), err)
	}
	return nil
}

// SyncAll makes everything written through the Store so far durable: it
// fdatasyncs every open datafile with unsynced writes, the whole file
// system (syncfs) if such a datafile's handle has been closed by the LRU
// since the last SyncAll, and the shard directories of datafiles created
// since their last sync. Call it before Close on shutdown.
func (s *Store) SyncAll(ctx context.Context) error {
	if err := s.begin(ctx); err != nil {
		return fmt.Errorf("data: sync all: %w", err)
	}
	defer s.ops.Done()

	s.mu.Lock()
	var hs []*handle
	take := func(h *handle) {
		if h.dirty.Load() && !h.removed {
			h.refs++
			hs = append(hs, h)
		}
	}
	for _, h := range s.handles {
		take(h)
	}
	for h := range s.busy {
		take(h)
	}
	needSyncfs := s.closedDirty || len(s.unlinked) > 0
	s.closedDirty = false
	dirs := maps.Clone(s.needDirSync)
	s.mu.Unlock()

	var errs []error
	if err := s.syncUnwritten(); err != nil {
		errs = append(errs, fmt.Errorf("data: sync all: %w", err))
	}
	for _, h := range hs {
		if h.dirty.Swap(false) {
			if err := h.f.Sync(); err != nil {
				h.dirty.Store(true)
				errs = append(errs, dfErr(h.id, "sync", err))
			}
		}
		s.release(h)
	}
	if needSyncfs {
		if err := s.syncFS(); err != nil {
			s.mu.Lock()
			s.closedDirty = true
			s.mu.Unlock()
			errs = append(errs, fmt.Errorf("data: sync all: %w", err))
		}
	}
	var shardErr [256]error
	var shardDone [256]bool
	for id := range dirs {
		i := byte(id)
		if !shardDone[i] {
			shardDone[i] = true
			shardErr[i] = s.syncShard(i)
			if shardErr[i] != nil {
				errs = append(errs, fmt.Errorf("data: sync all: %w", shardErr[i]))
			}
		}
	}
	s.mu.Lock()
	for id, gen := range dirs {
		if shardErr[byte(id)] == nil && s.needDirSync[id] == gen {
			delete(s.needDirSync, id)
		}
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

// Remove deletes datafile id. Removing a datafile that does not exist is
// not an error. Operations racing with Remove on the same id may act on
// the removed file.
func (s *Store) Remove(ctx context.Context, id uint64) error {
	_, err := s.remove(ctx, id)
	return err
}

// remove is Remove; needSyncFS says whether making the removal durable
// takes a syncfs (a file was unlinked, or none was found, maybe because
// an earlier remove unlinked it without a sync) rather than only a sync
// of the unwritten log (the datafile was unwritten).
func (s *Store) remove(ctx context.Context, id uint64) (needSyncFS bool, err error) {
	if err := s.begin(ctx); err != nil {
		return false, dfErr(id, "remove", err)
	}
	defer s.ops.Done()
	sh, err := s.shard(id)
	if err != nil {
		return false, dfErr(id, "remove", err)
	}
	l := s.idLock(id)
	l.Lock()
	defer l.Unlock()
	if s.isUnwritten(id) {
		// No file to unlink (nor a handle of one): only the record goes.
		if _, err := s.forgetUnwritten(id); err != nil {
			return false, dfErr(id, "remove", err)
		}
		return false, nil
	}
	var idle *handle
	s.mu.Lock()
	h := s.handles[id]
	if h != nil {
		s.uncacheLocked(h)
		if h.refs == 0 {
			idle = h
		}
	}
	s.mu.Unlock()
	if idle != nil {
		_ = idle.f.Close()
	}
	err = sh.Remove(leafName(id))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// The datafile is still there, with whatever was written to it:
		// its directory entry may still need a sync (needDirSync stays),
		// and dirty data whose handle just closed needs SyncAll's syncfs.
		s.mu.Lock()
		if idle != nil {
			s.noteClosingLocked(idle)
		}
		s.mu.Unlock()
		return false, dfErr(id, "remove", err)
	}
	s.mu.Lock()
	if err == nil {
		s.unlinked[id] = struct{}{}
	}
	if h != nil {
		h.removed = true
	}
	delete(s.needDirSync, id)
	s.mu.Unlock()
	wasUnwritten, err := s.forgetUnwritten(id)
	if err != nil {
		return false, dfErr(id, "remove", err)
	}
	return !wasUnwritten, nil
}

// Statfs reports the space of the data directory's file system and how
// much of it the datafiles use.
func (s *Store) Statfs(ctx context.Context) (Statfs, error) {
	if err := s.begin(ctx); err != nil {
		return Statfs{}, fmt.Errorf("data: statfs: %w", err)
	}
	defer s.ops.Done()
	var st Statfs
	var err error
	du, err := s.root.DiskUsage()
	st.Total, st.Free, st.Avail, st.FSID = du.Total, du.Free, du.Avail, du.FSID
	if err != nil {
		return Statfs{}, fmt.Errorf("data: statfs: %w", err)
	}
	st.Used, st.Datafiles, err = s.usage()
	if err != nil {
		return Statfs{}, fmt.Errorf("data: statfs: %w", err)
	}
	return st, nil
}

// usage returns the bytes allocated to datafiles and their number, from a
// walk of the shards. The walk lstats every datafile (0.37 s per 100,000
// on this project's test machine), so it is not made while a statfs
// waits, but for the first: a walk older than statTTL is answered as it
// is and a new one starts in the background, as Lustre's statfs answers
// from a cache of bounded age. statTTL 0 walks on every call (tests).
func (s *Store) usage() (used, count uint64, err error) {
	s.statMu.Lock()
	if s.statTTL > 0 && !s.statAt.IsZero() {
		used, count = s.statUsed, s.statCount
		if time.Since(s.statAt) >= s.statTTL && !s.statWalking && s.begin(context.Background()) == nil {
			// The caller's Statfs holds an operation, so Close has
			// not begun waiting: adding this one is safe.
			s.statWalking = true
			go func() {
				defer s.ops.Done()
				used, count, err := s.walkUsage()
				s.statMu.Lock()
				defer s.statMu.Unlock()
				s.statWalking = false
				if err == nil {
					s.statUsed, s.statCount, s.statAt = used, count, time.Now()
				}
			}()
		}
		s.statMu.Unlock()
		return used, count, nil
	}
	defer s.statMu.Unlock()
	if used, count, err = s.walkUsage(); err != nil {
		return 0, 0, err
	}
	s.statUsed, s.statCount, s.statAt = used, count, time.Now()
	return used, count, nil
}

// walkUsage adds up the datafiles of every shard and the unwritten ones.
func (s *Store) walkUsage() (used, count uint64, err error) {
	for i := range 256 {
		sh, err := s.shard(uint64(i))
		if err != nil {
			return 0, 0, err
		}
		ents, err := sh.ReadDir(".")
		if err != nil {
			return 0, 0, err
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info() // lstat relative to the shard
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return 0, 0, err
			}
			count++
			used += allocated(fi)
		}
	}
	unwritten, _, _ := s.UnwrittenStats()
	return used, count + unwritten, nil
}

// allocated returns the bytes of storage fi's file occupies.
func allocated(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512
	}
	return uint64(fi.Size())
}

// Close waits for operations in flight, closes every handle and releases
// the data directory's lock. It does not sync: call SyncAll first for
// durability. Operations after Close fail with ErrClosed; Close itself may
// be called more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.ops.Wait()
	return s.closeFiles()
}

// closeFiles closes all descriptors; nothing may be in flight.
func (s *Store) closeFiles() error {
	var errs []error
	s.mu.Lock()
	for id, h := range s.handles {
		if err := h.f.Close(); err != nil {
			errs = append(errs, dfErr(id, "close", err))
		}
		delete(s.handles, id)
	}
	s.lru.next, s.lru.prev = &s.lru, &s.lru
	s.mu.Unlock()
	for i := range s.shards {
		if r := s.shards[i].Swap(nil); r != nil {
			errs = append(errs, (*r).Close())
		}
	}
	if s.df != nil {
		errs = append(errs, s.df.Close())
	}
	errs = append(errs, s.closeUnwritten())
	if s.lock != nil {
		// Closing the only descriptor of LOCK releases the flock.
		errs = append(errs, s.lock.Close())
	}
	if s.root != nil && s.ownRoot {
		errs = append(errs, s.root.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("data: close %s: %w", s.dir, err)
	}
	return nil
}
