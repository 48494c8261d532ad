package vfs

import (
	"encoding/binary"
	"hash/fnv"
	"io/fs"
	"os"
	"syscall"
)

// OS returns the operating system's file system confined to directory dir,
// which must exist. Every access goes through an [os.Root] opened on dir,
// so nothing outside dir is reachable: a symlink leading out of it is
// refused.
func OS(dir string) (FS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return osFS{r}, nil
}

type osFS struct{ r *os.Root }

func (o osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := o.r.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return OSFile{f}, nil
}

func (o osFS) Mkdir(name string, perm fs.FileMode) error { return o.r.Mkdir(name, perm) }

func (o osFS) Remove(name string) error { return o.r.Remove(name) }

func (o osFS) Rename(oldname, newname string) error { return o.r.Rename(oldname, newname) }

func (o osFS) ReadDir(name string) ([]fs.DirEntry, error) {
	d, err := o.r.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

func (o osFS) SyncDir(name string) error {
	d, err := o.r.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (o osFS) SyncFS() error {
	d, err := o.r.Open(".")
	if err != nil {
		return err
	}
	err = syncfs(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (o osFS) OpenRoot(name string) (FS, error) {
	r, err := o.r.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return osFS{r}, nil
}

func (o osFS) Lock(name string) (File, error) {
	f, err := o.r.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, err
	}
	return OSFile{f}, nil
}

func (o osFS) DiskUsage() (DiskUsage, error) {
	d, err := o.r.Open(".")
	if err != nil {
		return DiskUsage{}, err
	}
	defer d.Close()
	return fstatfs(d)
}

// fsid names the file system holding f (see DiskUsage.FSID): its f_fsid if
// the kernel gives one, else st_dev mixed with the host name, since device
// numbers repeat from host to host.
func fsid(f *os.File, statfsID uint64) uint64 {
	if statfsID != 0 {
		return statfsID
	}
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	host, _ := os.Hostname()
	h := fnv.New64a()
	h.Write(binary.LittleEndian.AppendUint64([]byte(host), uint64(st.Dev)))
	return h.Sum64() | 1
}

func (o osFS) Close() error { return o.r.Close() }

// OSFile is the File of the OS file system: an *os.File whose Sync is
// fdatasync, with pwritev ([WriterAtv]) and, on Linux, early writeback
// ([Writebacker]).
type OSFile struct{ *os.File }

// Sync flushes the file's data and the metadata needed to read it back
// (fdatasync; fsync where there is no fdatasync).
func (f OSFile) Sync() error { return fdatasync(f.File) }

// WriteAtv writes bufs back to back at off with pwritev, retrying partial
// writes.
func (f OSFile) WriteAtv(bufs [][]byte, off int64) (int64, error) {
	return pwritev(f.File, bufs, off)
}

// StartWriteback starts writeback of [off, off+n) without waiting
// (sync_file_range(SYNC_FILE_RANGE_WRITE) on Linux; nothing elsewhere).
func (f OSFile) StartWriteback(off, n int64) { startWriteback(f.File, off, n) }

// lockedError is what flock returns for a lock held elsewhere.
func lockedError(name string) error {
	return &fs.PathError{Op: "flock", Path: name, Err: ErrLocked}
}
