package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"time"

	"github.com/pario/pario/wire"
)

// expected are errnos that answer a request normally (a missing name, a
// non-empty directory): they go back to the caller without a log line.
var expected = map[syscall.Errno]bool{
	syscall.ENOENT: true, syscall.EEXIST: true, syscall.ENOTDIR: true, syscall.EISDIR: true,
	syscall.ENOTEMPTY: true, syscall.EINVAL: true, syscall.EBUSY: true, syscall.ENAMETOOLONG: true,
	syscall.ESTALE: true, syscall.ERANGE: true, syscall.ENODATA: true, syscall.ENOTSUP: true,
}

// errno maps a client error to what the kernel should see. A server's
// own answer keeps its errno (wire.RemoteError); a server that cannot be
// reached, a broken connection or a timeout is EIO. Everything that is not
// an ordinary answer is logged, naming the server.
func (fsys *fileSystem) errno(op, path string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var (
		dial   *wire.DialError
		conn   *wire.ConnError
		remote *wire.RemoteError
		errno  syscall.Errno
	)
	switch {
	case errors.As(err, &dial):
		fsys.logFailure(op, path, dial.Server, err)
		return syscall.EIO
	case errors.As(err, &conn):
		fsys.logFailure(op, path, conn.Server, err)
		return syscall.EIO
	case errors.Is(err, context.DeadlineExceeded):
		fsys.logFailure(op, path, "", err)
		return syscall.EIO
	case errors.As(err, &remote):
		e := remote.Errno
		if e == 0 {
			e = syscall.EIO
		}
		if !expected[e] {
			fsys.logFailure(op, path, remote.Server, err)
		}
		return e
	case errors.As(err, &errno):
		if !expected[errno] {
			fsys.logFailure(op, path, "", err)
		}
		return errno
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	}
	fsys.logFailure(op, path, "", err)
	return syscall.EIO
}

// logEvery is how often the same failure is logged: a dead server fails
// every piece of every request, and one line per few seconds says enough.
const logEvery = 5 * time.Second

// logFailure logs a failed request, naming the server when known (the
// error text names it too), at most once per logEvery for the same
// operation and message.
func (fsys *fileSystem) logFailure(op, path, server string, err error) {
	key := op + "\x00" + err.Error()
	now := time.Now()
	fsys.logMu.Lock()
	last, seen := fsys.logged[key]
	if seen && now.Sub(last) < logEvery {
		fsys.logMu.Unlock()
		return
	}
	if len(fsys.logged) > 1024 {
		clear(fsys.logged)
	}
	fsys.logged[key] = now
	fsys.logMu.Unlock()
	args := []any{"op", op, "path", path}
	if server != "" {
		args = append(args, "server", server)
	}
	fsys.log.Error("pario mount: request failed", append(args, "err", err)...)
}
