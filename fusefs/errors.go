package fusefs

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/pario/pario/wire"
)

// expected are errnos that answer a request normally (a missing name, a
// non-empty directory, a permission denied): they go back to the caller
// without a log line.
var expected = map[syscall.Errno]bool{
	syscall.ENOENT: true, syscall.EEXIST: true, syscall.ENOTDIR: true, syscall.EISDIR: true,
	syscall.ENOTEMPTY: true, syscall.EINVAL: true, syscall.EBUSY: true, syscall.ENAMETOOLONG: true,
	syscall.ESTALE: true, syscall.ERANGE: true, syscall.ENODATA: true, syscall.ENOTSUP: true,
	syscall.EACCES: true, syscall.EPERM: true,
}

// errno maps a client error to what the kernel should see: the errno
// wire.ErrnoOf picks (a server's own answer keeps its errno), except that a
// request that failed on the way (a server that cannot be reached, a broken
// connection, a timeout, a cancelled request, a corrupted response) is EIO,
// what applications expect of a disk that failed. Everything that is not an
// ordinary answer is logged, naming the server when known.
func (fsys *fileSystem) errno(op, path string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var (
		dial   *wire.DialError
		conn   *wire.ConnError
		remote *wire.RemoteError
		server string
	)
	e := wire.ErrnoOf(err)
	switch {
	case errors.As(err, &dial):
		server, e = dial.Server, syscall.EIO
	case errors.As(err, &conn):
		server, e = conn.Server, syscall.EIO
	case errors.Is(err, context.DeadlineExceeded):
		e = syscall.EIO
	case e == syscall.ECANCELED && errors.Is(err, context.Canceled),
		e == syscall.EBADMSG && errors.Is(err, wire.ErrPayloadCRC):
		// ErrnoOf's names for these tell a peer why the request was not
		// executed; to the kernel it simply failed.
		e = syscall.EIO
	case errors.As(err, &remote):
		server = remote.Server
	}
	if e == 0 {
		e = syscall.EIO
	}
	if !expected[e] {
		fsys.logFailure(op, path, server, err)
	}
	return e
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
