package wire

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// RemoteError is an error a server answered with. It keeps the errno so
// that errors.Is(err, fs.ErrNotExist) and friends work on the client side
// and a FUSE mount can return the same errno, and it names the server.
type RemoteError struct {
	Server string        // who answered, e.g. "data server 2 (10.0.0.3:7001)"
	Errno  syscall.Errno // 0 when the server gave no errno
	Msg    string        // the server's message
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: %s", e.Server, e.Msg)
}

// Unwrap exposes the errno for errors.Is / errors.As.
func (e *RemoteError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// ErrnoOf picks the errno that best describes err for the peer: the one
// wrapped inside it, or one derived from well-known sentinel errors, or EIO.
func ErrnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	case errors.Is(err, context.DeadlineExceeded):
		return syscall.ETIMEDOUT
	case errors.Is(err, context.Canceled):
		return syscall.ECANCELED
	case errors.Is(err, ErrPayloadCRC):
		return syscall.EBADMSG
	}
	return syscall.EIO
}

// encodeError is the argument section of an error response.
func encodeError(err error) []byte {
	var e Enc
	e.U32(uint32(ErrnoOf(err)))
	e.String(err.Error())
	return e.Bytes()
}

// decodeError turns an error response's arguments into a RemoteError.
func decodeError(server string, args []byte) error {
	d := NewDec(args)
	errno := syscall.Errno(d.U32("errno"))
	msg := d.String("message")
	if err := d.Done(); err != nil {
		return &RemoteError{Server: server, Errno: syscall.EIO, Msg: "undecodable error response: " + err.Error()}
	}
	return &RemoteError{Server: server, Errno: errno, Msg: msg}
}
