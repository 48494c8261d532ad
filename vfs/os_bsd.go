//go:build darwin || freebsd

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Portable fallbacks for development machines; production I/O servers run
// on Linux (os_linux.go), where these are real syscalls.

func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func fdatasync(f *os.File) error { return f.Sync() }

func syncfs(*os.File) error {
	unix.Sync()
	return nil
}

func startWriteback(*os.File, int64, int64) {}

func pwritev(f *os.File, bufs [][]byte, off int64) (int64, error) {
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

func flock(f *os.File) error {
	err := control(f, func(fd int) error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if errors.Is(err, unix.EWOULDBLOCK) {
		return lockedError(f.Name())
	}
	if err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}

func fstatfs(f *os.File) (DiskUsage, error) {
	var st unix.Statfs_t
	if err := control(f, func(fd int) error { return unix.Fstatfs(fd, &st) }); err != nil {
		return DiskUsage{}, &os.PathError{Op: "fstatfs", Path: f.Name(), Err: err}
	}
	bs := uint64(st.Bsize)
	id := uint64(uint32(st.Fsid.Val[0])) | uint64(uint32(st.Fsid.Val[1]))<<32
	return DiskUsage{Total: uint64(st.Blocks) * bs, Free: uint64(st.Bfree) * bs, Avail: uint64(st.Bavail) * bs, FSID: fsid(f, id)}, nil
}
