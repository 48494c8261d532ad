//go:build hdf5

package inspect

import (
	"os"
	"os/exec"
	"path/filepath"
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
