// Package inspect reads what `pario advise --file` needs from an existing
// HDF5 or NetCDF-4 file through the HDF5 library: each dataset's
// dimensions (and which are unlimited), element size, layout, chunk shape,
// fill time and fill value and the address of its data (of the first chunk when
// chunked), and whether the file is NetCDF-4.
//
// The library is called only in a build with the tag hdf5; without it
// Open returns ErrNoLibrary, so the default build needs no C library.
//
// Every byte of the file is parsed inside libhdf5, which does not survive
// every damaged file (1.10.8 segfaults on some overwritten root groups):
// a program that reads files it does not trust calls Open in a child
// process, as pario advise --file does.
package inspect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pario/pario/internal/filekind"
)

// ErrNoLibrary is returned by a build without the tag hdf5.
var ErrNoLibrary = errors.New("reading HDF5 files needs pario built with the HDF5 library (make build-hdf5)")

// ErrNotRegular is matched by Regular's error for a path that is there
// but is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Regular checks that path is a regular file (symbolic links followed)
// before the library opens it: on a named pipe its open blocks until a
// writer comes, and a directory is no HDF5 file either.
func Regular(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return &notRegularError{path: path, msg: "is a directory"}
	default:
		return &notRegularError{path: path, msg: "is not a regular file (" + filekind.Of(m) + ")"}
	}
}

// ErrNotHDF5 is matched by Sniff's error for a file that is surely no
// HDF5 file.
var ErrNotHDF5 = errors.New("not an HDF5 or NetCDF-4 file")

// Sniff refuses, from its first bytes and without the library, a file
// that cannot be HDF5: an empty one, or NetCDF's classic format (CDF-1,
// CDF-2, CDF-5: "CDF" and the version), which NetCDF writes unless asked
// for NetCDF-4. Anything else is left to the library, since an HDF5 file
// may start with a user block of any content.
func Sniff(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var head [4]byte
	n, err := io.ReadFull(f, head[:])
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return &notHDF5Error{path: path, msg: "is empty"}
	case n == 4 && string(head[:3]) == "CDF" && (head[3] == 1 || head[3] == 2 || head[3] == 5):
		return &notHDF5Error{path: path, msg: fmt.Sprintf("is a NetCDF classic file (CDF-%d), not NetCDF-4 (nccopy -k nc4 converts it)", head[3])}
	}
	return nil
}

type notHDF5Error struct{ path, msg string }

func (e *notHDF5Error) Error() string {
	return e.path + ": " + e.msg + ": " + ErrNotHDF5.Error()
}

func (e *notHDF5Error) Is(target error) bool { return target == ErrNotHDF5 }

type notRegularError struct{ path, msg string }

func (e *notRegularError) Error() string {
	return e.path + ": " + e.msg + "; want an HDF5 or NetCDF-4 file"
}

func (e *notRegularError) Is(target error) bool { return target == ErrNotRegular }

// Dataset is what the file says about one dataset.
type Dataset struct {
	Name      string
	Dims      []uint64 // current extent
	Unlimited []bool   // per dimension: maximum is unlimited
	ElemSize  uint64
	// Class is the element type's class: "integer", "float", "string",
	// "enum", "compound", "opaque", "reference", "vlen", "array",
	// "bitfield", "time" (HDF5's H5T_class_t), or "unknown".
	Class string
	// VarString: a variable-length string (NetCDF-4's string type), whose
	// elements are pointers to data stored elsewhere in the file.
	VarString bool
	Layout    string   // "contiguous", "chunked" or "compact"
	Chunk     []uint64 // chunk shape when chunked
	// Addr is the file address of the data (the first chunk's when
	// chunked); -1 when no storage is allocated yet.
	Addr int64
	// FillTime is "never", "alloc" or "ifset".
	FillTime string
	// FillValue is whether a fill value is defined: "undefined",
	// "default" (the library's, zeros) or "user" (H5Pset_fill_value, as
	// NetCDF-4 does for every variable); "" when the library cannot say.
	FillValue string
	// Scale marks a dimension scale (how NetCDF-4 stores a dimension):
	// Find with no name passes over them.
	Scale bool
}

// File is the datasets of a file: of its root group and of every group
// below it (NetCDF-4's groups), each named by its path from the root
// group without a leading slash ("data", "sub/inner").
type File struct {
	Path     string
	NetCDF4  bool // the file has NetCDF-4's _NCProperties attribute
	Datasets []Dataset
}

// Find returns the named dataset (a path: "sub/inner" or "/sub/inner"
// for one in a group); with name "" the only one, in any group, that is
// not a dimension scale.
func (f *File) Find(name string) (*Dataset, error) {
	var names []string
	var only *Dataset
	data := 0
	path := strings.TrimPrefix(name, "/")
	for i := range f.Datasets {
		d := &f.Datasets[i]
		if path != "" && d.Name == path {
			return d, nil
		}
		names = append(names, d.Name)
		if !d.Scale {
			only = d
			data++
		}
	}
	switch {
	case name == "" && data == 1:
		return only, nil
	case name == "":
		return nil, &notFoundError{path: f.Path, msg: "has no single dataset: pick one with --var", names: names}
	}
	return nil, &notFoundError{path: f.Path, msg: "has no dataset " + quote(name), names: names}
}

// maxListed bounds the dataset names a "has no dataset" error lists: a
// file may hold 65,536 of them.
const maxListed = 20

type notFoundError struct {
	path, msg string
	names     []string
}

func (e *notFoundError) Error() string {
	has := "none"
	if len(e.names) > 0 {
		has = strings.Join(e.names[:min(len(e.names), maxListed)], ", ")
		if more := len(e.names) - maxListed; more > 0 {
			has += fmt.Sprintf(" and %d more", more)
		}
	}
	return e.path + " " + e.msg + " (it has: " + has + ")"
}

func quote(s string) string { return "\"" + s + "\"" }
