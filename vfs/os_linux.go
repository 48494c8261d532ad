package vfs

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// iovMax is the most iovecs one pwritev call takes (IOV_MAX on Linux).
const iovMax = 1024

// control runs fn on f's descriptor while holding a reference to it, so the
// descriptor cannot be closed and reused underneath fn. It only takes a
// reference (not the write lock that RawConn.Write takes), so concurrent
// positional I/O on one *os.File still runs in parallel.
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

// ignoringEINTR repeats fn while it fails with EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != unix.EINTR {
			return err
		}
	}
}

// fdatasync flushes f's data (and the metadata needed to read it back, such
// as its size) to stable storage.
func fdatasync(f *os.File) error {
	err := control(f, func(fd int) error {
		return ignoringEINTR(func() error { return unix.Fdatasync(fd) })
	})
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}

// syncfs flushes the whole file system holding f.
func syncfs(f *os.File) error {
	err := control(f, func(fd int) error {
		return ignoringEINTR(func() error { return unix.Syncfs(fd) })
	})
	if err != nil {
		return &os.PathError{Op: "syncfs", Path: f.Name(), Err: err}
	}
	return nil
}

// startWriteback asks the kernel to start writing back the dirty pages of
// f in [off, off+n) without waiting for them (sync_file_range with only
// SYNC_FILE_RANGE_WRITE). It is advisory: errors are ignored (a later
// fdatasync reports real I/O errors).
func startWriteback(f *os.File, off, n int64) {
	_ = control(f, func(fd int) error {
		return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// pwritev writes bufs back to back at off, retrying partial writes, and
// returns the number of bytes written. bufs is not modified.
func pwritev(f *os.File, bufs [][]byte, off int64) (int64, error) {
	// Work on a copy: partial writes re-slice the leading buffer.
	bufs = append([][]byte(nil), bufs...)
	var written int64
	for len(bufs) > 0 {
		if len(bufs[0]) == 0 {
			bufs = bufs[1:]
			continue
		}
		chunk := bufs
		if len(chunk) > iovMax {
			chunk = chunk[:iovMax]
		}
		var n int
		err := control(f, func(fd int) error {
			return ignoringEINTR(func() error {
				var err error
				n, err = unix.Pwritev(fd, chunk, off+written)
				return err
			})
		})
		if err != nil {
			return written, &os.PathError{Op: "pwritev", Path: f.Name(), Err: err}
		}
		if n <= 0 {
			return written, &os.PathError{Op: "pwritev", Path: f.Name(), Err: io.ErrShortWrite}
		}
		written += int64(n)
		for n > 0 {
			if n >= len(bufs[0]) {
				n -= len(bufs[0])
				bufs = bufs[1:]
			} else {
				bufs[0] = bufs[0][n:]
				n = 0
			}
		}
	}
	return written, nil
}

// flock takes an exclusive, non-blocking flock on f, failing with an error
// wrapping ErrLocked when another open file description holds it.
func flock(f *os.File) error {
	err := control(f, func(fd int) error {
		return ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	})
	if errors.Is(err, unix.EWOULDBLOCK) {
		return lockedError(f.Name())
	}
	if err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}

// fstatfs returns the space of the file system holding f.
func fstatfs(f *os.File) (DiskUsage, error) {
	var st unix.Statfs_t
	err := control(f, func(fd int) error {
		return ignoringEINTR(func() error { return unix.Fstatfs(fd, &st) })
	})
	if err != nil {
		return DiskUsage{}, &os.PathError{Op: "fstatfs", Path: f.Name(), Err: err}
	}
	bs := uint64(st.Frsize)
	if bs == 0 {
		bs = uint64(st.Bsize)
	}
	id := uint64(uint32(st.Fsid.Val[0])) | uint64(uint32(st.Fsid.Val[1]))<<32
	return DiskUsage{Total: st.Blocks * bs, Free: st.Bfree * bs, Avail: st.Bavail * bs, FSID: fsid(f, id)}, nil
}
