//go:build hdf5

package inspect

/*
#cgo pkg-config: hdf5-openmpi ompi-c
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>

// PARIO_MAX_DATASETS bounds the datasets read from one file.
#define PARIO_MAX_DATASETS 65536

typedef struct {
	char *name;     // the path from the root group, malloc'd
	int ndims;
	unsigned long long dims[32], maxdims[32], chunk[32];
	unsigned long long elem;
	int tclass;     // H5T_class_t; -1 when unreadable
	int varstr;     // a variable-length string
	int layout;     // 0 contiguous, 1 chunked, 2 compact, -1 other
	long long addr;
	int fill;       // 0 never, 1 alloc, 2 ifset
	int fillval;    // 0 undefined, 1 the library's default, 2 user-defined, -1 unknown
	int scale;      // a dimension scale (a NetCDF dimension)
} pario_ds;

typedef struct {
	pario_ds *ds;   // malloc'd, grown as datasets are found
	int n, cap;
	char err[600];
} pario_walk;

// pario_next is the next free entry of w->ds, grown when full; NULL past
// PARIO_MAX_DATASETS or when memory runs out.
static pario_ds *pario_next(pario_walk *w) {
	if (w->n == w->cap) {
		if (w->cap >= PARIO_MAX_DATASETS) return NULL;
		int cap = w->cap == 0 ? 64 : w->cap * 2;
		pario_ds *ds = realloc(w->ds, (size_t)cap * sizeof *ds);
		if (ds == NULL) return NULL;
		memset(ds + w->cap, 0, (size_t)(cap - w->cap) * sizeof *ds);
		w->ds = ds;
		w->cap = cap;
	}
	return &w->ds[w->n];
}

// pario_free frees what pario_inspect returned.
static void pario_free(pario_ds *ds, int n) {
	for (int i = 0; i < n; i++) free(ds[i].name);
	free(ds);
}

// pario_errmsg keeps the description of the innermost error on the
// stack: the one that says what is wrong with the file.
static herr_t pario_errmsg(unsigned n, const H5E_error2_t *e, void *data) {
	if (n == 0 && e->desc != NULL) snprintf(data, 512, "%s", e->desc);
	return 0;
}

static void pario_lasterr(char *msg) {
	msg[0] = 0;
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, pario_errmsg, msg);
}

// pario_visit is called by H5Lvisit for every link of every group, name
// its path from the root group ("sub/inner").
static herr_t pario_visit(hid_t g, const char *name, const H5L_info_t *info, void *data) {
	pario_walk *w = data;
	H5O_info_t oi;
	// An external link names another file, which is not opened; a soft
	// link that leads nowhere is passed over.
	if (info->type == H5L_TYPE_EXTERNAL) return 0;
	// An object that cannot be read stops the walk (the file is
	// damaged); one that is not a dataset is passed over.
	if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
		if (info->type != H5L_TYPE_HARD) return 0;
		snprintf(w->err, sizeof w->err, "a damaged HDF5 file: cannot read object \"%.400s\"", name);
		return -1;
	}
	if (oi.type != H5O_TYPE_DATASET) return 0;
	pario_ds *d = pario_next(w);
	if (d == NULL) {
		snprintf(w->err, sizeof w->err, "more than %d datasets: too many to read", PARIO_MAX_DATASETS);
		return -1;
	}
	hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
	if (ds < 0) {
		snprintf(w->err, sizeof w->err, "a damaged HDF5 file: cannot open dataset \"%.400s\"", name);
		return -1;
	}
	d->name = strdup(name);
	if (d->name == NULL) {
		H5Dclose(ds);
		snprintf(w->err, sizeof w->err, "out of memory");
		return -1;
	}
	hid_t sp = H5Dget_space(ds);
	d->ndims = H5Sget_simple_extent_ndims(sp);
	if (d->ndims > 32 || d->ndims < 0) d->ndims = 0;
	hsize_t dims[32], maxd[32];
	H5Sget_simple_extent_dims(sp, dims, maxd);
	for (int i = 0; i < d->ndims; i++) { d->dims[i] = dims[i]; d->maxdims[i] = maxd[i] == H5S_UNLIMITED ? ~0ULL : maxd[i]; }
	hid_t t = H5Dget_type(ds);
	d->elem = H5Tget_size(t);
	d->tclass = H5Tget_class(t);
	d->varstr = d->tclass == H5T_STRING && H5Tis_variable_str(t) > 0;
	H5Tclose(t);
	hid_t dcpl = H5Dget_create_plist(ds);
	H5D_layout_t l = H5Pget_layout(dcpl);
	d->layout = l == H5D_CONTIGUOUS ? 0 : l == H5D_CHUNKED ? 1 : l == H5D_COMPACT ? 2 : -1;
	d->addr = -1;
	if (l == H5D_CHUNKED) {
		hsize_t c[32];
		int n = H5Pget_chunk(dcpl, 32, c);
		for (int i = 0; i < n && i < 32; i++) d->chunk[i] = c[i];
		hsize_t nchunks = 0;
		if (H5Dget_num_chunks(ds, sp, &nchunks) >= 0 && nchunks > 0) {
			hsize_t off[32]; unsigned mask; haddr_t a; hsize_t sz;
			if (H5Dget_chunk_info(ds, sp, 0, off, &mask, &a, &sz) >= 0 && a != HADDR_UNDEF) d->addr = (long long)a;
		}
	} else if (l == H5D_CONTIGUOUS) {
		haddr_t a = H5Dget_offset(ds);
		if (a != HADDR_UNDEF) d->addr = (long long)a;
	}
	H5D_fill_time_t ft = H5D_FILL_TIME_IFSET;
	H5Pget_fill_time(dcpl, &ft);
	d->fill = ft == H5D_FILL_TIME_NEVER ? 0 : ft == H5D_FILL_TIME_ALLOC ? 1 : 2;
	// Whether a fill value is defined decides what IFSET does.
	H5D_fill_value_t fv = H5D_FILL_VALUE_ERROR;
	H5Pfill_value_defined(dcpl, &fv);
	d->fillval = fv == H5D_FILL_VALUE_UNDEFINED ? 0 : fv == H5D_FILL_VALUE_DEFAULT ? 1 : fv == H5D_FILL_VALUE_USER_DEFINED ? 2 : -1;
	d->scale = H5Aexists(ds, "CLASS") > 0;
	H5Pclose(dcpl);
	H5Sclose(sp);
	H5Dclose(ds);
	w->n++;
	return 0;
}

// pario_inspect reads the datasets of every group into *ds (*n of them;
// the caller frees them with pario_free, also after a failure); returns
// the step that failed, with the library's reason in msg (512 bytes), or
// "". A failure of the walk is described in werr (600 bytes).
static const char *pario_inspect(const char *path, pario_ds **ds, int *n, int *nc4, char *msg, char *werr) {
	msg[0] = 0;
	werr[0] = 0;
	*ds = NULL;
	*n = 0;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (H5Fis_hdf5(path) <= 0) return "not an HDF5 or NetCDF-4 file";
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0) {
		pario_lasterr(msg);
		return "a damaged or truncated HDF5 file: the library cannot open it";
	}
	*nc4 = H5Aexists(f, "_NCProperties") > 0;
	pario_walk w = {NULL, 0, 0, ""};
	herr_t r = H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, pario_visit, &w);
	if (r < 0) pario_lasterr(msg);
	*ds = w.ds;
	*n = w.n;
	H5Fclose(f);
	if (r < 0) {
		if (w.err[0] == 0) return "a damaged HDF5 file: cannot list its groups";
		memcpy(werr, w.err, sizeof w.err);
		return werr;
	}
	return "";
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// HaveLibrary reports whether Open can read files (a build with the tag
// hdf5).
const HaveLibrary = true

// Open reads the datasets of path: of the root group and of every group
// below it, named by their paths ("sub/inner").
func Open(path string) (*File, error) {
	if err := Regular(path); err != nil {
		return nil, err
	}
	if err := Sniff(path); err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var ds *C.pario_ds
	var n, nc4 C.int
	var msg [512]C.char
	var werr [600]C.char
	s := C.GoString(C.pario_inspect(cpath, &ds, &n, &nc4, &msg[0], &werr[0]))
	defer C.pario_free(ds, n)
	if s != "" {
		if why := C.GoString(&msg[0]); why != "" {
			return nil, fmt.Errorf("%s: %s (%s)", path, s, why)
		}
		return nil, fmt.Errorf("%s: %s", path, s)
	}
	f := &File{Path: path, NetCDF4: nc4 != 0}
	for i := range unsafe.Slice(ds, int(n)) {
		d := &unsafe.Slice(ds, int(n))[i]
		ds := Dataset{Name: C.GoString(d.name), ElemSize: uint64(d.elem), Addr: int64(d.addr), Scale: d.scale != 0}
		for j := 0; j < int(d.ndims); j++ {
			ds.Dims = append(ds.Dims, uint64(d.dims[j]))
			ds.Unlimited = append(ds.Unlimited, uint64(d.maxdims[j]) == ^uint64(0))
		}
		switch d.layout {
		case 0:
			ds.Layout = "contiguous"
		case 1:
			ds.Layout = "chunked"
			for j := 0; j < int(d.ndims); j++ {
				ds.Chunk = append(ds.Chunk, uint64(d.chunk[j]))
			}
		case 2:
			ds.Layout = "compact"
		default:
			ds.Layout = "virtual"
		}
		ds.FillTime = [...]string{"never", "alloc", "ifset"}[d.fill]
		ds.Class = typeClass(d.tclass)
		ds.VarString = d.varstr != 0
		ds.FillValue = map[C.int]string{0: "undefined", 1: "default", 2: "user"}[d.fillval]
		f.Datasets = append(f.Datasets, ds)
	}
	return f, nil
}

// typeClass names an H5T_class_t as Dataset.Class does.
func typeClass(c C.int) string {
	switch c {
	case C.H5T_INTEGER:
		return "integer"
	case C.H5T_FLOAT:
		return "float"
	case C.H5T_TIME:
		return "time"
	case C.H5T_STRING:
		return "string"
	case C.H5T_BITFIELD:
		return "bitfield"
	case C.H5T_OPAQUE:
		return "opaque"
	case C.H5T_COMPOUND:
		return "compound"
	case C.H5T_REFERENCE:
		return "reference"
	case C.H5T_ENUM:
		return "enum"
	case C.H5T_VLEN:
		return "vlen"
	case C.H5T_ARRAY:
		return "array"
	}
	return "unknown"
}
