//go:build hdf5

package hdf5

/*
#cgo pkg-config: hdf5-openmpi ompi-c
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hdf5.h>

typedef struct {
	hid_t file, dset, dxpl;
	hsize_t extent; // bytes (elements) in the dataset
	hsize_t row;    // 0: one dimension; else the length of the second (dimy)
	// Kept between transfers, as IOR keeps its own: the dataset's space
	// (made again when the dataset grows) and the memory space of the
	// last transfer's shape. Making both for every transfer cost some
	// microseconds in HDF5's API per call.
	hid_t fspace, mspace;
	int mnd;
	hsize_t mcount[2];
	// why is the library's reason for the last failure, read from its
	// error stack before any cleanup call clears it.
	char why[600];
} pario_h5;

typedef struct { char inner[300], outer[300]; int mpi; } pario_h5_errs;

static herr_t pario_h5_err_cb(unsigned n, const H5E_error2_t *e, void *data) {
	pario_h5_errs *w = data;
	if (n == 0) {
		snprintf(w->inner, sizeof w->inner, "%s", e->desc ? e->desc : "");
		w->mpi = e->min_num == H5E_MPIERRSTR;
	} else if (n == 1) {
		snprintf(w->outer, sizeof w->outer, "%s", e->desc ? e->desc : "");
	}
	return 0;
}

// pario_h5_why puts the innermost error of the library's stack, the one
// that says what went wrong (errno's text from the file driver, or MPI's
// error string after the MPI call that failed), in why (600 bytes).
static void pario_h5_why(char *why) {
	pario_h5_errs w = {"", "", 0};
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, pario_h5_err_cb, &w);
	if (w.mpi && w.outer[0]) snprintf(why, 600, "%s: %s", w.outer, w.inner);
	else snprintf(why, 600, "%s", w.inner);
}

// pario_h5_shape is the dataset's shape for n elements.
static int pario_h5_shape(pario_h5 *h, hsize_t n, hsize_t *d) {
	if (!h->row) { d[0] = n; return 1; }
	d[0] = (n + h->row - 1) / h->row;
	d[1] = h->row;
	return 2;
}

static MPI_Comm pario_comm(int self) { return self ? MPI_COMM_SELF : MPI_COMM_WORLD; }

static MPI_Info pario_info(const char *hints) {
	// hints: "key=value\nkey=value"
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

// pario_h5_open creates (create=1) or opens a file and its dataset. It
// returns the step that failed ("" on success).
static const char *pario_h5_open(pario_h5 *h, const char *name, int create, int self,
		const char *hints, long long align, long long chunkx, long long chunky, int fill, int unlimited,
		long long extent, long long row, int collective) {
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	h->file = h->dset = h->dxpl = h->fspace = h->mspace = -1;
	h->why[0] = 0;
	h->row = (hsize_t)row;
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	MPI_Info info = pario_info(hints);
	if (H5Pset_fapl_mpio(fapl, pario_comm(self), info) < 0) { pario_h5_why(h->why); MPI_Info_free(&info); H5Pclose(fapl); return "H5Pset_fapl_mpio"; }
	MPI_Info_free(&info);
	if (align > 1 && H5Pset_alignment(fapl, (hsize_t)align, (hsize_t)align) < 0) { pario_h5_why(h->why); H5Pclose(fapl); return "H5Pset_alignment"; }
	if (create) h->file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	else h->file = H5Fopen(name, H5F_ACC_RDONLY, fapl);
	if (h->file < 0) pario_h5_why(h->why);
	H5Pclose(fapl);
	if (h->file < 0) return create ? "H5Fcreate" : "H5Fopen";
	if (create) {
		hsize_t dims[2], maxdims[2];
		int nd = pario_h5_shape(h, unlimited ? 0 : (hsize_t)extent, dims);
		pario_h5_shape(h, (hsize_t)extent, maxdims);
		if (unlimited) maxdims[0] = H5S_UNLIMITED;
		hid_t space = H5Screate_simple(nd, dims, maxdims);
		hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
		if (chunkx > 0) {
			hsize_t c[2] = {(hsize_t)chunkx, (hsize_t)chunky};
			if (H5Pset_chunk(dcpl, nd, c) < 0) { pario_h5_why(h->why); H5Pclose(dcpl); H5Sclose(space); return "H5Pset_chunk"; }
		}
		if (fill < 0 && H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) { pario_h5_why(h->why); H5Pclose(dcpl); H5Sclose(space); return "H5Pset_fill_time(NEVER)"; }
		if (fill > 0) {
			unsigned char zero = 0;
			if (H5Pset_fill_value(dcpl, H5T_NATIVE_UCHAR, &zero) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC) < 0) {
				pario_h5_why(h->why); H5Pclose(dcpl); H5Sclose(space); return "H5Pset_fill_time(ALLOC)";
			}
		}
		h->dset = H5Dcreate2(h->file, "data", H5T_NATIVE_UCHAR, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
		if (h->dset < 0) pario_h5_why(h->why);
		H5Pclose(dcpl);
		H5Sclose(space);
		if (h->dset < 0) return "H5Dcreate2";
		h->extent = unlimited ? 0 : (hsize_t)extent;
	} else {
		h->dset = H5Dopen2(h->file, "data", H5P_DEFAULT);
		if (h->dset < 0) { pario_h5_why(h->why); return "H5Dopen2 /data"; }
		hid_t space = H5Dget_space(h->dset);
		hsize_t dims[2] = {0, 0};
		int nd = H5Sget_simple_extent_ndims(space);
		if (nd == 1 || nd == 2) H5Sget_simple_extent_dims(space, dims, NULL);
		H5Sclose(space);
		if (nd != 1 && nd != 2) return "/data is not one- or two-dimensional";
		h->row = nd == 2 ? dims[1] : 0;
		h->extent = nd == 2 ? dims[0] * dims[1] : dims[0];
	}
	h->dxpl = H5Pcreate(H5P_DATASET_XFER);
	if (H5Pset_dxpl_mpio(h->dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT) < 0) { pario_h5_why(h->why); return "H5Pset_dxpl_mpio"; }
	return "";
}

static const char *pario_h5_extend(pario_h5 *h, unsigned long long extent) {
	hsize_t d[2];
	pario_h5_shape(h, (hsize_t)extent, d);
	if (H5Dset_extent(h->dset, d) < 0) { pario_h5_why(h->why); return "H5Dset_extent"; }
	h->extent = h->row ? d[0] * d[1] : d[0];
	if (h->fspace >= 0) { H5Sclose(h->fspace); h->fspace = -1; }
	return "";
}

static const char *pario_h5_io(pario_h5 *h, int write, void *buf, long long off, long long n) {
	hsize_t start[2] = {(hsize_t)off, 0}, count[2] = {(hsize_t)n, 0};
	int nd = 1;
	if (h->row) {
		// Whole rows, or a piece of one row (the driver checks that
		// transfers are one or the other).
		nd = 2;
		if (off % h->row == 0 && n % h->row == 0) {
			start[0] = off / h->row; start[1] = 0; count[0] = n / h->row; count[1] = h->row;
		} else {
			start[0] = off / h->row; start[1] = off % h->row; count[0] = 1; count[1] = n;
		}
	}
	if (h->fspace < 0 && (h->fspace = H5Dget_space(h->dset)) < 0) return "H5Dget_space";
	if (H5Sselect_hyperslab(h->fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0) return "H5Sselect_hyperslab";
	if (h->mspace < 0 || h->mnd != nd || h->mcount[0] != count[0] || h->mcount[1] != count[1]) {
		if (h->mspace >= 0) H5Sclose(h->mspace);
		if ((h->mspace = H5Screate_simple(nd, count, NULL)) < 0) return "H5Screate_simple";
		h->mnd = nd; h->mcount[0] = count[0]; h->mcount[1] = count[1];
	}
	herr_t rc = write ? H5Dwrite(h->dset, H5T_NATIVE_UCHAR, h->mspace, h->fspace, h->dxpl, buf)
	                  : H5Dread(h->dset, H5T_NATIVE_UCHAR, h->mspace, h->fspace, h->dxpl, buf);
	if (rc < 0) { pario_h5_why(h->why); return write ? "H5Dwrite" : "H5Dread"; }
	return "";
}

// pario_h5_io_extents moves n ranges of a 1-D /data (offs[i], lens[i], in
// order) in one H5Dwrite or H5Dread: a regular hyperslab (count n, stride,
// block) when the ranges have one length and one stride, as a strided
// benchmark's blocks do, else the union of one hyperslab a range.
static const char *pario_h5_io_extents(pario_h5 *h, int write, void *buf, const long long *offs, const long long *lens, int n) {
	hsize_t total = 0;
	int regular = 1;
	for (int i = 0; i < n; i++) {
		total += (hsize_t)lens[i];
		if (i > 0 && (lens[i] != lens[0] || (i > 1 && offs[i] - offs[i-1] != offs[1] - offs[0]))) regular = 0;
	}
	if (h->fspace < 0 && (h->fspace = H5Dget_space(h->dset)) < 0) return "H5Dget_space";
	if (regular && n > 1) {
		hsize_t start = (hsize_t)offs[0], stride = (hsize_t)(offs[1] - offs[0]), count = (hsize_t)n, block = (hsize_t)lens[0];
		if (H5Sselect_hyperslab(h->fspace, H5S_SELECT_SET, &start, &stride, &count, &block) < 0) return "H5Sselect_hyperslab";
	} else {
		if (H5Sselect_none(h->fspace) < 0) return "H5Sselect_none";
		for (int i = 0; i < n; i++) {
			hsize_t start = (hsize_t)offs[i], count = (hsize_t)lens[i];
			if (H5Sselect_hyperslab(h->fspace, H5S_SELECT_OR, &start, NULL, &count, NULL) < 0) return "H5Sselect_hyperslab(OR)";
		}
	}
	if (h->mspace < 0 || h->mnd != 1 || h->mcount[0] != total) {
		if (h->mspace >= 0) H5Sclose(h->mspace);
		if ((h->mspace = H5Screate_simple(1, &total, NULL)) < 0) return "H5Screate_simple";
		h->mnd = 1; h->mcount[0] = total; h->mcount[1] = 0;
	}
	herr_t rc = write ? H5Dwrite(h->dset, H5T_NATIVE_UCHAR, h->mspace, h->fspace, h->dxpl, buf)
	                  : H5Dread(h->dset, H5T_NATIVE_UCHAR, h->mspace, h->fspace, h->dxpl, buf);
	if (rc < 0) { pario_h5_why(h->why); return write ? "H5Dwrite" : "H5Dread"; }
	return "";
}

// pario_h5_extent reads /data's length with the serial driver (the file
// is closed by then): the size a benchmark file "has".
static const char *pario_h5_extent(const char *name, unsigned long long *n, char *why) {
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	why[0] = 0;
	hid_t file = H5Fopen(name, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (file < 0) { pario_h5_why(why); return "H5Fopen"; }
	hid_t dset = H5Dopen2(file, "data", H5P_DEFAULT);
	if (dset < 0) { pario_h5_why(why); H5Fclose(file); return "H5Dopen2 /data"; }
	hid_t space = H5Dget_space(dset);
	hsize_t dims[2] = {0, 1};
	int nd = H5Sget_simple_extent_ndims(space);
	if (nd == 1 || nd == 2) H5Sget_simple_extent_dims(space, dims, NULL);
	H5Sclose(space);
	H5Dclose(dset);
	H5Fclose(file);
	if (nd != 1 && nd != 2) return "/data is not one- or two-dimensional";
	*n = nd == 2 ? dims[0] * dims[1] : dims[0];
	return "";
}

// pario_h5_step fills why for a step that failed without reading the
// stack (the library's stack holds until its next call).
static const char *pario_h5_step(pario_h5 *h, const char *step) {
	if (step[0] && !h->why[0]) pario_h5_why(h->why);
	return step;
}

static const char *pario_h5_flush(pario_h5 *h) {
	if (H5Fflush(h->file, H5F_SCOPE_GLOBAL) >= 0) return "";
	pario_h5_why(h->why);
	return "H5Fflush";
}

static const char *pario_h5_close(pario_h5 *h) {
	const char *err = "";
	if (h->mspace >= 0) H5Sclose(h->mspace);
	if (h->fspace >= 0) H5Sclose(h->fspace);
	if (h->dxpl >= 0) H5Pclose(h->dxpl);
	if (h->dset >= 0 && H5Dclose(h->dset) < 0) { err = "H5Dclose"; pario_h5_why(h->why); }
	if (h->file >= 0 && H5Fclose(h->file) < 0) { err = "H5Fclose"; pario_h5_why(h->why); }
	h->file = h->dset = h->dxpl = h->fspace = h->mspace = -1;
	return err;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"unsafe"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/hints"
	"github.com/pario/pario/bench/backend/mpi"
)

func init() { backend.Register(func() backend.Driver { return &Driver{} }) }

// Driver holds the HDF5 settings (IOR's names).
type Driver struct {
	Alignment  int64
	NoFill     bool
	Fill       bool
	ChunkSize  int64
	Collective bool
	Unlimited  bool
	Hints      hints.Set
	// DimY makes /data two-dimensional, rows of DimY bytes (the thesis'
	// dimx/dimy); ChunkX x ChunkY is then the chunk shape.
	DimY, ChunkX, ChunkY int64
}

// Name implements backend.Driver.
func (*Driver) Name() string { return "HDF5" }

// Summary implements backend.Driver.
func (*Driver) Summary() string {
	return "parallel HDF5 over MPI-IO, one dataset for every segment (cgo; ranks under mpirun)"
}

// Options implements backend.Driver.
func (d *Driver) Options() []backend.Option {
	return append([]backend.Option{
		backend.SizeOption(&d.Alignment, "hdf5.setalignment", "HDF5: align objects of at least this size to it (IOR -O setAlignment; H5Pset_alignment), e.g. 1m"),
		backend.BoolOption(&d.NoFill, "hdf5.nofill", "HDF5: never write fill values (IOR -O noFill; H5D_FILL_TIME_NEVER)"),
		backend.BoolOption(&d.Fill, "hdf5.fill", "HDF5: write fill values when space is allocated (H5D_FILL_TIME_ALLOC), to measure their cost"),
		backend.SizeOption(&d.ChunkSize, "hdf5.chunksize", "HDF5: chunked layout with chunks of this many bytes (default contiguous)"),
		backend.BoolOption(&d.Collective, "hdf5.collective", "HDF5: collective I/O (IOR -c; H5FD_MPIO_COLLECTIVE)"),
		backend.BoolOption(&d.Unlimited, "hdf5.unlimited", "HDF5: an extendible dataset (unlimited dimension, chunked), grown before each write"),
		backend.SizeOption(&d.DimY, "hdf5.dimy", "HDF5: a 2-D dataset of rows of this many bytes (the thesis' dimy; dimx follows from the size)"),
		backend.SizeOption(&d.ChunkX, "hdf5.chunkx", "HDF5 with --hdf5.dimy: chunk rows"),
		backend.SizeOption(&d.ChunkY, "hdf5.chunky", "HDF5 with --hdf5.dimy: chunk columns"),
	}, d.Hints.Options("hdf5", "HDF5")...)
}

// Validate implements backend.Driver.
func (d *Driver) Validate(p backend.Params) error {
	if err := Validate2D("hdf5", d.DimY, d.ChunkSize, d.ChunkX, d.ChunkY, d.Unlimited, p); err != nil {
		return err
	}
	if err := CheckChunk("hdf5", d.ChunkSize, d.ChunkX, d.ChunkY); err != nil {
		return err
	}
	chunk := d.ChunkSize
	if d.ChunkX > 0 {
		chunk = d.ChunkX * d.ChunkY // under 4 GiB: CheckChunk
	}
	if err := validate("hdf5", d.NoFill, d.Fill, chunk, d.Unlimited, d.Collective, p); err != nil {
		return err
	}
	return d.Hints.Check("hdf5")
}

// MaxChunk is one more than the largest chunk HDF5 takes, in bytes and in
// elements along each dimension (H5Pset_chunk: "all chunk dimensions must
// be less than 2^32"; H5Dcreate: chunks under 4 GiB).
const MaxChunk = 1 << 32

// CheckChunk refuses a chunk HDF5 would refuse only when the file is
// created (with exit status 1 and "H5Pset_chunk failed"): 4 GiB or more
// (the product of chunkx and chunky too, which could overflow int64).
func CheckChunk(api string, chunk, chunkX, chunkY int64) error {
	switch hi, lo := bits.Mul64(uint64(chunkX), uint64(chunkY)); {
	case chunk >= MaxChunk:
		return fmt.Errorf("--%s.chunksize %d: HDF5 chunks must be under 4 GiB", api, chunk)
	case chunkX > 0 && chunkY > 0 && (hi != 0 || lo >= MaxChunk):
		return fmt.Errorf("--%s.chunkx %d x --%s.chunky %d: HDF5 chunks must be under 4 GiB", api, chunkX, api, chunkY)
	}
	return nil
}

// Validate2D checks the thesis' two-dimensional layout: rows of dimY
// bytes, and transfers that are whole rows or lie inside one.
func Validate2D(api string, dimY, chunk, chunkX, chunkY int64, unlimited bool, p backend.Params) error {
	if dimY == 0 {
		if chunkX != 0 || chunkY != 0 {
			return fmt.Errorf("--%s.chunkx and --%s.chunky need --%s.dimy", api, api, api)
		}
		return nil
	}
	data := dataBytes(p)
	rows := data / dimY
	switch {
	case data%dimY != 0:
		return fmt.Errorf("--%s.dimy %d does not divide the dataset's %d bytes", api, dimY, data)
	case !(p.TransferSize%dimY == 0 && p.BlockSize%dimY == 0) && dimY%p.TransferSize != 0:
		return fmt.Errorf("--%s.dimy %d: a transfer (%d bytes) must be whole rows or fit in one (-t dividing the row, or -t and -b multiples of it)", api, dimY, p.TransferSize)
	case (chunkX == 0) != (chunkY == 0):
		return fmt.Errorf("--%s.chunkx and --%s.chunky go together", api, api)
	case chunkX > 0 && chunk > 0:
		return fmt.Errorf("give --%s.chunksize or --%s.chunkx/chunky, not both", api, api)
	case chunk > 0 && chunk%dimY != 0:
		return fmt.Errorf("--%s.chunksize %d with --%s.dimy %d: a chunk of whole rows (or use --%s.chunkx/chunky)", api, chunk, api, dimY, api)
	case chunkY > dimY:
		return fmt.Errorf("--%s.chunky %d is wider than a row (--%s.dimy %d)", api, chunkY, api, dimY)
	case chunkX > rows && !unlimited:
		return fmt.Errorf("--%s.chunkx %d is more rows than the dataset's %d", api, chunkX, rows)
	}
	return nil
}

// ChunkShape is the chunk's (rows, columns) for a 2-D dataset, or
// (bytes, 0) for a 1-D one; (0, 0) is contiguous.
func ChunkShape(dimY, chunk, chunkX, chunkY int64) (int64, int64) {
	switch {
	case dimY == 0:
		return chunk, 0
	case chunkX > 0:
		return chunkX, chunkY
	case chunk > 0:
		return chunk / dimY, dimY
	}
	return 0, 0
}

func validate(api string, noFill, fill bool, chunk int64, unlimited, collective bool, p backend.Params) error {
	switch {
	case noFill && fill:
		return fmt.Errorf("--%s.nofill and --%s.fill contradict each other", api, api)
	case unlimited && chunk == 0:
		return fmt.Errorf("--%s.unlimited needs --%s.chunksize (an extendible dataset is chunked)", api, api)
	case chunk > 0 && !unlimited && chunk > dataBytes(p):
		return fmt.Errorf("--%s.chunksize %d is larger than the dataset's %d bytes", api, chunk, dataBytes(p))
	case (collective || unlimited) && p.Random:
		return fmt.Errorf("--%s.collective and --%s.unlimited need every rank to make the same calls: not with -z", api, api)
	}
	return nil
}

// dataBytes is the dataset's size: one rank's data with a file per
// process, everyone's in a shared file.
func dataBytes(p backend.Params) int64 {
	if p.FilePerProc {
		return p.BlockSize * p.Segments
	}
	return p.BlockSize * p.Segments * int64(p.Tasks)
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

// Backend is one rank's HDF5 back end.
type Backend struct {
	d Driver
	p backend.Params
}

func cHints(s *hints.Set) *C.char {
	return C.CString(s.Lines(os.Environ()))
}

func (b *Backend) open(ctx context.Context, name string, create bool) (backend.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f := &File{b: b, name: name, ctx: ctx, self: b.p.FilePerProc}
	f.start = b.p.FileSize - dataBytes(b.p)
	cname, chints := C.CString(name), cHints(&b.d.Hints)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(chints))
	fill := 0
	switch {
	case b.d.NoFill:
		fill = -1
	case b.d.Fill:
		fill = 1
	}
	var step *C.char
	cx, cy := ChunkShape(b.d.DimY, b.d.ChunkSize, b.d.ChunkX, b.d.ChunkY)
	mpi.Do(func() {
		step = C.pario_h5_step(&f.h, C.pario_h5_open(&f.h, cname, cbool(create), cbool(f.self), chints, C.longlong(b.d.Alignment),
			C.longlong(cx), C.longlong(cy), C.int(fill), cbool(b.d.Unlimited), C.longlong(dataBytes(b.p)),
			C.longlong(b.d.DimY), cbool(b.d.Collective)))
	})
	if s := C.GoString(step); s != "" {
		err := fmt.Errorf("hdf5: %s: %s failed%s", name, s, f.why())
		mpi.Do(func() { C.pario_h5_close(&f.h) })
		return nil, err
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

// Size implements backend.Backend: the data start plus /data's length,
// not the file's (whose header and alignment padding IOR does not count).
func (b *Backend) Size(_ context.Context, name string) (int64, error) {
	if _, err := os.Stat(name); err != nil {
		return 0, err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var n C.ulonglong
	var step *C.char
	var why [600]C.char
	mpi.Do(func() { step = C.pario_h5_extent(cname, &n, &why[0]) })
	if s := C.GoString(step); s != "" {
		return 0, fmt.Errorf("hdf5: %s: %s failed%s (not an HDF5 file written by pario bench?)", name, s, reason(C.GoString(&why[0])))
	}
	return b.p.FileSize - dataBytes(b.p) + int64(n), nil
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
	switch cx, cy := ChunkShape(b.d.DimY, b.d.ChunkSize, b.d.ChunkX, b.d.ChunkY); {
	case cy > 0:
		layout = fmt.Sprintf("chunked (%d x %d)", cx, cy)
	case cx > 0:
		layout = fmt.Sprintf("chunked (%d bytes)", cx)
	}
	if b.d.DimY > 0 {
		layout += fmt.Sprintf(", 2-D rows of %d bytes", b.d.DimY)
	}
	mode := "independent"
	if b.d.Collective {
		mode = "collective"
	}
	d := [][2]string{{"HDF5 layout", layout}, {"HDF5 I/O", mode}, {"HDF5 alignment", fmt.Sprint(max(b.d.Alignment, 1))}}
	if b.p.Strided {
		calls := "one H5Dwrite / H5Dread of a hyperslab per transfer"
		if b.d.DimY > 0 {
			calls = "one H5Dwrite / H5Dread per block (2-D)"
		}
		d = append(d, [2]string{"HDF5 strided calls", calls})
	}
	return d
}

// File is an open HDF5 file; offsets are the benchmark's file offsets,
// element offsets in /data once the data start is taken off.
type File struct {
	b     *Backend
	name  string
	ctx   context.Context
	h     C.pario_h5
	self  bool
	start int64 // the engine's --data-start: the dataset begins there
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
		return 0, fmt.Errorf("hdf5: %s: offset %d is before the dataset", f.name, off+f.start)
	}
	n := int64(len(p))
	var step *C.char
	var err error
	short := false // a read across the end of /data: what is there, then io.EOF
	mpi.Do(func() {
		if write && f.b.d.Unlimited {
			if step, err = f.grow(off + n); err != nil || C.GoString(step) != "" {
				return
			}
		}
		if !write {
			if ext := int64(f.h.extent); off >= ext {
				err = io.EOF
				return
			} else if off+n > ext {
				n, short = ext-off, true
			}
		}
		step = C.pario_h5_step(&f.h, C.pario_h5_io(&f.h, cbool(write), unsafe.Pointer(&p[0]), C.longlong(off), C.longlong(n)))
	})
	if err != nil {
		if err == io.EOF {
			return 0, err
		}
		return 0, fmt.Errorf("hdf5: %s: %w", f.name, err)
	}
	if s := C.GoString(step); s != "" {
		return 0, fmt.Errorf("hdf5: %s: %s of %d bytes at %d failed%s", f.name, s, n, off, f.why())
	}
	if short {
		return int(n), io.EOF
	}
	return len(p), nil
}

// grow extends an extendible /data to hold end elements, or what another
// rank needs: the ranks agree on the new length (MPI_MAX over 64 bits,
// collective). It returns the HDF5 step that failed, as io does. Call it
// from inside mpi.Do.
func (f *File) grow(end int64) (*C.char, error) {
	ext, err := mpi.MaxUint64(uint64(end), f.self)
	if err != nil || ext <= uint64(f.h.extent) {
		return nil, err
	}
	return C.pario_h5_step(&f.h, C.pario_h5_extend(&f.h, C.ulonglong(ext))), nil
}

// ioExtents is io for a --strided call: one H5Dwrite or H5Dread of the
// ranges' union in a 1-D dataset; in a 2-D one, whose hyperslabs are
// rows, one call a range.
func (f *File) ioExtents(write bool, p []byte, ext []backend.Extent) error {
	if f.b.d.DimY > 0 || len(ext) == 1 {
		pos := 0
		for _, e := range ext {
			if _, err := f.io(write, p[pos:pos+int(e.Length)], e.Offset); err != nil {
				return err
			}
			pos += int(e.Length)
		}
		return nil
	}
	if err := f.ctx.Err(); err != nil {
		return err
	}
	offs := make([]C.longlong, len(ext))
	lens := make([]C.longlong, len(ext))
	var total, end int64
	for i, e := range ext {
		off := e.Offset - f.start
		if off < 0 {
			return fmt.Errorf("hdf5: %s: offset %d is before the dataset", f.name, e.Offset)
		}
		offs[i], lens[i] = C.longlong(off), C.longlong(e.Length)
		total += e.Length
		end = max(end, off+e.Length)
	}
	if total != int64(len(p)) {
		return fmt.Errorf("hdf5: %s: %d bytes for ranges of %d", f.name, len(p), total)
	}
	var step *C.char
	var err error
	mpi.Do(func() {
		if write && f.b.d.Unlimited {
			if step, err = f.grow(end); err != nil || C.GoString(step) != "" {
				return
			}
		}
		if !write && end > int64(f.h.extent) {
			err = io.EOF
			return
		}
		step = C.pario_h5_step(&f.h, C.pario_h5_io_extents(&f.h, cbool(write), unsafe.Pointer(&p[0]), &offs[0], &lens[0], C.int(len(ext))))
	})
	if err != nil {
		if err == io.EOF {
			return err
		}
		return fmt.Errorf("hdf5: %s: %w", f.name, err)
	}
	if s := C.GoString(step); s != "" {
		return fmt.Errorf("hdf5: %s: %s of %d ranges (%d bytes from %d) failed%s", f.name, s, len(ext), total, ext[0].Offset, f.why())
	}
	return nil
}

// why is the library's reason for the failure just reported (": reason",
// or "" when its error stack said nothing), and forgets it.
func (f *File) why() string {
	s := C.GoString(&f.h.why[0])
	f.h.why[0] = 0
	return reason(s)
}

func reason(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// WriteExtents implements backend.ExtentsIO.
func (f *File) WriteExtents(p []byte, ext []backend.Extent) error { return f.ioExtents(true, p, ext) }

// ReadExtents implements backend.ExtentsIO.
func (f *File) ReadExtents(p []byte, ext []backend.Extent) error { return f.ioExtents(false, p, ext) }

// WriteAt implements io.WriterAt.
func (f *File) WriteAt(p []byte, off int64) (int, error) { return f.io(true, p, off) }

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.io(false, p, off) }

// Sync implements backend.File: H5Fflush, collective.
func (f *File) Sync(ctx context.Context) error {
	var step *C.char
	mpi.Do(func() { step = C.pario_h5_flush(&f.h) })
	if s := C.GoString(step); s != "" {
		return fmt.Errorf("hdf5: %s: %s failed%s", f.name, s, f.why())
	}
	return nil
}

// Close implements backend.File: collective.
func (f *File) Close(ctx context.Context) error {
	var step *C.char
	mpi.Do(func() { step = C.pario_h5_close(&f.h) })
	if s := C.GoString(step); s != "" {
		return fmt.Errorf("hdf5: %s: %s failed%s", f.name, s, f.why())
	}
	return nil
}
