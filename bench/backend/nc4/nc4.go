//go:build hdf5

package nc4

/*
#cgo pkg-config: netcdf-mpi ompi-c
#cgo linux,amd64 CFLAGS: -I/usr/lib/x86_64-linux-gnu/netcdf/mpi/include
#cgo linux,arm64 CFLAGS: -I/usr/lib/aarch64-linux-gnu/netcdf/mpi/include
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>

typedef struct {
	int ncid, varid, dimid[2];
	int nd;          // 1, or 2 with rows of row bytes (the thesis' dimy)
	size_t row;
	int open;
} pario_nc;

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

// pario_nc_open returns the NetCDF status; *step names the call.
static int pario_nc_open(pario_nc *n, const char *name, int create, int self, const char *hints,
		int align, long long chunkx, long long chunky, int fill, int unlimited, long long extent, long long row,
		int collective, const char **step) {
	MPI_Comm comm = self ? MPI_COMM_SELF : MPI_COMM_WORLD;
	MPI_Info info = pario_info(hints);
	int rc;
	n->open = 0;
	// The alignment is global state read at create: set it, or put back
	// HDF5's default (threshold 1, alignment 1; 0 is refused).
	*step = "nc_set_alignment";
	if ((rc = nc_set_alignment(align > 1 ? align : 1, align > 1 ? align : 1)) != NC_NOERR) { MPI_Info_free(&info); return rc; }
	if (create) {
		*step = "nc_create_par";
		rc = nc_create_par(name, NC_NETCDF4 | NC_CLOBBER, comm, info, &n->ncid);
	} else {
		*step = "nc_open_par";
		rc = nc_open_par(name, NC_NOWRITE, comm, info, &n->ncid);
	}
	MPI_Info_free(&info);
	if (rc != NC_NOERR) return rc;
	n->open = 1;
	if (create) {
		n->nd = row > 0 ? 2 : 1;
		n->row = (size_t)row;
		size_t xlen = row > 0 ? (size_t)(extent / row) : (size_t)extent;
		*step = "nc_def_dim";
		if ((rc = nc_def_dim(n->ncid, "x", unlimited ? NC_UNLIMITED : xlen, &n->dimid[0])) != NC_NOERR) return rc;
		if (n->nd == 2 && (rc = nc_def_dim(n->ncid, "y", n->row, &n->dimid[1])) != NC_NOERR) return rc;
		*step = "nc_def_var";
		if ((rc = nc_def_var(n->ncid, "data", NC_UBYTE, n->nd, n->dimid, &n->varid)) != NC_NOERR) return rc;
		if (chunkx > 0) {
			size_t c[2] = {(size_t)chunkx, (size_t)chunky};
			*step = "nc_def_var_chunking";
			if ((rc = nc_def_var_chunking(n->ncid, n->varid, NC_CHUNKED, c)) != NC_NOERR) return rc;
		}
		if (fill != 0) {
			*step = "nc_def_var_fill";
			if ((rc = nc_def_var_fill(n->ncid, n->varid, fill < 0 ? NC_NOFILL : NC_FILL, NULL)) != NC_NOERR) return rc;
		}
		*step = "nc_enddef";
		if ((rc = nc_enddef(n->ncid)) != NC_NOERR) return rc;
	} else {
		*step = "nc_inq_varid data";
		if ((rc = nc_inq_varid(n->ncid, "data", &n->varid)) != NC_NOERR) return rc;
		int nd = 0;
		*step = "nc_inq_var data";
		if ((rc = nc_inq_var(n->ncid, n->varid, NULL, NULL, &nd, NULL, NULL)) != NC_NOERR) return rc;
		if (nd != 1 && nd != 2) { *step = "data is not one- or two-dimensional"; return NC_EINVAL; }
		n->nd = nd;
		if ((rc = nc_inq_vardimid(n->ncid, n->varid, n->dimid)) != NC_NOERR) return rc;
		n->row = 0;
		if (nd == 2 && (rc = nc_inq_dimlen(n->ncid, n->dimid[1], &n->row)) != NC_NOERR) return rc;
	}
	*step = "nc_var_par_access";
	return nc_var_par_access(n->ncid, n->varid, collective ? NC_COLLECTIVE : NC_INDEPENDENT);
}

static int pario_nc_len(pario_nc *n, unsigned long long *len) {
	size_t l = 0;
	int rc = nc_inq_dimlen(n->ncid, n->dimid[0], &l);
	*len = n->nd == 2 ? l * n->row : l;
	return rc;
}

static int pario_nc_io(pario_nc *n, int write, unsigned char *buf, long long off, long long cnt) {
	size_t start[2] = {(size_t)off, 0}, count[2] = {(size_t)cnt, 0};
	if (n->nd == 2) {
		// Whole rows, or a piece of one row (the driver checks).
		size_t r = n->row;
		if (off % r == 0 && cnt % r == 0) { start[0] = off / r; count[0] = cnt / r; count[1] = r; }
		else { start[0] = off / r; start[1] = off % r; count[0] = 1; count[1] = cnt; }
	}
	return write ? nc_put_vara_uchar(n->ncid, n->varid, start, count, buf)
	             : nc_get_vara_uchar(n->ncid, n->varid, start, count, buf);
}

static int pario_nc_close(pario_nc *n) {
	if (!n->open) return NC_NOERR;
	n->open = 0;
	return nc_close(n->ncid);
}

// pario_nc_extent reads the variable's length with a serial open.
static int pario_nc_extent(const char *name, unsigned long long *len) {
	pario_nc n;
	int rc = nc_open(name, NC_NOWRITE, &n.ncid);
	if (rc != NC_NOERR) return rc;
	n.open = 1;
	n.row = 0;
	if ((rc = nc_inq_varid(n.ncid, "data", &n.varid)) == NC_NOERR &&
	    (rc = nc_inq_varndims(n.ncid, n.varid, &n.nd)) == NC_NOERR &&
	    (rc = (n.nd == 1 || n.nd == 2) ? NC_NOERR : NC_EINVAL) == NC_NOERR &&
	    (rc = nc_inq_vardimid(n.ncid, n.varid, n.dimid)) == NC_NOERR &&
	    (rc = n.nd == 2 ? nc_inq_dimlen(n.ncid, n.dimid[1], &n.row) : NC_NOERR) == NC_NOERR)
		rc = pario_nc_len(&n, len);
	nc_close(n.ncid);
	return rc;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/pario/pario/bench/backend"
	h5be "github.com/pario/pario/bench/backend/hdf5"
	"github.com/pario/pario/bench/backend/hints"
	"github.com/pario/pario/bench/backend/mpi"
	"github.com/pario/pario/hdf5"
)

func init() { backend.Register(func() backend.Driver { return &Driver{} }) }

// Driver holds the NetCDF-4 settings.
type Driver struct {
	Alignment  int64
	NoFill     bool
	Fill       bool
	ChunkSize  int64
	Collective bool
	Unlimited  bool
	ChunkRule  string
	Hints      hints.Set
	// DimY makes data two-dimensional, data(x, y) with rows of DimY
	// bytes (the thesis' dimx/dimy); ChunkX x ChunkY is the chunk shape.
	DimY, ChunkX, ChunkY int64
}

// Name implements backend.Driver.
func (*Driver) Name() string { return "NC4" }

// Summary implements backend.Driver.
func (*Driver) Summary() string {
	return "parallel NetCDF-4 (HDF5 underneath) over MPI-IO, the thesis' driver (cgo; ranks under mpirun)"
}

// Options implements backend.Driver.
func (d *Driver) Options() []backend.Option {
	return append([]backend.Option{
		backend.SizeOption(&d.Alignment, "nc4.setalignment", "NC4: align objects of at least this size to it (nc_set_alignment; the thesis' fix), e.g. 1m"),
		backend.BoolOption(&d.NoFill, "nc4.nofill", "NC4: never write fill values (IOR -O noFill; NC_NOFILL)"),
		backend.BoolOption(&d.Fill, "nc4.fill", "NC4: write fill values (NC_FILL), to measure their cost"),
		backend.SizeOption(&d.ChunkSize, "nc4.chunksize", "NC4: chunked layout with chunks of this many bytes"),
		backend.BoolOption(&d.Collective, "nc4.collective", "NC4: collective I/O (IOR -c; NC_COLLECTIVE)"),
		backend.BoolOption(&d.Unlimited, "nc4.unlimited", "NC4: the dimension is unlimited (extendible, chunked; needs --nc4.collective)"),
		backend.StringOption(&d.ChunkRule, "nc4.chunk-rule", "NC4 with --nc4.unlimited and no chunk size: library (netCDF's default), original (4.3: one element) or thesis (the default chunk size)"),
		backend.SizeOption(&d.DimY, "nc4.dimy", "NC4: a 2-D variable data(x, y) with rows of this many bytes (the thesis' dimy)"),
		backend.SizeOption(&d.ChunkX, "nc4.chunkx", "NC4 with --nc4.dimy: chunk rows"),
		backend.SizeOption(&d.ChunkY, "nc4.chunky", "NC4 with --nc4.dimy: chunk columns"),
	}, d.Hints.Options("nc4", "NC4")...)
}

// Validate implements backend.Driver.
func (d *Driver) Validate(p backend.Params) error {
	data := p.BlockSize * p.Segments
	if !p.FilePerProc {
		data *= int64(p.Tasks)
	}
	switch {
	case d.NoFill && d.Fill:
		return errors.New("--nc4.nofill and --nc4.fill contradict each other")
	case d.Alignment > 1<<31-1:
		return fmt.Errorf("--nc4.setalignment %d: nc_set_alignment takes an int", d.Alignment)
	case d.Unlimited && !d.Collective:
		return errors.New("--nc4.unlimited needs --nc4.collective: NetCDF-4 extends the dimension collectively")
	case d.ChunkSize > 0 && !d.Unlimited && d.ChunkSize > data:
		return fmt.Errorf("--nc4.chunksize %d is larger than the variable's %d bytes", d.ChunkSize, data)
	case d.Collective && p.Random:
		return errors.New("--nc4.collective needs every rank to make the same calls: not with -z")
	}
	if err := h5be.CheckChunk("nc4", d.ChunkSize, d.ChunkX, d.ChunkY); err != nil {
		return err
	}
	if err := h5be.Validate2D("nc4", d.DimY, d.ChunkSize, d.ChunkX, d.ChunkY, d.Unlimited, p); err != nil {
		return err
	}
	if _, err := d.chunk(); err != nil {
		return err
	}
	return d.Hints.Check("nc4")
}

// chunk is the chunk length to set (0: none, the library decides).
func (d *Driver) chunk() (int64, error) {
	if d.ChunkSize > 0 || d.ChunkX > 0 || !d.Unlimited || d.DimY > 0 {
		if d.ChunkRule != "" {
			return 0, errors.New("--nc4.chunk-rule applies only to a one-dimensional --nc4.unlimited variable without a chunk size")
		}
		return d.ChunkSize, nil
	}
	var rule hdf5.ChunkRule
	switch d.ChunkRule {
	case "", "library":
		return 0, nil
	case "original":
		rule = hdf5.RuleOriginal
	case "thesis":
		rule = hdf5.RuleThesis
	default:
		return 0, fmt.Errorf("--nc4.chunk-rule %q: want library, original or thesis", d.ChunkRule)
	}
	c, err := hdf5.DefaultChunks(rule, []hdf5.Dim{{Unlimited: true}}, 1, 0)
	if err != nil {
		return 0, fmt.Errorf("--nc4.chunk-rule %s: %w", d.ChunkRule, err)
	}
	return int64(c[0]), nil
}

// Open implements backend.Driver.
func (d *Driver) Open(_ context.Context, env backend.Env) (backend.Backend, error) {
	if _, _, err := mpi.Open(); err != nil {
		return nil, err
	}
	if err := mpi.Check(env.Params.Rank, env.Params.Tasks); err != nil {
		return nil, errors.Join(err, mpi.Close())
	}
	chunk, err := d.chunk()
	if err != nil {
		return nil, errors.Join(err, mpi.Close())
	}
	return &Backend{d: *d, p: env.Params, chunk: chunk}, nil
}

// Backend is one rank's NetCDF-4 back end.
type Backend struct {
	d     Driver
	p     backend.Params
	chunk int64
}

func (b *Backend) data() int64 {
	if b.p.FilePerProc {
		return b.p.BlockSize * b.p.Segments
	}
	return b.p.BlockSize * b.p.Segments * int64(b.p.Tasks)
}

func ncError(rc C.int) error {
	return fmt.Errorf("%s (NetCDF error %d)", C.GoString(C.nc_strerror(rc)), int(rc))
}

func (b *Backend) open(ctx context.Context, name string, create bool) (backend.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f := &File{name: name, ctx: ctx, start: b.p.FileSize - b.data(), unlimited: b.d.Unlimited}
	cname := C.CString(name)
	chints := C.CString(b.d.Hints.Lines(os.Environ()))
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(chints))
	fill := 0
	switch {
	case b.d.NoFill:
		fill = -1
	case b.d.Fill:
		fill = 1
	}
	var rc C.int
	var step *C.char
	cx, cy := h5be.ChunkShape(b.d.DimY, b.chunk, b.d.ChunkX, b.d.ChunkY)
	mpi.Do(func() {
		rc = C.pario_nc_open(&f.n, cname, cbool(create), cbool(b.p.FilePerProc), chints, C.int(b.d.Alignment),
			C.longlong(cx), C.longlong(cy), C.int(fill), cbool(b.d.Unlimited), C.longlong(b.data()), C.longlong(b.d.DimY),
			cbool(b.d.Collective), &step)
	})
	if rc != C.NC_NOERR {
		mpi.Do(func() { C.pario_nc_close(&f.n) })
		return nil, fmt.Errorf("nc4: %s: %s: %w", name, C.GoString(step), ncError(rc))
	}
	return f, nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
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

// Size implements backend.Backend: the data start plus the variable's
// length, not the file's.
func (b *Backend) Size(_ context.Context, name string) (int64, error) {
	if _, err := os.Stat(name); err != nil {
		return 0, err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var n C.ulonglong
	var rc C.int
	mpi.Do(func() { rc = C.pario_nc_extent(cname, &n) })
	if rc != C.NC_NOERR {
		return 0, fmt.Errorf("nc4: %s: %w (not a NetCDF-4 file written by pario bench?)", name, ncError(rc))
	}
	return b.p.FileSize - b.data() + int64(n), nil
}

// Close implements backend.Backend.
func (b *Backend) Close() error { return mpi.Close() }

// Abort implements backend.Aborter: MPI_Abort.
func (b *Backend) Abort(code int) { mpi.Abort(code) }

// StopTogether implements backend.StopTogether.
func (b *Backend) StopTogether(hit bool) (bool, error) {
	if !(b.d.Collective || b.d.Unlimited) {
		return hit, nil
	}
	return mpi.StopTogether(hit, b.p.FilePerProc)
}

// Describe implements backend.Describer.
func (b *Backend) Describe() [][2]string {
	layout := "contiguous"
	switch cx, cy := h5be.ChunkShape(b.d.DimY, b.chunk, b.d.ChunkX, b.d.ChunkY); {
	case cy > 0:
		layout = fmt.Sprintf("chunked (%d x %d)", cx, cy)
	case cx > 0:
		layout = fmt.Sprintf("chunked (%d bytes)", cx)
	case b.d.Unlimited:
		layout = "chunked (netCDF's default)"
	}
	if b.d.DimY > 0 {
		layout += fmt.Sprintf(", 2-D rows of %d bytes", b.d.DimY)
	}
	mode := "independent"
	if b.d.Collective {
		mode = "collective"
	}
	return [][2]string{{"NetCDF-4 layout", layout}, {"NetCDF-4 I/O", mode}, {"NetCDF-4 alignment", fmt.Sprint(max(b.d.Alignment, 1))}}
}

// File is an open NetCDF-4 file.
type File struct {
	name      string
	ctx       context.Context
	n         C.pario_nc
	start     int64
	unlimited bool
}

func (f *File) io(write bool, p []byte, off int64) (int, error) {
	if err := f.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	off -= f.start
	if off < 0 {
		return 0, fmt.Errorf("nc4: %s: offset %d is before the variable", f.name, off+f.start)
	}
	var rc C.int
	var eof, short bool // a read at or across the end: what is there, then io.EOF
	n := int64(len(p))
	mpi.Do(func() {
		if !write {
			var l C.ulonglong
			if rc = C.pario_nc_len(&f.n, &l); rc != C.NC_NOERR {
				return
			}
			switch ext := int64(l); {
			case off >= ext:
				eof = true
				return
			case off+n > ext:
				n, short = ext-off, true
			}
		}
		rc = C.pario_nc_io(&f.n, cbool(write), (*C.uchar)(unsafe.Pointer(&p[0])), C.longlong(off), C.longlong(n))
	})
	if eof {
		return 0, io.EOF
	}
	if rc != C.NC_NOERR {
		op := "nc_get_vara"
		if write {
			op = "nc_put_vara"
		}
		return 0, fmt.Errorf("nc4: %s: %s of %d bytes at %d: %w", f.name, op, n, off, ncError(rc))
	}
	if short {
		return int(n), io.EOF
	}
	return len(p), nil
}

// WriteAt implements io.WriterAt.
func (f *File) WriteAt(p []byte, off int64) (int, error) { return f.io(true, p, off) }

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.io(false, p, off) }

// Sync implements backend.File: nc_sync, collective.
func (f *File) Sync(context.Context) error {
	var rc C.int
	mpi.Do(func() { rc = C.nc_sync(f.n.ncid) })
	if rc != C.NC_NOERR {
		return fmt.Errorf("nc4: nc_sync %s: %w", f.name, ncError(rc))
	}
	return nil
}

// Close implements backend.File: collective.
func (f *File) Close(context.Context) error {
	var rc C.int
	mpi.Do(func() { rc = C.pario_nc_close(&f.n) })
	if rc != C.NC_NOERR {
		return fmt.Errorf("nc4: nc_close %s: %w", f.name, ncError(rc))
	}
	return nil
}
