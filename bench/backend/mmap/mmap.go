// Package mmap is the benchmark's MMAP back end (-a MMAP), as IOR's: the
// file is opened with POSIX calls, sized to the test's full size on create
// (ftruncate), mapped shared, and every transfer is a memory copy into or
// out of the mapping. Sync is msync(MS_SYNC); with -Y each write is
// followed by msync of its pages.
package mmap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/posix"
)

func init() { backend.Register(func() backend.Driver { return &Driver{} }) }

// Driver holds the MMAP settings.
type Driver struct {
	Sequential bool // madvise the access pattern
	DontNeed   bool
}

// Name implements backend.Driver.
func (*Driver) Name() string { return "MMAP" }

// Summary implements backend.Driver.
func (*Driver) Summary() string { return "memory copies into a shared mapping of the file" }

// Options implements backend.Driver.
func (d *Driver) Options() []backend.Option {
	return []backend.Option{
		backend.BoolOption(&d.Sequential, "mmap.madv-pattern", "MMAP: madvise SEQUENTIAL (or RANDOM with -z) on the mapping"),
		backend.BoolOption(&d.DontNeed, "mmap.madv-dont-need", "MMAP: madvise DONTNEED on the mapping after mapping it"),
	}
}

// Validate implements backend.Driver.
func (d *Driver) Validate(p backend.Params) error {
	if p.FsyncPerWrite && p.TransferSize%int64(os.Getpagesize()) != 0 {
		return fmt.Errorf("transfer size must be aligned with PAGESIZE (%d) for MMAP with fsyncPerWrite (-Y)", os.Getpagesize())
	}
	return nil
}

// Open implements backend.Driver.
func (d *Driver) Open(_ context.Context, env backend.Env) (backend.Backend, error) {
	return &Backend{d: *d, p: env.Params}, nil
}

// Backend is one rank's MMAP back end.
type Backend struct {
	posix.LocalFiles
	d Driver
	p backend.Params
}

var (
	_ backend.Backend  = (*Backend)(nil)
	_ backend.Checker  = (*Backend)(nil)
	_ backend.StatFSer = (*Backend)(nil)
)

func (b *Backend) mapFile(f *os.File, size int64, prot int) (*File, error) {
	if size <= 0 {
		return &File{f: f}, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	advice := unix.MADV_SEQUENTIAL
	if b.p.Random {
		advice = unix.MADV_RANDOM
	}
	if b.d.Sequential {
		if err := unix.Madvise(m, advice); err != nil {
			unix.Munmap(m)
			f.Close()
			return nil, &fs.PathError{Op: "madvise", Path: f.Name(), Err: err}
		}
	}
	if b.d.DontNeed {
		if err := unix.Madvise(m, unix.MADV_DONTNEED); err != nil {
			unix.Munmap(m)
			f.Close()
			return nil, &fs.PathError{Op: "madvise", Path: f.Name(), Err: err}
		}
	}
	return &File{f: f, m: m, perWrite: b.p.FsyncPerWrite}, nil
}

// Create implements backend.Backend: the file is sized to the test's
// full size first, as IOR does, so every transfer lands inside the map.
func (b *Backend) Create(_ context.Context, name string) (backend.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o664)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(b.p.FileSize); err != nil {
		f.Close()
		return nil, err
	}
	return b.mapFile(f, b.p.FileSize, unix.PROT_READ|unix.PROT_WRITE)
}

// Open implements backend.Backend. A file shorter than the test's size is
// an error here rather than a SIGBUS later.
func (b *Backend) Open(_ context.Context, name string) (backend.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() < b.p.FileSize {
		f.Close()
		return nil, fmt.Errorf("mmap %s: file has %d bytes, the test reads %d", name, st.Size(), b.p.FileSize)
	}
	return b.mapFile(f, b.p.FileSize, unix.PROT_READ)
}

// Check implements backend.Checker.
func (b *Backend) Check(_ context.Context, name string, write bool) error {
	return posix.CheckPath(name, write)
}

// StatFS implements backend.StatFSer.
func (b *Backend) StatFS(ctx context.Context, name string) (backend.FSInfo, error) {
	return (&posix.Backend{}).StatFS(ctx, name)
}

// File is a mapped file.
type File struct {
	f        *os.File
	m        []byte
	perWrite bool
}

// WriteAt copies p into the mapping.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(f.m)) {
		return 0, fmt.Errorf("mmap write of %d bytes at %d: outside the %d mapped bytes", len(p), off, len(f.m))
	}
	n := copy(f.m[off:], p)
	if f.perWrite {
		page := int64(os.Getpagesize())
		start := off &^ (page - 1)
		if err := unix.Msync(f.m[start:off+int64(n)], unix.MS_SYNC); err != nil {
			return n, &fs.PathError{Op: "msync", Path: f.f.Name(), Err: err}
		}
	}
	return n, nil
}

// ReadAt copies from the mapping into p.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(f.m)) {
		return 0, io.EOF
	}
	n := copy(p, f.m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Sync is msync(MS_SYNC) of the whole mapping.
func (f *File) Sync(context.Context) error {
	if len(f.m) == 0 {
		return nil
	}
	if err := unix.Msync(f.m, unix.MS_SYNC); err != nil {
		return &fs.PathError{Op: "msync", Path: f.f.Name(), Err: err}
	}
	return nil
}

// Close unmaps and closes the file.
func (f *File) Close(context.Context) error {
	var err error
	if f.m != nil {
		err = unix.Munmap(f.m)
		f.m = nil
	}
	return errors.Join(err, f.f.Close())
}
