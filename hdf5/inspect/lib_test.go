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
