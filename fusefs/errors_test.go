package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/wire"
)

// logRecorder is a slog handler that keeps the "server" attribute of each
// record ("-" when absent).
type logRecorder struct{ servers []string }

func (*logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	server := "-"
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "server" {
			server = a.Value.String()
		}
		return true
	})
	h.servers = append(h.servers, server)
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

func newTestFS() (*fileSystem, *logRecorder) {
	h := &logRecorder{}
	return &fileSystem{log: slog.New(h), logged: map[string]time.Time{}}, h
}

func remote(errno syscall.Errno) error {
	return fmt.Errorf("read /f: %w", &wire.RemoteError{Server: "data1", Errno: errno, Msg: "no"})
}

func TestErrno(t *testing.T) {
	dial := &wire.DialError{Server: "data2", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name   string
		err    error
		want   syscall.Errno
		logged string // the server named in the log line; "" for no line
	}{
		{"nil", nil, 0, ""},
		{"server's ENOENT", remote(syscall.ENOENT), syscall.ENOENT, ""},
		{"server's ENOSPC", remote(syscall.ENOSPC), syscall.ENOSPC, "data1"},
		{"server rejected a corrupted request", remote(syscall.EBADMSG), syscall.EBADMSG, "data1"},
		{"server gave no errno", remote(0), syscall.EIO, "data1"},
		{"unreachable", dial, syscall.EIO, "data2"},
		{"unreachable, ECONNREFUSED not passed on", fmt.Errorf("write: %w", dial), syscall.EIO, "data2"},
		{"connection lost", &wire.ConnError{Server: "data3", Err: io.ErrUnexpectedEOF}, syscall.EIO, "data3"},
		{"timeout", fmt.Errorf("sync: %w", context.DeadlineExceeded), syscall.EIO, "-"},
		{"cancelled", context.Canceled, syscall.EIO, "-"},
		{"corrupted response", fmt.Errorf("data1: response to request 7: %w", wire.ErrPayloadCRC), syscall.EIO, "-"},
		{"local errno, ordinary", fmt.Errorf("rmdir: %w", syscall.ENOTEMPTY), syscall.ENOTEMPTY, ""},
		{"local errno, a failure", syscall.EROFS, syscall.EROFS, "-"},
		{"fs.ErrNotExist", fs.ErrNotExist, syscall.ENOENT, ""},
		{"fs.ErrExist", fmt.Errorf("create: %w", fs.ErrExist), syscall.EEXIST, ""},
		{"fs.ErrInvalid", fs.ErrInvalid, syscall.EINVAL, ""},
		{"fs.ErrPermission", fs.ErrPermission, syscall.EACCES, ""},
		{"anything else", errors.New("boom"), syscall.EIO, "-"},
		{"a server's answer beside a cancelled piece", errors.Join(remote(syscall.ENOSPC), context.Canceled), syscall.ENOSPC, "data1"},
		{"an unreachable server beside an answer", errors.Join(remote(syscall.ENOENT), dial), syscall.EIO, "data2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, logs := newTestFS()
			if got := fsys.errno("op", "/f", tc.err); got != tc.want {
				t.Errorf("errno(%v) = %v, want %v", tc.err, got, tc.want)
			}
			var want []string
			if tc.logged != "" {
				want = []string{tc.logged}
			}
			if strings.Join(logs.servers, ",") != strings.Join(want, ",") {
				t.Errorf("logged with servers %q, want %q", logs.servers, want)
			}
		})
	}
}

// Every errno a server answers with reaches the kernel unchanged, as
// wire.ErrnoOf maps it (the mount has no table of its own).
func TestErrnoPassesServerErrnos(t *testing.T) {
	fsys, _ := newTestFS()
	for e := syscall.Errno(1); e < 134; e++ {
		err := remote(e)
		if got := fsys.errno("op", "/f", err); got != e || got != wire.ErrnoOf(err) {
			t.Errorf("server errno %d (%v): mount returns %d, wire.ErrnoOf %d", e, e, got, wire.ErrnoOf(err))
		}
	}
}
