package inspect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFind(t *testing.T) {
	f := &File{Path: "f.nc", Datasets: []Dataset{{Name: "data"}, {Name: "x", Scale: true}}}
	if d, err := f.Find(""); err != nil || d.Name != "data" {
		t.Errorf("Find(\"\") = %v, %v; want data (x is a dimension scale)", d, err)
	}
	if d, err := f.Find("x"); err != nil || d.Name != "x" {
		t.Errorf("Find(x) = %v, %v", d, err)
	}
	if _, err := f.Find("nope"); err == nil || !strings.Contains(err.Error(), `f.nc has no dataset "nope" (it has: data, x)`) {
		t.Errorf("Find(nope): %v", err)
	}
	f.Datasets = append(f.Datasets, Dataset{Name: "more"})
	if _, err := f.Find(""); err == nil || !strings.Contains(err.Error(), "pick one with --var") {
		t.Errorf("two datasets: %v", err)
	}
}

// A file of many datasets is not listed whole in the error: before, a
// --var that missed in a file of 65,536 datasets printed every name.
func TestFindListsAFew(t *testing.T) {
	f := &File{Path: "many.h5"}
	for i := range 1000 {
		f.Datasets = append(f.Datasets, Dataset{Name: fmt.Sprintf("d%d", i)})
	}
	_, err := f.Find("nope")
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "d19 and 980 more)") {
		t.Fatalf("Find(nope) in 1,000 datasets: %d bytes: %.300v", len(err.Error()), err)
	}
}

// Regular refuses what is not a regular file before the library opens
// it (it blocks on a named pipe) and names what it is.
func TestRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.h5")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		if err := Regular(p); err != nil {
			t.Errorf("Regular(%s): %v", p, err)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{dir, dir + ": is a directory; want an HDF5 or NetCDF-4 file"},
		{fifo, fifo + ": is not a regular file (a named pipe); want an HDF5 or NetCDF-4 file"},
		{"/dev/null", "/dev/null: is not a regular file (a character device)"},
	} {
		if err := Regular(tc.path); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Regular(%s) = %v, want ErrNotRegular saying %q", tc.path, err, tc.want)
		}
	}
	if err := Regular(filepath.Join(dir, "nope")); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotRegular) {
		t.Errorf("Regular(missing) = %v, want fs.ErrNotExist", err)
	}
}

// A dataset in a group is found by its path, with or without the leading
// slash; the listing of what the file has names group datasets by path.
func TestFindInGroups(t *testing.T) {
	f := &File{Path: "f.nc", Datasets: []Dataset{{Name: "x", Scale: true}, {Name: "sub/inner"}, {Name: "sub/deeper/v"}}}
	for _, name := range []string{"sub/inner", "/sub/inner"} {
		if d, err := f.Find(name); err != nil || d.Name != "sub/inner" {
			t.Errorf("Find(%q) = %v, %v; want sub/inner", name, d, err)
		}
	}
	if d, err := f.Find("/sub/deeper/v"); err != nil || d.Name != "sub/deeper/v" {
		t.Errorf("Find(/sub/deeper/v) = %v, %v", d, err)
	}
	for _, name := range []string{"inner", "/", "sub", "//sub/inner"} {
		if _, err := f.Find(name); err == nil || !strings.Contains(err.Error(), "f.nc has no dataset "+quote(name)+" (it has: x, sub/inner, sub/deeper/v)") {
			t.Errorf("Find(%q): %v", name, err)
		}
	}
	// The only dataset that is no dimension scale, in a group.
	f.Datasets = f.Datasets[:2]
	if d, err := f.Find(""); err != nil || d.Name != "sub/inner" {
		t.Errorf("Find(\"\") = %v, %v; want sub/inner", d, err)
	}
}
