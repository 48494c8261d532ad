// Package errorfs wraps a vfs.FS so that chosen operations fail: a test
// says which operation, on which paths, at which matching call, and the
// wrapper injects an error (or, for writes, a short write) there, leaving
// every other call to the wrapped FS. It is pebble's vfs/errorfs reduced
// to what pario's I/O server needs.
//
// An injected failure does not perform the operation (a short write
// performs part of it): the wrapped FS is left as if the call had failed
// before reaching the disk, so a retry can succeed.
package errorfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sync"

	"github.com/pario/pario/vfs"
)

// Op is a kind of operation.
type Op uint8

// The operations a Rule can select. OpAny matches all of them.
const (
	OpAny       Op = iota
	OpOpen         // FS.OpenFile
	OpLock         // FS.Lock
	OpMkdir        // FS.Mkdir
	OpRemove       // FS.Remove
	OpReadDir      // FS.ReadDir
	OpSyncDir      // FS.SyncDir
	OpSyncFS       // FS.SyncFS
	OpOpenRoot     // FS.OpenRoot
	OpDiskUsage    // FS.DiskUsage
	OpRead         // File.ReadAt
	OpWrite        // File.WriteAt (and each buffer of vfs.WriteAtv)
	OpTruncate     // File.Truncate
	OpSync         // File.Sync (fdatasync)
	OpStat         // File.Stat
	OpClose        // File.Close (the file is closed all the same)
	OpRename       // FS.Rename (the path is the old name)
)

var opNames = [...]string{"any", "open", "lock", "mkdir", "remove", "readdir", "syncdir",
	"syncfs", "openroot", "diskusage", "read", "write", "truncate", "sync", "stat", "close", "rename"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", o)
}

// ErrInjected is the error a Rule without Err injects.
var ErrInjected = errors.New("injected error")

// Rule selects calls to fail. A call matches when its operation is Op (or
// Op is OpAny) and its path matches Path. Of the matching calls, the Nth
// (counting from 1) fails, and with AndAfter every later one too; Nth 0
// fails every matching call.
type Rule struct {
	Op Op
	// Path is a path.Match pattern for the slash-separated path of the
	// file or directory, relative to the wrapped FS's directory (a file
	// keeps the path it was opened with; "." is the directory itself).
	// Empty matches every path.
	Path     string
	Nth      int
	AndAfter bool
	// Err is the error to inject (wrapped in an *fs.PathError naming the
	// operation and path, and marked as injected); nil means ErrInjected.
	Err error
	// ShortWrite is, for OpWrite, how many bytes of the write reach the
	// file before the error; the write reports them as written.
	ShortWrite int

	hits, injected int // guarded by FS.mu
}

// FS is a vfs.FS wrapper that fails calls by its rules.
type FS struct {
	inner  vfs.FS
	prefix string // of inner, relative to the FS Wrap was given
	inj    *injector
}

type injector struct {
	mu    sync.Mutex
	rules []*Rule
}

var _ vfs.FS = (*FS)(nil)

// Wrap returns inner with rules applied. Rules are consulted in order;
// every matching rule counts the call, and the first whose turn it is
// injects.
func Wrap(inner vfs.FS, rules ...*Rule) *FS {
	return &FS{inner: inner, prefix: ".", inj: &injector{rules: rules}}
}

// Add adds a rule. The FS's OpenRoot children share the rules.
func (e *FS) Add(r *Rule) {
	e.inj.mu.Lock()
	e.inj.rules = append(e.inj.rules, r)
	e.inj.mu.Unlock()
}

// Clear removes every rule.
func (e *FS) Clear() {
	e.inj.mu.Lock()
	e.inj.rules = nil
	e.inj.mu.Unlock()
}

// Hits returns how many calls matched r so far.
func (e *FS) Hits(r *Rule) int {
	e.inj.mu.Lock()
	defer e.inj.mu.Unlock()
	return r.hits
}

// Injected returns how many calls r failed so far.
func (e *FS) Injected(r *Rule) int {
	e.inj.mu.Lock()
	defer e.inj.mu.Unlock()
	return r.injected
}

// check counts a call of op on p and returns the rule that fails it, or
// nil.
func (in *injector) check(op Op, p string) *Rule {
	in.mu.Lock()
	defer in.mu.Unlock()
	var fire *Rule
	for _, r := range in.rules {
		if r.Op != OpAny && r.Op != op {
			continue
		}
		if r.Path != "" {
			if ok, _ := path.Match(r.Path, p); !ok {
				continue
			}
		}
		r.hits++
		if fire == nil && (r.Nth == 0 || r.hits == r.Nth || r.AndAfter && r.hits > r.Nth) {
			r.injected++
			fire = r
		}
	}
	return fire
}

func (r *Rule) error(op Op, p string) error {
	err := r.Err
	if err == nil {
		err = ErrInjected
	}
	return &fs.PathError{Op: op.String(), Path: p, Err: injectedError{err}}
}

// injectedError marks an error as injected in its message and unwraps to
// it, so errors.Is(err, syscall.EIO) still holds.
type injectedError struct{ err error }

func (e injectedError) Error() string { return e.err.Error() + " (injected)" }
func (e injectedError) Unwrap() error { return e.err }

func (e *FS) full(name string) string { return path.Join(e.prefix, name) }

// fail returns the injected error for op on name, or nil.
func (e *FS) fail(op Op, name string) error {
	p := e.full(name)
	if r := e.inj.check(op, p); r != nil {
		return r.error(op, p)
	}
	return nil
}

// OpenFile implements vfs.FS.
func (e *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if err := e.fail(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{f: f, path: e.full(name), inj: e.inj}, nil
}

// Lock implements vfs.FS.
func (e *FS) Lock(name string) (vfs.File, error) {
	if err := e.fail(OpLock, name); err != nil {
		return nil, err
	}
	f, err := e.inner.Lock(name)
	if err != nil {
		return nil, err
	}
	return &file{f: f, path: e.full(name), inj: e.inj}, nil
}

// Mkdir implements vfs.FS.
func (e *FS) Mkdir(name string, perm fs.FileMode) error {
	if err := e.fail(OpMkdir, name); err != nil {
		return err
	}
	return e.inner.Mkdir(name, perm)
}

// Remove implements vfs.FS.
func (e *FS) Remove(name string) error {
	if err := e.fail(OpRemove, name); err != nil {
		return err
	}
	return e.inner.Remove(name)
}

// Rename implements vfs.FS.
func (e *FS) Rename(oldname, newname string) error {
	if err := e.fail(OpRename, oldname); err != nil {
		return err
	}
	return e.inner.Rename(oldname, newname)
}

// ReadDir implements vfs.FS.
func (e *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := e.fail(OpReadDir, name); err != nil {
		return nil, err
	}
	return e.inner.ReadDir(name)
}

// SyncDir implements vfs.FS.
func (e *FS) SyncDir(name string) error {
	if err := e.fail(OpSyncDir, name); err != nil {
		return err
	}
	return e.inner.SyncDir(name)
}

// SyncFS implements vfs.FS; its path is ".".
func (e *FS) SyncFS() error {
	if err := e.fail(OpSyncFS, "."); err != nil {
		return err
	}
	return e.inner.SyncFS()
}

// OpenRoot implements vfs.FS. The child shares the parent's rules, and its
// paths stay relative to the FS given to Wrap.
func (e *FS) OpenRoot(name string) (vfs.FS, error) {
	if err := e.fail(OpOpenRoot, name); err != nil {
		return nil, err
	}
	c, err := e.inner.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return &FS{inner: c, prefix: e.full(name), inj: e.inj}, nil
}

// DiskUsage implements vfs.FS; its path is ".".
func (e *FS) DiskUsage() (vfs.DiskUsage, error) {
	if err := e.fail(OpDiskUsage, "."); err != nil {
		return vfs.DiskUsage{}, err
	}
	return e.inner.DiskUsage()
}

// Close implements vfs.FS; it is never failed.
func (e *FS) Close() error { return e.inner.Close() }

// file is a vfs.File wrapper that fails calls by its FS's rules.
type file struct {
	f    vfs.File
	path string
	inj  *injector
}

func (f *file) fail(op Op) *Rule { return f.inj.check(op, f.path) }

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if r := f.fail(OpRead); r != nil {
		return 0, r.error(OpRead, f.path)
	}
	return f.f.ReadAt(p, off)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	r := f.fail(OpWrite)
	if r == nil {
		return f.f.WriteAt(p, off)
	}
	n := 0
	if k := min(r.ShortWrite, len(p)); k > 0 {
		var err error
		if n, err = f.f.WriteAt(p[:k], off); err != nil {
			return n, err
		}
	}
	return n, r.error(OpWrite, f.path)
}

func (f *file) Truncate(size int64) error {
	if r := f.fail(OpTruncate); r != nil {
		return r.error(OpTruncate, f.path)
	}
	return f.f.Truncate(size)
}

func (f *file) Sync() error {
	if r := f.fail(OpSync); r != nil {
		return r.error(OpSync, f.path)
	}
	return f.f.Sync()
}

func (f *file) Stat() (fs.FileInfo, error) {
	if r := f.fail(OpStat); r != nil {
		return nil, r.error(OpStat, f.path)
	}
	return f.f.Stat()
}

func (f *file) Close() error {
	err := f.f.Close()
	if r := f.fail(OpClose); r != nil {
		return r.error(OpClose, f.path)
	}
	return err
}

// StartWriteback passes the hint on; it has no error to inject.
func (f *file) StartWriteback(off, n int64) { vfs.StartWriteback(f.f, off, n) }
