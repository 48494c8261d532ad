//go:build hdf5

package inspect

/*
#cgo pkg-config: hdf5-openmpi ompi-c
#include <stdlib.h>
#include <hdf5.h>

typedef struct {
	char name[256];
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
	pario_ds *ds;
	int n, cap;
	const char *err;
} pario_walk;

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

static herr_t pario_visit(hid_t g, const char *name, const H5L_info_t *info, void *data) {
	pario_walk *w = data;
	H5O_info_t oi;
	// An object that cannot be read stops the walk (the file is
	// damaged); one that is not a dataset is passed over.
	if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
		w->err = "a damaged HDF5 file: cannot read an object of its root group";
		return -1;
	}
	if (oi.type != H5O_TYPE_DATASET) return 0;
	if (w->n == w->cap) return 0;
	pario_ds *d = &w->ds[w->n];
	hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
	if (ds < 0) {
		w->err = "a damaged HDF5 file: cannot open a dataset of its root group";
		return -1;
	}
	snprintf(d->name, sizeof d->name, "%s", name);
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

// pario_inspect fills up to cap datasets of the root group; returns the
// step that failed, with the library's reason in msg (512 bytes), or "".
static const char *pario_inspect(const char *path, pario_ds *ds, int cap, int *n, int *nc4, char *msg) {
	msg[0] = 0;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (H5Fis_hdf5(path) <= 0) return "not an HDF5 or NetCDF-4 file";
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0) {
		pario_lasterr(msg);
		return "a damaged or truncated HDF5 file: the library cannot open it";
	}
	*nc4 = H5Aexists(f, "_NCProperties") > 0;
	pario_walk w = {ds, 0, cap, NULL};
	herr_t r = H5Literate(f, H5_INDEX_NAME, H5_ITER_INC, NULL, pario_visit, &w);
	if (r < 0) pario_lasterr(msg);
	*n = w.n;
	H5Fclose(f);
	if (r < 0) return w.err != NULL ? w.err : "a damaged HDF5 file: cannot list its root group";
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

// maxDatasets bounds the datasets read from the root group.
const maxDatasets = 256

// Open reads the datasets of the root group of path.
func Open(path string) (*File, error) {
	if err := Regular(path); err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	buf := (*[maxDatasets]C.pario_ds)(C.calloc(maxDatasets, C.size_t(unsafe.Sizeof(C.pario_ds{}))))
	defer C.free(unsafe.Pointer(buf))
	var n, nc4 C.int
	var msg [512]C.char
	if s := C.GoString(C.pario_inspect(cpath, &buf[0], maxDatasets, &n, &nc4, &msg[0])); s != "" {
		if why := C.GoString(&msg[0]); why != "" {
			return nil, fmt.Errorf("%s: %s (%s)", path, s, why)
		}
		return nil, fmt.Errorf("%s: %s", path, s)
	}
	f := &File{Path: path, NetCDF4: nc4 != 0}
	for i := 0; i < int(n); i++ {
		d := &buf[i]
		ds := Dataset{Name: C.GoString(&d.name[0]), ElemSize: uint64(d.elem), Addr: int64(d.addr), Scale: d.scale != 0}
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
