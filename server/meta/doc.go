// Package meta is pario's metadata server: it holds the namespace
// (directories and files with their attributes) and, for every file, its
// distribution (a [dist.Layout]) and the ordered list of I/O servers holding
// its datafiles. Clients ask it once at open or create; after that they talk
// to the I/O servers directly. The network layer lives in server.go; the
// [Store] in this package is the transactional core it calls.
//
// # Storage
//
// A Store is one bbolt database file. Every mutating call is one bbolt
// read-write transaction (shared with concurrent ones: commit.go), so it
// is atomic; once the call returns it survives a crash of the process,
// and a power cut once the next fdatasync, within Options.SyncInterval
// (50 ms by default), has run (durable.go; a negative interval fsyncs
// every commit before the call returns). bbolt
// serialises writers and lets readers run concurrently, which makes every
// method safe for concurrent use. The database file is locked: a second
// process (or a second Open in the same process) gets a clear error after a
// short timeout instead of hanging.
//
// # Schema (format version 1)
//
// Bucket "inodes": key = FileID as 8 bytes big-endian, value = encoded Attr.
// The encoding is compact and versioned (all integers are encoding/binary
// varints; "uv" = unsigned, "sv" = signed zig-zag):
//
//	byte   version (4; 3 still decodes: it has no Nlink and Target, Nlink
//	       then reads as 1, or 0, unknown, for a directory, and no kind
//	       7; so does 2: it has no Uid and Gid either, which then read as
//	       0, root's; so does 1: it has no Atime and Rdev either, Atime
//	       then reads as Mtime, and only kinds 1 and 2)
//	uv     ID
//	byte   Kind (1 = dir, 2 = file, 3 = FIFO, 4 = socket, 5 = character
//	       device, 6 = block device, 7 = symbolic link)
//	uv     Mode (permission bits, < 2^32)
//	sv     Mtime (unix ns)
//	sv     Ctime (unix ns)
//	sv     Atime (unix ns)                          (version 2)
//	uv     Rdev (device number of a device node)    (version 2)
//	uv     Uid (< 2^32)                             (version 3)
//	uv     Gid (< 2^32)                             (version 3)
//	uv     Nlink (< 2^32): a file's names; a directory's 2 + its
//	       subdirectories, 0 if unknown                (version 4)
//	uv+b   Target: a symbolic link's, at most 4096 bytes; empty for
//	       every other kind                           (version 4)
//	uv+b   Layout.Dist    (length, then bytes)
//	uv+b   Layout.Params  (length, then bytes)
//	uv     Layout.Datafiles
//	uv     len(Servers), then uv per server index (< 2^32)
//	byte   flags (bit 0 = Stuffed; other bits must be zero)
//	sv     Size
//
// Trailing bytes, unknown versions and out-of-range values are rejected by
// the decoder with an error; it never panics (see FuzzDecodeAttr).
//
// A file with several names (hard links) has one inode and one entry per
// name; "files" counts inodes, not names.
//
// Bucket "dirents": key = parent FileID (8 bytes big-endian) followed by the
// entry's name bytes, value = child FileID (8 bytes big-endian). A
// directory's entries are therefore one contiguous, name-sorted key range,
// which makes a listing a prefix scan (paged: ReaddirPage seeks to parent
// ID + the last name returned) and "is this directory empty" a single
// seek.
//
// Bucket "meta": small records, each value 8 bytes big-endian:
//
//	"format"   schema version (1)
//	"next_id"      IDs at or above it were never handed out; it runs up
//	               to 1024 IDs ahead of them (reserved in blocks, so a
//	               create costs no extra commit; a restart skips the rest)
//	"rr"           the round-robin placement counter (one step per create)
//	"files"        number of files
//	"dirs"         number of directories, the root included
//	"incarnation"  the cluster incarnation: random, made with the database;
//	               every I/O server records it at its first claim
//
// The root directory has ID 1 and mode 0755 and is created on first open.
//
// # Scanning
//
// [Store.Scan] (op scan) pages through every inode and then every directory
// entry, each page one read transaction resumed from a cookie, with the
// next_id counter, for `pario fsck`; [Store.UnlinkDangling] (op
// unlinkdangling) is fsck's repair of an entry that names no inode.
// # IDs are never handed out twice
//
// A file's datafiles are named by its ID on every I/O server, so an ID used
// twice would give a new file an old one's bytes. next_id alone cannot
// promise that once the database goes back in time (restored from a
// backup). So the I/O servers are the second witness: the metadata server
// claims each at start (and before its first create), learning the highest
// datafile ID it holds and handing out only larger ones; Create makes the
// datafiles with an exclusive create before it commits the inode, and an ID
// any server already holds is dropped for a fresh one (see Datafiles).
//
// # Paths
//
// Paths are absolute slash paths. Repeated slashes are accepted and
// ignored ("/a//b" is "/a/b"); a trailing slash asks, as POSIX says, for a
// directory: "/a/b/" is "/a/b" if that is a directory, ENOTDIR if it is
// anything else, and cannot be created as a file (EISDIR; ENOENT for a
// special file or link); see txn.trailingSlash. A "." or ".." component, a NUL
// byte, a component longer than 255 bytes or a path longer than 4096 bytes
// is rejected (ENAMETOOLONG for the lengths, EINVAL otherwise). Symbolic
// links are never followed: a link as a directory of a path is ENOTDIR
// (see link.go).
//
// # Errors
//
// Errors are *fs.PathError values naming the operation and the path, whose
// Err is (or wraps) a syscall.Errno: ENOENT, EEXIST, ENOTDIR, EISDIR,
// ENOTEMPTY, EINVAL or EBUSY. errors.Is(err, fs.ErrNotExist) and
// errors.As(err, &errno) both work, so the wire layer can transmit the errno.
//
// # Layouts
//
// The layout of a new file is, highest priority first: the create hints;
// the default of the nearest ancestor directory that has one (looked up at
// create time, like Lustre, where the root directory's default acts as the
// file system default; directories do not copy their parent's default at
// mkdir, so changing /a's default affects later creates anywhere below /a
// that has no nearer default); the server's Options.DefaultLayout; and
// simple_stripe with 64 KiB strips on all servers. The chosen layout is
// validated with Layout.Build(Options.Servers) and stored fully resolved:
// canonical parameters and the actual number of datafiles.
//
// Datafile i of a file lives on I/O server (first+i) mod Servers, where
// first is taken from the persisted round-robin counter, which advances by
// one per create (as PVFS2 does).
//
// # Mounts' caches and delegations
//
// Mounts cache names and attributes under a lease (watch.go): a mutation
// is answered only once every other mount holding a lease has dropped
// what it contradicts. A mount may also hold an empty directory it made
// as its own (deleg.go): it answers unlinks there itself and sends them in
// batches (ApplyBatch), and any other client's request that reads the
// directory recalls it first. Both live in the server's memory; leases
// survive a restart only as the recorded time by which they end.
package meta
