package farm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pario/pario/client"
)

// Handle is an open input or output file.
type Handle interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Close() error
}

// FS is where the input is read and the output written: the local file
// system (Local) or a pario store (Pario). The output is written under a
// temporary name and renamed over its own at the end, so that a failed or
// interrupted run leaves nothing half-written under the output's name.
type FS interface {
	// Open opens an existing file for reading and returns its size.
	Open(ctx context.Context, name string) (Handle, int64, error)
	// CreateTemp creates an empty file next to final, under a name no
	// other run uses.
	CreateTemp(ctx context.Context, final string) (Handle, string, error)
	// OpenRW opens a file made by CreateTemp, on another rank.
	OpenRW(ctx context.Context, name string) (Handle, error)
	Rename(ctx context.Context, from, to string) error
	Remove(ctx context.Context, name string) error
	// Kind says whether name is a directory, something else, or missing
	// (also when a component of its path is not a directory).
	Kind(ctx context.Context, name string) (Kind, error)
}

// Kind is what a name is in an FS.
type Kind int

// The kinds of names.
const (
	Missing Kind = iota
	Dir
	NotDir
)

// tempName is a hidden name next to the output, unique to this run; mark
// goes before its random part.
func tempName(join func(elem ...string) string, dir, base, mark string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return join(dir, "."+base+".farm-"+mark+hex.EncodeToString(b[:]))
}

// Local is the local file system.
type Local struct{}

// Open implements FS.
func (Local) Open(_ context.Context, name string) (Handle, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file: the parent reads segments at offsets", name)
	}
	return f, st.Size(), nil
}

// localTempMark starts the random part of a local temporary name: such a
// file is locked (flock) by its run from creation to rename or removal, so
// a later run can tell a killed run's leftover from a live run's file.
// Names without it (from earlier versions, or in the store) are never
// removed: nothing tells whether their run still goes.
const localTempMark = "L"

// staleAfter is how old (mtime) a leftover must be before a later run
// removes it: a run creates its file and then locks it, and the lock is
// all that protects it, so a file younger than this may be in that gap.
// It is far longer than the gap to allow for a file server's clock.
const staleAfter = 10 * time.Minute

// held are the locks of this process's live temporary files, by name.
var held sync.Map

// CreateTemp implements FS. It first removes leftovers of killed runs with
// the same output (removeStale).
func (Local) CreateTemp(_ context.Context, final string) (Handle, string, error) {
	dir, base := filepath.Dir(final), filepath.Base(final)
	removeStale(dir, base, time.Now())
	name := tempName(filepath.Join, dir, base, localTempMark)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, "", err
	}
	// The lock is on a descriptor of its own, held until Rename or Remove:
	// the run closes f before its rename.
	lock, err := os.Open(name)
	if err == nil {
		if err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		f.Close()
		os.Remove(name)
		return nil, "", fmt.Errorf("lock %s: %w", name, err)
	}
	held.Store(name, lock)
	return f, name, nil
}

func unlock(name string) {
	if l, ok := held.LoadAndDelete(name); ok {
		l.(*os.File).Close()
	}
}

// removeStale removes dir's temporary files of outputs named base left by
// runs that were killed (SIGKILL, a crash): of this version's naming
// (localTempMark), older than staleAfter, and not locked, so no live run
// has them. Failures are ignored: this only tidies up.
func removeStale(dir, base string, now time.Time) {
	prefix := "." + base + ".farm-" + localTempMark
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || len(rest) != 12 || strings.Trim(rest, "0123456789abcdef") != "" || !e.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if info, err := e.Info(); err != nil || now.Sub(info.ModTime()) < staleAfter {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		// Removed while the lock is held here, so that no run can be
		// between its create and its lock on this name (names are random
		// and created exclusively).
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(name)
		}
		f.Close()
	}
}

// OpenRW implements FS.
func (Local) OpenRW(_ context.Context, name string) (Handle, error) {
	return os.OpenFile(name, os.O_RDWR, 0)
}

// Rename implements FS.
func (Local) Rename(_ context.Context, from, to string) error {
	defer unlock(from)
	return os.Rename(from, to)
}

// Remove implements FS.
func (Local) Remove(_ context.Context, name string) error {
	defer unlock(name)
	return os.Remove(name)
}

// Kind implements FS.
func (Local) Kind(_ context.Context, name string) (Kind, error) {
	return kindOf(os.Stat(name))
}

// Pario is a pario store; names are the store's absolute paths. Create
// is how the output is made: a zero Layout takes the directory's default,
// which `pario tune search --apply DIR` sets.
type Pario struct {
	Client *client.Client
	Create client.CreateOptions
}

// Open implements FS.
func (p Pario) Open(ctx context.Context, name string) (Handle, int64, error) {
	f, err := p.Client.Open(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	size, err := f.Size(ctx)
	if err != nil {
		return nil, 0, err
	}
	return f, size, nil
}

// CreateTemp implements FS.
func (p Pario) CreateTemp(ctx context.Context, final string) (Handle, string, error) {
	name := tempName(path.Join, path.Dir(final), path.Base(final), "")
	opts := p.Create
	opts.Exclusive = true
	if opts.Mode == 0 {
		opts.Mode = client.DefaultFileMode
	}
	f, err := p.Client.Create(ctx, name, opts)
	if err != nil {
		return nil, "", err
	}
	return f, name, nil
}

// OpenRW implements FS.
func (p Pario) OpenRW(ctx context.Context, name string) (Handle, error) {
	return p.Client.Open(ctx, name)
}

// Rename implements FS.
func (p Pario) Rename(ctx context.Context, from, to string) error {
	return p.Client.Rename(ctx, from, to)
}

// Remove implements FS.
func (p Pario) Remove(ctx context.Context, name string) error { return p.Client.Remove(ctx, name) }

// Kind implements FS.
func (p Pario) Kind(ctx context.Context, name string) (Kind, error) {
	a, err := p.Client.Lookup(ctx, name)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return Missing, nil
	case err != nil:
		return Missing, err
	case a.IsDir():
		return Dir, nil
	}
	return NotDir, nil
}

func kindOf(st fs.FileInfo, err error) (Kind, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return Missing, nil
	case err != nil:
		return Missing, err
	case st.IsDir():
		return Dir, nil
	}
	return NotDir, nil
}
