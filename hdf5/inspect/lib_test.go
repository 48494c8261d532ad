//go:build hdf5

package inspect

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ncgen writes the NetCDF-4 file of a CDL text with ncgen (netcdf-bin)
// and returns its path.
func ncgen(t *testing.T, cdl string) string {
	t.Helper()
	dir := t.TempDir()
	src, nc := filepath.Join(dir, "f.cdl"), filepath.Join(dir, "f.nc")
	if err := os.WriteFile(src, []byte(cdl), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ncgen", "-k", "nc4", "-o", nc, src).CombinedOutput(); err != nil {
		t.Fatalf("ncgen (Debian: apt-get install netcdf-bin): %v\n%s", err, out)
	}
	return nc
}

func open(t *testing.T, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func find(t *testing.T, f *File, name string) *Dataset {
	t.Helper()
	d, err := f.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Open reads whether a fill value is defined, not only the fill time:
// with IFSET (the default) HDF5 writes fill values only for a
// user-defined one, which NetCDF-4 sets for every variable.
func TestOpenFill(t *testing.T) {
	f := open(t, ncgen(t, `netcdf f {
dimensions:
  x = 1024 ;
variables:
  double filled(x) ;
  double nofill(x) ;
    nofill:_NoFill = "true" ;
  short own(x) ;
    own:_FillValue = -1s ;
}`))
	for _, tc := range []struct{ name, time, value string }{
		{"filled", "ifset", "user"}, // NetCDF-4's default fill value for double
		{"nofill", "never", "default"},
		{"own", "ifset", "user"},
		{"x", "ifset", "default"}, // a dimension scale: no value set
	} {
		d := find(t, f, tc.name)
		if d.FillTime != tc.time || d.FillValue != tc.value {
			t.Errorf("%s: fill time %q, fill value %q; want %q, %q", tc.name, d.FillTime, d.FillValue, tc.time, tc.value)
		}
	}
}

// Open reads each dataset's type class and whether it is a
// variable-length string, so advise can refuse what is no number.
func TestOpenTypes(t *testing.T) {
	f := open(t, ncgen(t, `netcdf t {
types:
  compound cmp { int a ; int b ; } ;
  byte enum color { RED = 0, GREEN = 1 } ;
  opaque(8) blob ;
  int(*) vl ;
dimensions:
  x = 1024 ;
variables:
  cmp c(x) ;
  color e(x) ;
  blob o(x) ;
  vl v(x) ;
  string s(x) ;
  char ch(x) ;
  int64 i8(x) ;
  float f(x) ;
  ushort us(x) ;
}`))
	for _, tc := range []struct {
		name, class string
		size        uint64
		varString   bool
	}{
		{"c", "compound", 8, false},
		{"e", "enum", 1, false},
		{"o", "opaque", 8, false},
		{"v", "vlen", 16, false},
		{"s", "string", 8, true},
		{"ch", "string", 1, false},
		{"i8", "integer", 8, false},
		{"f", "float", 4, false},
		{"us", "integer", 2, false},
	} {
		d := find(t, f, tc.name)
		if d.Class != tc.class || d.ElemSize != tc.size || d.VarString != tc.varString {
			t.Errorf("%s: class %q, %d bytes, variable-length string %v; want %q, %d, %v", tc.name, d.Class, d.ElemSize, d.VarString, tc.class, tc.size, tc.varString)
		}
	}
}

// Open reads the datasets of every group, named by their paths from the
// root group; before, only the root group's were read.
func TestOpenGroups(t *testing.T) {
	f := open(t, ncgen(t, `netcdf g {
dimensions:
  x = 1024 ;
variables:
  double d(x) ;
group: sub {
  dimensions:
    y = 16 ;
  variables:
    short inner(x) ;
  group: deeper {
    variables:
      int v(y) ;
    }
  }
}`))
	var names []string
	for _, d := range f.Datasets {
		names = append(names, d.Name)
	}
	if got, want := strings.Join(names, " "), "d sub/deeper/v sub/inner sub/y x"; got != want {
		t.Errorf("datasets %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name string
		dims []uint64
		elem uint64
	}{
		{"/sub/inner", []uint64{1024}, 2},
		{"sub/deeper/v", []uint64{16}, 4},
	} {
		d := find(t, f, tc.name)
		if !slices.Equal(d.Dims, tc.dims) || d.ElemSize != tc.elem || d.Scale {
			t.Errorf("%s: %+v; want dims %v of %d-byte elements", tc.name, d, tc.dims, tc.elem)
		}
	}
	if d := find(t, f, "sub/y"); !d.Scale {
		t.Errorf("sub/y: not a dimension scale: %+v", d)
	}
}

// linksC writes links.h5: dataset data, a soft link to it (alias), a
// soft link that leads nowhere (dangling) and an external link to a file
// that is not there (ext).
const linksC = `#include <hdf5.h>
int main(int argc, char **argv) {
	hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hsize_t n = 1024;
	hid_t sp = H5Screate_simple(1, &n, NULL);
	hid_t d = H5Dcreate2(f, "data", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (f < 0 || d < 0) return 1;
	H5Dclose(d);
	if (H5Lcreate_soft("/data", f, "alias", H5P_DEFAULT, H5P_DEFAULT) < 0) return 1;
	if (H5Lcreate_soft("/nowhere", f, "dangling", H5P_DEFAULT, H5P_DEFAULT) < 0) return 1;
	if (H5Lcreate_external(argv[2], "/x", f, "ext", H5P_DEFAULT, H5P_DEFAULT) < 0) return 1;
	H5Sclose(sp);
	return H5Fclose(f) < 0;
}
`

// A file with a soft link that leads nowhere or an external link is not
// damaged: the walk of every group passes over both (an external link
// names another file, which is not opened) and reads a soft link to a
// dataset under its own name.
func TestOpenLinks(t *testing.T) {
	dir := t.TempDir()
	src, bin, h5 := filepath.Join(dir, "links.c"), filepath.Join(dir, "links"), filepath.Join(dir, "links.h5")
	if err := os.WriteFile(src, []byte(linksC), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("h5pcc.openmpi", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("h5pcc.openmpi (Debian: libhdf5-openmpi-dev): %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, h5, filepath.Join(dir, "missing.h5")).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	f := open(t, h5)
	var names []string
	for _, d := range f.Datasets {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, " "); got != "alias data" {
		t.Errorf("datasets %q, want \"alias data\"", got)
	}
}
