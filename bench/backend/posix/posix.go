// Package posix is the benchmark's POSIX back end (-a POSIX): pwrite and
// pread on a local or mounted file system, optionally with O_DIRECT
// (--posix.odirect), and with the file dropped from the page cache before
// each read phase (--posix.drop-cache: fdatasync, then
// posix_fadvise(POSIX_FADV_DONTNEED)), so reads come from the disk or the
// file system's servers rather than this node's memory.
package posix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/internal/filekind"
)

func init() { backend.Register(func() backend.Driver { return &Driver{} }) }

// Driver holds the POSIX settings.
type Driver struct {
	ODirect   bool
	DropCache bool
}

// Name implements backend.Driver.
func (*Driver) Name() string { return "POSIX" }

// Summary implements backend.Driver.
func (*Driver) Summary() string { return "pwrite/pread on a file system path" }

// Options implements backend.Driver.
func (d *Driver) Options() []backend.Option {
	return []backend.Option{
		backend.BoolOption(&d.ODirect, "posix.odirect", "POSIX: open with O_DIRECT (transfers and offsets must be multiples of 4 KiB)"),
		backend.BoolOption(&d.DropCache, "posix.drop-cache", "POSIX: drop the file from the page cache before each read phase (fdatasync + fadvise DONTNEED)"),
	}
}

// DirectAlign is the alignment O_DIRECT transfers need here.
const DirectAlign = 4096

// Validate implements backend.Driver.
func (d *Driver) Validate(p backend.Params) error {
	if d.ODirect && (p.TransferSize%DirectAlign != 0 || p.BlockSize%DirectAlign != 0) {
		return fmt.Errorf("--posix.odirect needs transfer and block sizes that are multiples of %d bytes (got -t %d -b %d)", DirectAlign, p.TransferSize, p.BlockSize)
	}
	return nil
}

// Open implements backend.Driver.
func (d *Driver) Open(_ context.Context, env backend.Env) (backend.Backend, error) {
	return &Backend{ODirect: d.ODirect, Drop: d.DropCache}, nil
}

// Backend is one rank's POSIX back end.
type Backend struct {
	LocalFiles
	ODirect bool
	Drop    bool // drop the page cache before reads (the engine asks)
}

var (
	_ backend.Backend      = (*Backend)(nil)
	_ backend.CacheDropper = (*Backend)(nil)
	_ backend.Checker      = (*Backend)(nil)
	_ backend.StatFSer     = (*Backend)(nil)
	_ backend.Describer    = (*Backend)(nil)
)

func (b *Backend) flags(base int) int {
	if b.ODirect {
		base |= unix.O_DIRECT
	}
	return base
}

// Create implements backend.Backend.
func (b *Backend) Create(_ context.Context, name string) (backend.File, error) {
	f, err := os.OpenFile(name, b.flags(os.O_RDWR|os.O_CREATE), 0o664)
	if err != nil {
		return nil, err
	}
	return &File{f: f}, nil
}

// Open implements backend.Backend.
func (b *Backend) Open(_ context.Context, name string) (backend.File, error) {
	f, err := os.OpenFile(name, b.flags(os.O_RDONLY), 0)
	if err != nil {
		return nil, err
	}
	return &File{f: f}, nil
}

// LocalFiles gives a back end over local paths its Remove, Size and Close;
// the POSIX and MMAP back ends embed it.
type LocalFiles struct{}

// Remove implements backend.Backend: a file already gone is not an error.
func (LocalFiles) Remove(_ context.Context, name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Size implements backend.Backend.
func (LocalFiles) Size(_ context.Context, name string) (int64, error) {
	st, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Close implements backend.Backend.
func (LocalFiles) Close() error { return nil }

// DropCache implements backend.CacheDropper: dirty pages are written
// first, since DONTNEED only drops clean ones.
func (b *Backend) DropCache(_ context.Context, name string) error {
	if !b.Drop {
		return nil
	}
	return DropCache(name)
}

// DropCache removes a file's pages from the page cache.
func DropCache(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return &fs.PathError{Op: "fdatasync", Path: name, Err: err}
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return &fs.PathError{Op: "posix_fadvise", Path: name, Err: err}
	}
	return nil
}

// Check implements backend.Checker: the directory must exist (and be a
// directory) for a write, the file for a read-only test.
func (b *Backend) Check(_ context.Context, name string, write bool) error {
	return CheckPath(name, write)
}

// CheckPath is Check for any back end on a local path.
func CheckPath(name string, write bool) error {
	if strings.HasPrefix(name, "pario:") {
		// A local back end (the default is POSIX) given a store path.
		return fmt.Errorf("test file %s is in the pario store: use -a PARIO (or a path on a pario mount)", name)
	}
	st, err := os.Stat(name)
	if err == nil && !st.Mode().IsRegular() {
		// The test file is removed before the write phase and after the
		// run: an empty directory given to -o was removed and replaced,
		// and as root -o /dev/null would unlink /dev/null.
		return fmt.Errorf("test file %s is %s, not a regular file: pario bench removes and recreates its test file; name a file (a directory's: %s)",
			name, filekind.Of(st.Mode()), filepath.Join(name, "testFile"))
	}
	if !write {
		if err != nil {
			return fmt.Errorf("test file: %w (nothing to read: add -w, or point -o at an existing file)", err)
		}
		return nil
	}
	dir := filepath.Dir(name)
	st, err = os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("test file %s: directory %s does not exist", name, dir)
	case err != nil:
		return fmt.Errorf("test file %s: %w", name, err)
	case !st.IsDir():
		return fmt.Errorf("test file %s: %s is not a directory", name, dir)
	}
	return nil
}

// StatFS implements backend.StatFSer.
func (b *Backend) StatFS(_ context.Context, name string) (backend.FSInfo, error) {
	return StatFS(filepath.Dir(name))
}

// StatFS reports the capacity of the file system holding dir.
func StatFS(dir string) (backend.FSInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return backend.FSInfo{}, &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	bs := int64(st.Bsize)
	return backend.FSInfo{Total: int64(st.Blocks) * bs, Free: int64(st.Bavail) * bs, Files: int64(st.Files), FreeFs: int64(st.Ffree)}, nil
}

// Describe implements backend.Describer.
func (b *Backend) Describe() [][2]string {
	var out [][2]string
	if b.ODirect {
		out = append(out, [2]string{"O_DIRECT", "1"})
	}
	if b.Drop {
		out = append(out, [2]string{"drop cache", "before reads"})
	}
	return out
}

// File is an open POSIX file. os.File's WriteAt/ReadAt are pwrite/pread
// loops that retry short transfers and allocate nothing on success.
type File struct{ f *os.File }

// WriteAt implements io.WriterAt with pwrite.
func (f *File) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }

// ReadAt implements io.ReaderAt with pread.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Sync is fsync, as IOR's -e and -Y.
func (f *File) Sync(context.Context) error { return f.f.Sync() }

// Close closes the descriptor.
func (f *File) Close(context.Context) error { return f.f.Close() }
