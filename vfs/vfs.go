// Package vfs is the file-system seam under pario's I/O server
// (server/data): the few operations the datafile store needs, behind
// interfaces, so that tests can put something other than the operating
// system underneath it.
//
// There are three implementations:
//
//   - [OS]: the operating system's files, confined to one directory with
//     an [os.Root] (nothing outside it is reachable, even through planted
//     symlinks). Its File's Sync is fdatasync, and it keeps the Linux
//     extras the store relies on for speed (pwritev, early writeback with
//     sync_file_range) as the optional [WriterAtv] and [Writebacker].
//   - [MemFS] ([NewMem]): an in-memory file system that tracks what is
//     durable the way a strict POSIX file system promises it: a file's
//     contents only up to its last Sync, a directory entry (a create, a
//     remove) only once its directory was synced. [MemFS.CrashClone]
//     returns what a power cut at that instant would leave, so a test can
//     check that every acknowledged sync survives.
//   - vfs/errorfs: a wrapper around any FS that makes chosen operations
//     fail (or writes come up short) by rules of operation, path and call
//     count.
//
// It is modelled on pebble's vfs, vfs/errorfs and crashable MemFS, reduced
// to what the store uses. Names are slash-separated and relative to the
// FS's directory ("." is the directory itself); no name may leave it.
package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// File is an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Truncate sets the file's size; growing it adds a hole.
	Truncate(size int64) error
	// Sync makes the file's data durable, with the metadata needed to
	// read it back (its size): fdatasync. It does not make the file's
	// name durable; that takes FS.SyncDir of its directory.
	Sync() error
	Stat() (fs.FileInfo, error)
}

// WriterAtv is implemented by Files that write several buffers back to
// back in one call (pwritev). Use [WriteAtv], which falls back to WriteAt.
type WriterAtv interface {
	// WriteAtv writes bufs back to back at off and returns the number of
	// bytes written, less than their total only with an error. bufs is
	// not modified.
	WriteAtv(bufs [][]byte, off int64) (int64, error)
}

// Writebacker is implemented by Files that can start writing a range of
// dirty data back to storage without waiting for it
// (sync_file_range(SYNC_FILE_RANGE_WRITE)), so that a later Sync has little
// left to do. It is advisory: it reports no error.
type Writebacker interface {
	StartWriteback(off, n int64)
}

// FS is a directory and what lies below it.
type FS interface {
	// OpenFile opens the regular file name with the os.O_* flags (O_RDONLY,
	// O_WRONLY, O_RDWR, O_CREATE, O_EXCL, O_TRUNC) and, when it creates
	// the file, permissions perm.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Mkdir creates directory name; it fails with fs.ErrExist if name
	// exists.
	Mkdir(name string, perm fs.FileMode) error
	// Remove removes the file or empty directory name.
	Remove(name string) error
	// Rename moves the file oldname to newname, replacing a file there,
	// atomically: a crash leaves one of the two. It becomes durable with
	// SyncDir of the directory (or directories) holding them.
	Rename(oldname, newname string) error
	// ReadDir lists directory name, in no particular order. The entries' Info
	// describes the entry itself (lstat), never a symlink's target.
	ReadDir(name string) ([]fs.DirEntry, error)
	// SyncDir makes directory name's entries durable (fsync of the
	// directory): files created in or removed from it before the call
	// survive a crash as they are.
	SyncDir(name string) error
	// SyncFS makes everything in the file system durable (syncfs).
	SyncFS() error
	// OpenRoot opens directory name as an FS of its own, like
	// os.Root.OpenRoot. Close it when done.
	OpenRoot(name string) (FS, error)
	// Lock opens file name read-write, creating it (0600) if missing, and
	// takes an exclusive lock on it (flock) that holds until the returned
	// File is closed. If someone else holds the lock it fails with an
	// error wrapping ErrLocked.
	Lock(name string) (File, error)
	// DiskUsage reports the space of the file system holding the FS.
	DiskUsage() (DiskUsage, error)
	// Close releases the FS's directory. Files opened from it stay open.
	Close() error
}

// DiskUsage is the space of a file system, in bytes.
type DiskUsage struct {
	// Total is the file system's size, Free its free bytes and Avail the
	// free bytes available to unprivileged users.
	Total, Free, Avail uint64
	// FSID names the file system, so that several data directories on one
	// file system (I/O servers sharing a disk) count its space once: its
	// f_fsid, or where that is 0 (tmpfs on older kernels), the st_dev of
	// the directory mixed with the host name. 0 means unknown.
	FSID uint64
}

// ErrLocked is wrapped by FS.Lock's error when another holder has the
// lock.
var ErrLocked = errors.New("locked by another holder")

// WriteAtv writes bufs back to back at off of f: with one call if f is a
// WriterAtv, else buffer by buffer with WriteAt. It returns the number of
// bytes written, less than their total only with an error.
func WriteAtv(f File, bufs [][]byte, off int64) (int64, error) {
	if w, ok := f.(WriterAtv); ok {
		return w.WriteAtv(bufs, off)
	}
	var written int64
	for _, b := range bufs {
		n, err := f.WriteAt(b, off+written)
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// StartWriteback starts writeback of [off, off+n) of f if f is a
// Writebacker, and does nothing otherwise.
func StartWriteback(f File, off, n int64) {
	if w, ok := f.(Writebacker); ok {
		w.StartWriteback(off, n)
	}
}
