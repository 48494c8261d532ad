//go:build darwin || freebsd

package data

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Portable fallbacks for development machines; production I/O servers run
// on Linux (sys_linux.go), where these are real syscalls.

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

func lockDir(f *os.File) error {
	err := control(f, func(fd int) error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

func fsStats(f *os.File) (total, free, avail uint64, err error) {
	var st unix.Statfs_t
	if err := control(f, func(fd int) error { return unix.Fstatfs(fd, &st) }); err != nil {
		return 0, 0, 0, &os.PathError{Op: "fstatfs", Path: f.Name(), Err: err}
	}
	bs := uint64(st.Bsize)
	return uint64(st.Blocks) * bs, uint64(st.Bfree) * bs, uint64(st.Bavail) * bs, nil
}
