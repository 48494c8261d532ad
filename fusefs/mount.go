package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// MaxIO is the largest read or write request the kernel sends the mount
// (max_write, max_read), and the size of st_blksize it reports.
const MaxIO = 1 << 20

// maxWritesInFlight bounds the write-behind requests of a whole mount
// (and so its buffer memory, at most this many MaxIO buffers).
const maxWritesInFlight = 64

// DefaultOpTimeout is Options.OpTimeout's default: longer than a
// restarted metadata server's longest grace period (meta.MaxGrace of the
// default lease, 45 s), so that a change made through the mount while the
// server waits out its previous run's leases waits too, instead of
// failing with EIO; the same as the CLI's --op-timeout.
const DefaultOpTimeout = 60 * time.Second

// Options configure a mount. The zero value is usable.
type Options struct {
	// Logger receives failures (naming the server that failed) and notices.
	// Default: slog.Default().
	Logger *slog.Logger
	// EntryTimeout is how long the kernel may cache the name of a
	// directory (default 1 s; negative means 0): directories renamed or
	// removed through other mounts or clients show after at most this
	// long. File names are looked up at every open and stat.
	EntryTimeout time.Duration
	// AttrTimeout is how long the kernel may cache attributes: size, mtime,
	// mode, when the mount holds no cache lease (default 0: every stat
	// asks the servers). With a lease, attributes and names are kept
	// until the lease ends, and every change made elsewhere drops them
	// before it is acknowledged (lease.go, docs/mount.md).
	AttrTimeout time.Duration
	// NoLease turns the cache lease off: attributes are then kept for
	// AttrTimeout, directory names for EntryTimeout, file names not at
	// all, whatever changes elsewhere.
	NoLease bool
	// OpTimeout bounds the server calls of one file system request,
	// retries included (default DefaultOpTimeout). A server that does not
	// answer turns into EIO after at most this long; one that is down
	// (connection refused) within a second.
	OpTimeout time.Duration
	// WriteBehind is how many bytes of writes per open file may be on
	// their way to the I/O servers after write(2) returned (default 8 MiB;
	// negative: none, write(2) returns once the servers have the data).
	// Reads, stat, fsync and close of the file wait for them; a failure is
	// reported by the next write, fsync or close.
	WriteBehind int64
	// Memory bounds the bytes the mount holds for write-behind, over all
	// open files (default DefaultMemory, 256 MiB): a write that finds it
	// full waits for earlier ones to reach the servers. Memory freed is
	// handed back to the operating system once no file has been open for
	// a couple of seconds. MemoryLimit gives the soft limit for the Go
	// runtime of a process that serves only the mount.
	Memory int64
	// SyncOnClose makes close(2) of a written file wait until its data is
	// on disk on the I/O servers (as fsync). Off by default: the data is
	// on the servers, visible to every client, before write(2) returns.
	SyncOnClose bool
	// AllowOther lets users other than the mounting one use the mount
	// (needs user_allow_other in /etc/fuse.conf unless root). Every
	// request acts for its caller (uid, gid, supplementary groups), and
	// the metadata server checks it against the stored owners and modes;
	// the kernel checks them too (default_permissions). Without it only
	// the mounting user (and root) can use the mount at all.
	AllowOther bool
	// Debug logs every FUSE request and reply (go-fuse's debug output).
	Debug bool
	// Observer, if set, is told about every FUSE request (package
	// metrics); see OpObserver.
	Observer OpObserver
	// Name is shown as the file system's source by mount(8) and df(1)
	// (default "pario").
	Name string
	// DirectIO chooses which descriptors bypass the kernel's page cache
	// and write in parallel (default DirectWriters: write-only ones, and
	// read-write ones that create the file or join a direct writer of
	// it). Read-write descriptors stay cached on a kernel that cannot map
	// direct files MAP_SHARED (before Linux 6.6), whatever the policy.
	DirectIO DirectIO
	// ReadAheadKB is the kernel's read-ahead for the mount in KiB, set
	// through /sys/class/bdi when running as root (default 4 MiB, four
	// MaxIO requests in flight: 16 MiB looked faster for one reader on a
	// loaded machine, but on a quiet one cold reads were 8-15% slower and
	// cost 8-17% more CPU per GiB, docs/BENCHMARKS.md); negative leaves
	// the kernel's default.
	ReadAheadKB int
}

func (o *Options) fill() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.EntryTimeout == 0 {
		o.EntryTimeout = time.Second
	}
	o.EntryTimeout = max(o.EntryTimeout, 0)
	o.AttrTimeout = max(o.AttrTimeout, 0)
	if o.WriteBehind == 0 {
		o.WriteBehind = 8 * MaxIO
	}
	if o.Memory <= 0 {
		o.Memory = DefaultMemory
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.Name == "" {
		o.Name = "pario"
	}
	if o.ReadAheadKB == 0 {
		o.ReadAheadKB = 4 * MaxIO / 1024
	}
}

// EndpointOptions are the connection settings a mount's client should be
// dialled with: few retries and short connect timeouts, so that a dead
// server gives EIO within seconds instead of a hang.
func EndpointOptions() wire.EndpointOptions {
	return wire.EndpointOptions{
		Retries:     2,
		RetryDelay:  100 * time.Millisecond,
		Timeout:     20 * time.Second,
		DialTimeout: 2 * time.Second,
	}
}

// Stats counts the data requests a mount served.
type Stats struct {
	Reads, Writes         uint64
	ReadBytes, WriteBytes uint64
	// MaxRead and MaxWrite are the largest single requests seen: with
	// large application I/O they reach MaxIO.
	MaxRead, MaxWrite uint64
	// WriteBehind is the bytes written by write(2) still on their way to
	// the I/O servers, over all open files.
	WriteBehind int64
	// MemoryUsed is the part of the memory budget (MemoryBudget,
	// Options.Memory) held now: write-behind buffers. Zero once every
	// file is closed. MemoryPeak is the most it held at once.
	MemoryUsed, MemoryPeak, MemoryBudget int64
	// MemoryReleases counts the times the mount, idle, handed its free
	// memory back to the operating system.
	MemoryReleases int
	// NoopChowns counts the chowns that changed nothing and were answered
	// without the metadata server (noop.go).
	NoopChowns uint64
	// UnlinksHere counts the unlinks answered by the mount in directories
	// delegated to it (delegated.go), SetattrsHere the attribute changes
	// of files made there (attrhere.go), PendingHere those of either the
	// metadata server has not applied yet, Batches the batches that
	// carried them there. CreatesHere counts the creates answered by the
	// mount there (createhere.go).
	UnlinksHere, SetattrsHere, CreatesHere, PendingHere, Batches uint64
	// ListingsReused counts the opendirs answered with a listing's first
	// page read just before (dir.go, recentListings).
	ListingsReused uint64
	// DirAttrsAgain counts the getattrs of directories answered with the
	// attributes last answered for them (dirattrs.go).
	DirAttrsAgain uint64
	// Lease is what is left of the mount's cache lease (0: it holds none,
	// and the kernel keeps attributes only for --attr-timeout).
	Lease time.Duration
	// OpenFiles counts the files open here: those with a descriptor, and
	// those closed whose release (asynchronous in the kernel, after
	// close(2) returns) has not reached the mount yet or not finished.
	OpenFiles int
}

type stats struct {
	reads, writes, readBytes, writeBytes, maxRead, maxWrite atomic.Uint64
	writeBehind                                             atomic.Int64
	noopChowns                                              atomic.Uint64
	batches, listingsReused, dirAttrsAgain                  atomic.Uint64
}

func (s *stats) read(n int) {
	s.reads.Add(1)
	s.readBytes.Add(uint64(n))
	atomicMax(&s.maxRead, uint64(n))
}

func (s *stats) write(n int) {
	s.writes.Add(1)
	s.writeBytes.Add(uint64(n))
	atomicMax(&s.maxWrite, uint64(n))
}

func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Server serves one mounted pario file system.
type Server struct {
	// Dir is the absolute mount point.
	Dir string

	srv  *fuse.Server
	fsys *fileSystem
	done chan struct{}

	unmountOnce sync.Once
	unmountErr  error
}

// Mount mounts the cluster c is connected to on dir, an existing
// directory, and serves it until Unmount (or `pario umount`, or
// fusermount3 -u). The client stays the caller's: close it after the mount
// is done. Dial it with EndpointOptions for bounded failure times.
func Mount(c *client.Client, dir string, opts Options) (*Server, error) {
	opts.fill()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("mount: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("mount %s: %w", abs, syscall.ENOTDIR)
	}
	if err := checkMountable(abs); err != nil {
		return nil, err
	}
	if hidden := entriesIn(abs); hidden > 0 {
		// FUSE 3 mounts over a non-empty directory (fuse 2 refused without
		// -o nonempty): allowed, but what it holds is out of sight until
		// the unmount, which a user may take for lost files.
		opts.Logger.Warn("pario mount: the mount point is not empty: what it holds is hidden until the unmount", "dir", abs, "entries", hidden)
	}
	fsys := &fileSystem{
		c: c, log: opts.Logger, opts: opts,
		open:   map[meta.FileID]*openFile{},
		slots:  make(chan struct{}, maxWritesInFlight),
		mem:    newMemBudget(opts.Memory),
		logged: map[string]time.Time{},
	}
	root := &node{fsys: fsys, id: meta.RootID, dir: true}
	fsys.root = root
	// Timeouts given per reply (entry) override these defaults.
	entry, attr, negative := time.Duration(0), opts.AttrTimeout, time.Duration(0)
	fopts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:       opts.Name,
			Name:         "pario",
			MaxWrite:     MaxIO,
			MaxReadAhead: MaxIO,
			// Readahead and parallel readers in flight at once.
			MaxBackground: 64,
			AllowOther:    opts.AllowOther,
			Debug:         opts.Debug,
			// READDIRPLUS (dir.go) only with a lease: what it gives the
			// kernel is worth keeping only when changes elsewhere drop it.
			// READDIRPLUS_AUTO: the kernel asks for attributes with a
			// listing only where it looked entries up after the first
			// (ls -l, not ls or rm -r), since sizes cost the I/O servers
			// a call per datafile.
			DisableReadDirPlus: opts.NoLease,
			// DIRECT_IO_ALLOW_MMAP: MAP_SHARED works on a read-write
			// descriptor that bypasses the page cache (directFor).
			// HANDLE_KILLPRIV_V2: the mount clears setuid and setgid where
			// a local file system would (a write or truncate by all but
			// root: killPriv and Setattr; a chown: the metadata server),
			// so the kernel need not ask for a file's attributes before
			// every chown to find the bits itself (tar's fchown of each
			// file it makes).
			ExtraCapabilities: fuse.CAP_READDIRPLUS_AUTO | fuse.CAP_DIRECT_IO_ALLOW_MMAP | fuse.CAP_HANDLE_KILLPRIV_V2,
			// AUTO_INVAL_DATA: the kernel asks for a file's attributes at
			// its first read after they were dropped (at open, or by the
			// lease's invalidation), so it reads to the current end of a
			// file another client shrank; it then also drops the file's
			// pages if its mtime or size moved. With explicit control it
			// kept the old size for reads within it, and O_NONBLOCK reads
			// got zeros past the new end (TestShrunkElsewhereReadsToTheNewEnd).
			ExplicitDataCacheControl: false,
			// security.* is never stored: answer the kernel's per-write
			// security.capability query without a round trip through us.
			IgnoreSecurityLabels: true,
			// Reads are answered from memory: splicing them through a pipe
			// only adds a copy (and a 1 MiB reply does not fit the default
			// pipe).
			DisableSplice: true,
			// As root, mount(2) directly; otherwise through fusermount3.
			DirectMount: os.Geteuid() == 0,
			Logger:      slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
		},
		EntryTimeout:    &entry,
		AttrTimeout:     &attr,
		NegativeTimeout: &negative,
		RootStableAttr:  &fs.StableAttr{Ino: uint64(meta.RootID)},
		// The kernel's node IDs are pario's FileIDs (never reused), so
		// that the lease's invalidations, which name FileIDs, reach the
		// kernel without a table of our own.
		ExternalNodeID: true,
		// Mode 0 is mode 0 (open(O_CREAT, 0), chmod 0): go-fuse would
		// otherwise show it as 0644/0755.
		NullPermissions: true,
	}
	if opts.AllowOther {
		fopts.MountOptions.Options = append(fopts.MountOptions.Options, "default_permissions")
	}
	srv, err := mountFS(abs, root, fopts, opts.Observer)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", abs, err)
	}
	m := &Server{Dir: abs, srv: srv, fsys: fsys, done: make(chan struct{})}
	// Offered by the kernel and asked for by us is granted. Opens before
	// this line stay cached, which is always safe.
	fsys.directMmap.Store(srv.KernelSettings().Flags64()&fuse.CAP_DIRECT_IO_ALLOW_MMAP != 0)
	if !fsys.directMmap.Load() && (opts.DirectIO == DirectWriters || opts.DirectIO == DirectReadWrite) {
		opts.Logger.Info("pario mount: the kernel cannot map direct I/O files MAP_SHARED (before Linux 6.6): read-write descriptors use the page cache", "dir", abs)
	}
	fsys.startDelegations()
	fsys.startLease(srv)
	go func() {
		srv.Wait()
		fsys.stopDelegations()
		fsys.stopLease()
		fsys.idle.stop()
		close(m.done)
	}()
	if opts.ReadAheadKB > 0 && os.Geteuid() == 0 {
		if err := setReadAhead(abs, opts.ReadAheadKB); err != nil {
			opts.Logger.Debug("pario mount: read-ahead left at the kernel default", "dir", abs, "err", err)
		}
	}
	return m, nil
}

// setReadAhead raises the read-ahead of the mount's backing device (FUSE
// caps it at 128 KiB otherwise, which halves large sequential reads). The
// device number comes from the mount table, not from a stat of dir: that
// would be a request to this process's own mount, and a SIGKILL arriving
// while it waits for the answer left the process unable to exit (its
// thread in an uninterruptible wait for a server that was gone, holding
// /dev/fuse open) and the mount hung for good.
func setReadAhead(dir string, kb int) error {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	dev := mountDevAt(mi, resolveMountPoint(dir))
	if dev == "" {
		return fmt.Errorf("%s: not in the mount table", dir)
	}
	p := fmt.Sprintf("/sys/class/bdi/%s/read_ahead_kb", dev)
	return os.WriteFile(p, []byte(strconv.Itoa(kb)), 0o644)
}

// DirectMmap reports whether the kernel maps files open with direct I/O
// MAP_SHARED (FUSE_DIRECT_IO_ALLOW_MMAP, Linux 6.6 and later): only then
// are read-write descriptors direct (Options.DirectIO).
func (m *Server) DirectMmap() bool { return m.fsys.directMmap.Load() }

// Done is closed when the file system is no longer served (unmounted).
func (m *Server) Done() <-chan struct{} { return m.done }

// Wait blocks until the file system is unmounted.
func (m *Server) Wait() { <-m.done }

// Stats reports the data requests served so far.
func (m *Server) Stats() Stats {
	s := &m.fsys.stats
	used, peak := m.fsys.mem.inUse()
	st := Stats{
		Reads: s.reads.Load(), Writes: s.writes.Load(),
		ReadBytes: s.readBytes.Load(), WriteBytes: s.writeBytes.Load(),
		MaxRead: s.maxRead.Load(), MaxWrite: s.maxWrite.Load(),
		WriteBehind: s.writeBehind.Load(),
		MemoryUsed:  used, MemoryPeak: peak, MemoryBudget: m.fsys.mem.limit,
		MemoryReleases: m.fsys.idle.releases(),
		NoopChowns:     s.noopChowns.Load(),
		Batches:        s.batches.Load(),
		ListingsReused: s.listingsReused.Load(),
		DirAttrsAgain:  s.dirAttrsAgain.Load(),
	}
	d := &m.fsys.deleg
	d.mu.Lock()
	st.UnlinksHere, st.SetattrsHere, st.CreatesHere, st.PendingHere = d.queued-d.setattrs-d.creates-d.returns, d.setattrs, d.creates, d.queued-d.applied
	d.mu.Unlock()
	st.Lease = m.fsys.ttl()
	m.fsys.mu.Lock()
	st.OpenFiles = len(m.fsys.open) + m.fsys.releasing
	m.fsys.mu.Unlock()
	return st
}

// Unmount unmounts the file system. If it is busy (a process has a file
// open or its working directory on it) the mount is detached lazily: it
// disappears from the namespace at once and the open files fail from then
// on. Calling it again, or after the mount went away, is harmless.
func (m *Server) Unmount() error {
	m.unmountOnce.Do(func() {
		select {
		case <-m.done:
			return
		default:
		}
		err := m.srv.Unmount()
		if err == nil {
			return
		}
		if lerr := Unmount(m.Dir, true); lerr != nil {
			m.unmountErr = fmt.Errorf("unmount %s: %w (lazy: %w)", m.Dir, err, lerr)
			return
		}
		m.fsys.log.Warn("pario mount: busy, detached lazily; files still open on it now fail", "dir", m.Dir)
	})
	return m.unmountErr
}

// Unmount unmounts the pario (or any FUSE) file system mounted on dir, as
// `pario umount` does: with fusermount3 -u, or umount2(2) when running as
// root; lazy detaches a busy mount (MNT_DETACH, fusermount3 -z). It works
// whether or not the serving process is still alive. A busy mount's error
// wraps syscall.EBUSY, once. It refuses, and leaves mounted, a mount point
// whose file system is not FUSE: umount2 as root would unmount any.
func Unmount(dir string, lazy bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	if err := checkUnmountable(abs); err != nil {
		return err
	}
	var errs []error
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		err := syscall.Unmount(abs, flags)
		if err == nil {
			return nil
		}
		if errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("unmount %s: not a mount point: %w", abs, err)
		}
		if errors.Is(err, syscall.EBUSY) {
			// fusermount3 would only say the same again.
			return fmt.Errorf("unmount %s: %w", abs, err)
		}
		errs = append(errs, fmt.Errorf("umount2: %w", err))
	}
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		bin, err = exec.LookPath("fusermount")
	}
	if err != nil {
		errs = append(errs, errors.New("fusermount3 not found (install Debian's fuse3)"))
		return fmt.Errorf("unmount %s: %w", abs, errors.Join(errs...))
	}
	args := []string{"-u"}
	if lazy {
		args = append(args, "-z")
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(context.Background(), bin, append(args, abs)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		// fusermount3: "failed to unmount DIR: Device or resource busy".
		if len(errs) == 0 && bytes.Contains(bytes.ToLower(out.Bytes()), []byte(syscall.EBUSY.Error())) {
			return fmt.Errorf("unmount %s: %w", abs, syscall.EBUSY)
		}
		errs = append(errs, fmt.Errorf("%s: %w: %s", filepath.Base(bin), err, bytes.TrimSpace(out.Bytes())))
		return fmt.Errorf("unmount %s: %w", abs, errors.Join(errs...))
	}
	return nil
}

// entriesIn counts up to a few entries of dir (0 if it cannot be read).
func entriesIn(dir string) int {
	f, err := os.Open(dir)
	if err != nil {
		return 0
	}
	defer f.Close()
	names, _ := f.Readdirnames(8)
	return len(names)
}
