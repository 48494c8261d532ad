package meta

import (
	"time"

	"github.com/pario/pario/dist"
)

// FileID identifies a file or directory for its whole life; renames keep it.
// Datafiles on the I/O servers are named by it. The root directory is 1.
type FileID uint64

// RootID is the FileID of "/".
const RootID FileID = 1

// Kind says what an entry is.
type Kind uint8

const (
	KindDir  Kind = 1
	KindFile Kind = 2
	// Special files: metadata only, never a layout or datafiles (their
	// data, if any, lives in the kernel that opens them).
	KindFIFO     Kind = 3
	KindSocket   Kind = 4
	KindCharDev  Kind = 5
	KindBlockDev Kind = 6
	// KindSymlink is a symbolic link: metadata only, its target kept in
	// the record (Attr.Target). The metadata server never follows one.
	KindSymlink Kind = 7
)

// Special reports whether k is a FIFO, socket or device node.
func (k Kind) Special() bool { return k >= KindFIFO && k <= KindBlockDev }

func (k Kind) valid() bool {
	return k == KindDir || k == KindFile || k.Special() || k == KindSymlink
}

// Attr is everything the metadata server knows about an entry.
type Attr struct {
	ID   FileID
	Kind Kind
	Mode uint32 // permission bits only (0o755, 0o644), setuid, setgid, sticky
	// Uid and Gid own the entry. Records written before owners were kept
	// (attribute versions 1 and 2) read as root's: 0 and 0.
	Uid, Gid uint32
	Mtime    int64 // unix nanoseconds: data (or entries) last changed
	Ctime    int64 // unix nanoseconds: anything about the entry last changed
	Atime    int64 // unix nanoseconds: last read (relatime, see AttrChanges.Access)
	// Rdev is a device node's device number (Linux encoding); 0 otherwise.
	Rdev uint64
	// Nlink counts the names of a file, special file or symbolic link
	// (hard links), and for a directory 2 + its subdirectories. 0 means
	// unknown: a directory recorded before attribute version 4 (records
	// of other kinds from then read as 1).
	Nlink uint32
	// Target is a symbolic link's target, as given (at most MaxPathLen
	// bytes); "" for other kinds.
	Target string
	// Layout: for a file, its distribution (never zero); for a directory,
	// the default its new files inherit (zero when none is set).
	Layout dist.Layout
	// Servers lists, for a file, the I/O server index holding each datafile,
	// in datafile order: len(Servers) == the distribution's Datafiles().
	// With Stuffed set, only Servers[0] holds data so far.
	Servers []uint32
	// Stuffed marks a small file kept on its first datafile only until it
	// outgrows the first strip (PVFS2 "FileStuffing").
	Stuffed bool
	// Size is the logical size last recorded with SetSize (a hint for
	// listings; the authoritative size comes from the datafiles).
	Size int64
}

// IsDir reports whether a is a directory's.
func (a Attr) IsDir() bool { return a.Kind == KindDir }

// DirEntry is one name in a directory listing.
type DirEntry struct {
	Name string
	Attr Attr
}

// Options configure a Store.
type Options struct {
	// Servers is the number of I/O servers in the cluster (datafile server
	// indices run 0..Servers-1). Required, at least 1.
	Servers int
	// DefaultLayout is the server's configured default layout; zero means
	// simple_stripe with 64 KiB strips on all servers.
	DefaultLayout dist.Layout
	// Stuffing turns on file stuffing for new files.
	Stuffing bool
	// RootUid and RootGid own the root directory of a new store (the
	// user running the metadata server, so that one who starts a cluster
	// of its own may write in it); 0, root, when not set.
	RootUid, RootGid uint32
	// Datafiles makes and removes datafiles on the I/O servers: Create,
	// Unstuff and a file's SetLayout make the datafiles a file needs before
	// they commit it. Nil makes none, for tests of the namespace alone; a
	// metadata server always sets it (cluster.StartMetaServer).
	Datafiles Datafiles
	// SyncInterval is how long an answered namespace change may wait for
	// its fdatasync (durable.go): a kill -9 of the metadata server never
	// loses an answered change, a power cut loses at most this much. Zero
	// means DefaultSyncInterval; negative makes every change durable
	// before it is answered (bbolt's own fsync per commit).
	SyncInterval time.Duration
	// BootID returns the machine's boot identity (tests pretend the
	// machine restarted); nil reads the kernel's.
	BootID func() (string, error)
	// ServerNames, if set, are the I/O servers' names in index order (the
	// cluster file's data lines). The database records them, and Open
	// refuses names in another order (servernames.go) unless
	// RenameServers says they were renamed on purpose.
	ServerNames   []string
	RenameServers bool
}
