//go:build hdf5

package mpiio

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

static MPI_Info pario_info(const char *hints) {
	MPI_Info info;
	MPI_Info_create(&info);
	if (!hints || !*hints) return info;
	char *s = strdup(hints), *save = NULL;
	for (char *kv = strtok_r(s, "\n", &save); kv; kv = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) continue;
		*eq = 0;
		MPI_Info_set(info, kv, eq + 1);
	}
	free(s);
	return info;
}

static int pario_mpiio_open(MPI_File *fh, const char *name, int create, int self, const char *hints) {
	MPI_Info info = pario_info(hints);
	int mode = create ? (MPI_MODE_CREATE | MPI_MODE_RDWR) : MPI_MODE_RDONLY;
	int rc = MPI_File_open(self ? MPI_COMM_SELF : MPI_COMM_WORLD, name, mode, info, fh);
	MPI_Info_free(&info);
	if (rc == MPI_SUCCESS) MPI_File_set_errhandler(*fh, MPI_ERRORS_RETURN);
	return rc;
}

// pario_mpiio_io moves n bytes at off; it loops because one MPI call
// counts in int.
static int pario_mpiio_io(MPI_File fh, int write, int coll, char *buf, long long off, long long n, long long *done) {
	*done = 0;
	while (n > 0) {
		int c = n > (1 << 30) ? (1 << 30) : (int)n, got = 0, rc;
		MPI_Status st;
		if (write) rc = coll ? MPI_File_write_at_all(fh, off, buf, c, MPI_BYTE, &st) : MPI_File_write_at(fh, off, buf, c, MPI_BYTE, &st);
		else rc = coll ? MPI_File_read_at_all(fh, off, buf, c, MPI_BYTE, &st) : MPI_File_read_at(fh, off, buf, c, MPI_BYTE, &st);
		if (rc != MPI_SUCCESS) return rc;
		MPI_Get_count(&st, MPI_BYTE, &got);
		*done += got;
		if (got < c) return MPI_SUCCESS;
		buf += c; off += c; n -= c;
	}
	return MPI_SUCCESS;
}

// pario_mpiio_io_extents moves n ranges (offs[i], lens[i], in order) as
// one call through a file view of them, as the HDF5 thesis' own MPI-IO
// benchmark did: MPI_File_set_view (collective on the file's
// communicator), one write or read of total bytes at view offset 0, then
// the view of plain bytes again. *step names the call that failed.
static int pario_mpiio_io_extents(MPI_File fh, int write, int coll, char *buf, const long long *offs, const long long *lens,
		int n, int total, long long *done, const char **step) {
	*done = 0;
	int *bl = malloc(n * sizeof(int));
	MPI_Aint *dl = malloc(n * sizeof(MPI_Aint));
	if (!bl || !dl) { free(bl); free(dl); *step = "malloc"; return MPI_ERR_NO_MEM; }
	for (int i = 0; i < n; i++) { bl[i] = (int)lens[i]; dl[i] = (MPI_Aint)offs[i]; }
	MPI_Datatype ft;
	int rc = MPI_Type_create_hindexed(n, bl, dl, MPI_BYTE, &ft);
	free(bl);
	free(dl);
	if (rc != MPI_SUCCESS) { *step = "MPI_Type_create_hindexed"; return rc; }
	if ((rc = MPI_Type_commit(&ft)) != MPI_SUCCESS) { MPI_Type_free(&ft); *step = "MPI_Type_commit"; return rc; }
	if ((rc = MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL)) != MPI_SUCCESS) {
		MPI_Type_free(&ft);
		*step = "MPI_File_set_view";
		return rc;
	}
	MPI_Status st;
	if (write) {
		*step = coll ? "MPI_File_write_at_all" : "MPI_File_write_at";
		rc = coll ? MPI_File_write_at_all(fh, 0, buf, total, MPI_BYTE, &st) : MPI_File_write_at(fh, 0, buf, total, MPI_BYTE, &st);
	} else {
		*step = coll ? "MPI_File_read_at_all" : "MPI_File_read_at";
		rc = coll ? MPI_File_read_at_all(fh, 0, buf, total, MPI_BYTE, &st) : MPI_File_read_at(fh, 0, buf, total, MPI_BYTE, &st);
	}
	if (rc == MPI_SUCCESS) {
		int got = 0;
		MPI_Get_count(&st, MPI_BYTE, &got);
		*done = got;
	}
	int rc2 = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
	MPI_Type_free(&ft);
	if (rc == MPI_SUCCESS && rc2 != MPI_SUCCESS) { *step = "MPI_File_set_view (bytes again)"; return rc2; }
	return rc;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/hints"
	"github.com/pario/pario/bench/backend/mpi"
)

func init() { backend.Register(func() backend.Driver { return &Driver{} }) }

// Driver holds the MPI-IO settings.
type Driver struct {
	Collective bool
	Hints      hints.Set
}

// Name implements backend.Driver.
func (*Driver) Name() string { return "MPIIO" }

// Summary implements backend.Driver.
func (*Driver) Summary() string {
	return "MPI_File_write_at/read_at, independent or collective (cgo; ranks under mpirun)"
}

// Options implements backend.Driver.
func (d *Driver) Options() []backend.Option {
	return append([]backend.Option{
		backend.BoolOption(&d.Collective, "mpiio.collective", "MPIIO: collective I/O, MPI_File_write_at_all (IOR -c)"),
	}, d.Hints.Options("mpiio", "MPIIO")...)
}

// Validate implements backend.Driver.
func (d *Driver) Validate(p backend.Params) error {
	if d.Collective && p.Random {
		return errors.New("--mpiio.collective needs every rank to make the same calls: not with -z")
	}
	return d.Hints.Check("mpiio")
}

// Open implements backend.Driver.
func (d *Driver) Open(_ context.Context, env backend.Env) (backend.Backend, error) {
	if _, _, err := mpi.Open(); err != nil {
		return nil, err
	}
	if err := mpi.Check(env.Params.Rank, env.Params.Tasks); err != nil {
		return nil, errors.Join(err, mpi.Close())
	}
	return &Backend{d: *d, p: env.Params}, nil
}

// Backend is one rank's MPI-IO back end.
type Backend struct {
	d Driver
	p backend.Params
}

func (b *Backend) open(ctx context.Context, name string, create bool) (backend.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f := &File{name: name, ctx: ctx, coll: b.d.Collective}
	cname := C.CString(name)
	chints := C.CString(b.d.Hints.Lines(os.Environ()))
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(chints))
	self, c := cbool(b.p.FilePerProc), cbool(create)
	var rc C.int
	mpi.Do(func() { rc = C.pario_mpiio_open(&f.fh, cname, c, self, chints) })
	if rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("mpiio: MPI_File_open %s: %w", name, mpi.Error(int(rc)))
	}
	return f, nil
}

// Create implements backend.Backend: collective on every rank.
func (b *Backend) Create(ctx context.Context, name string) (backend.File, error) {
	return b.open(ctx, name, true)
}

// Open implements backend.Backend.
func (b *Backend) Open(ctx context.Context, name string) (backend.File, error) {
	return b.open(ctx, name, false)
}

// Remove implements backend.Backend.
func (b *Backend) Remove(_ context.Context, name string) error {
	return mpi.Remove(name)
}

// Size implements backend.Backend.
func (b *Backend) Size(_ context.Context, name string) (int64, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Close implements backend.Backend.
func (b *Backend) Close() error { return mpi.Close() }

// Abort implements backend.Aborter: MPI_Abort.
func (b *Backend) Abort(code int) { mpi.Abort(code) }

// StopTogether implements backend.StopTogether.
func (b *Backend) StopTogether(hit bool) (bool, error) {
	if !(b.d.Collective || b.p.Strided) {
		return hit, nil
	}
	return mpi.StopTogether(hit, b.p.FilePerProc)
}

// Describe implements backend.Describer.
func (b *Backend) Describe() [][2]string {
	mode := "independent"
	if b.d.Collective {
		mode = "collective"
	}
	d := [][2]string{{"MPI-IO", mode}}
	if b.p.Strided {
		d = append(d, [2]string{"MPI-IO strided calls", "a file view (MPI_File_set_view, collective) and one call per transfer"})
	}
	return d
}

// File is an open MPI file.
type File struct {
	name string
	ctx  context.Context
	fh   C.MPI_File
	coll bool
}

func (f *File) io(write bool, p []byte, off int64) (int, error) {
	if err := f.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	w, c := cbool(write), cbool(f.coll)
	var rc C.int
	var done C.longlong
	mpi.Do(func() {
		rc = C.pario_mpiio_io(f.fh, w, c, (*C.char)(unsafe.Pointer(&p[0])), C.longlong(off), C.longlong(len(p)), &done)
	})
	if rc != C.MPI_SUCCESS {
		op := "MPI_File_read_at"
		if write {
			op = "MPI_File_write_at"
		}
		return int(done), fmt.Errorf("mpiio: %s %s: %d bytes at %d: %w", op, f.name, len(p), off, mpi.Error(int(rc)))
	}
	if int(done) < len(p) {
		if write {
			return int(done), fmt.Errorf("mpiio: %s: short write at %d: %d of %d bytes", f.name, off, done, len(p))
		}
		return int(done), io.EOF
	}
	return len(p), nil
}

// ioExtents is io for a --strided call: one call through a file view.
func (f *File) ioExtents(write bool, p []byte, ext []backend.Extent) error {
	if err := f.ctx.Err(); err != nil {
		return err
	}
	offs := make([]C.longlong, len(ext))
	lens := make([]C.longlong, len(ext))
	var total int64
	for i, e := range ext {
		if e.Length > math.MaxInt32 {
			return fmt.Errorf("mpiio: %s: a range of %d bytes at %d is more than one MPI call's int counts", f.name, e.Length, e.Offset)
		}
		offs[i], lens[i] = C.longlong(e.Offset), C.longlong(e.Length)
		total += e.Length
	}
	switch {
	case total != int64(len(p)):
		return fmt.Errorf("mpiio: %s: %d bytes for ranges of %d", f.name, len(p), total)
	case total > math.MaxInt32:
		return fmt.Errorf("mpiio: %s: a strided call of %d bytes is more than one MPI call's int counts (-t at most 2 GiB - 1)", f.name, total)
	case total == 0:
		return nil
	}
	w, c := cbool(write), cbool(f.coll)
	var rc C.int
	var done C.longlong
	var step *C.char
	mpi.Do(func() {
		rc = C.pario_mpiio_io_extents(f.fh, w, c, (*C.char)(unsafe.Pointer(&p[0])), &offs[0], &lens[0], C.int(len(ext)), C.int(total), &done, &step)
	})
	if rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpiio: %s %s: %d ranges (%d bytes from %d): %w", C.GoString(step), f.name, len(ext), total, ext[0].Offset, mpi.Error(int(rc)))
	}
	if int64(done) < total {
		if write {
			return fmt.Errorf("mpiio: %s: short write of %d ranges from %d: %d of %d bytes", f.name, len(ext), ext[0].Offset, done, total)
		}
		return io.EOF
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// WriteExtents implements backend.ExtentsIO.
func (f *File) WriteExtents(p []byte, ext []backend.Extent) error { return f.ioExtents(true, p, ext) }

// ReadExtents implements backend.ExtentsIO.
func (f *File) ReadExtents(p []byte, ext []backend.Extent) error { return f.ioExtents(false, p, ext) }

// WriteAt implements io.WriterAt.
func (f *File) WriteAt(p []byte, off int64) (int, error) { return f.io(true, p, off) }

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.io(false, p, off) }

// Sync implements backend.File: MPI_File_sync, collective.
func (f *File) Sync(context.Context) error {
	var rc C.int
	mpi.Do(func() { rc = C.MPI_File_sync(f.fh) })
	if rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpiio: MPI_File_sync %s: %w", f.name, mpi.Error(int(rc)))
	}
	return nil
}

// Close implements backend.File: collective.
func (f *File) Close(context.Context) error {
	var rc C.int
	mpi.Do(func() { rc = C.MPI_File_close(&f.fh) })
	if rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpiio: MPI_File_close %s: %w", f.name, mpi.Error(int(rc)))
	}
	return nil
}
