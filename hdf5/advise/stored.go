package advise

import (
	"cmp"
	"fmt"
	"strings"
)

// Stored is what an existing file says about a dataset (read by package
// hdf5/inspect in a build with the HDF5 library).
type Stored struct {
	Path, Name string
	NetCDF4    bool
	Dims       []uint64
	Unlimited  []bool
	ElemSize   uint64
	Class      string // the type class (package inspect's Dataset.Class)
	VarString  bool   // a variable-length string
	Layout     string // contiguous, chunked, compact
	Chunk      []uint64
	Addr       int64  // address of the data (first chunk); -1: not allocated
	FillTime   string // never, alloc, ifset
	FillValue  string // undefined, default (the library's), user (user-defined)
}

// typeNames names the element types advise reads from a file, by class
// and size (the name is TypeSize's; only the size matters to the
// analysis). An enum is stored as its integers, a NetCDF char as a
// one-byte string.
var typeNames = map[string]map[uint64]string{
	"integer": {1: "byte", 2: "short", 4: "int", 8: "int64"},
	"enum":    {1: "byte", 2: "short", 4: "int", 8: "int64"},
	"float":   {4: "float", 8: "double"},
	"string":  {1: "char"},
}

// storedType is the element type name of a stored dataset; the data of
// a variable-length type (string or vlen) lives elsewhere in the file,
// and a compound, opaque, reference or array element is no number of
// advise's types.
func storedType(s Stored) (string, error) {
	switch {
	case s.VarString:
		return "", fmt.Errorf("has a variable-length string type (its strings are stored elsewhere in the file): advise needs fixed-size numbers")
	case s.Class == "vlen":
		return "", fmt.Errorf("has a variable-length (vlen) type (its data is stored elsewhere in the file): advise needs fixed-size numbers")
	}
	sizes, ok := typeNames[s.Class]
	if !ok {
		class := cmp.Or(s.Class, "unknown")
		return "", fmt.Errorf("has %s %s type: advise needs numbers (integer, float or enum elements, or NetCDF chars)", article(class), class)
	}
	typ, ok := sizes[s.ElemSize]
	if !ok {
		if s.Class == "string" {
			return "", fmt.Errorf("has a string type of %d bytes: advise needs numbers (integer, float or enum elements, or NetCDF chars of 1 byte)", s.ElemSize)
		}
		return "", fmt.Errorf("has %s elements of %d bytes (advise knows %s)", s.Class, s.ElemSize, knownSizes(sizes))
	}
	return typ, nil
}

// knownSizes lists a class's sizes: "1, 2, 4 and 8".
func knownSizes(sizes map[uint64]string) string {
	var ns []string
	for _, n := range []uint64{1, 2, 4, 8} {
		if _, ok := sizes[n]; ok {
			ns = append(ns, fmt.Sprint(n))
		}
	}
	if len(ns) == 1 {
		return ns[0]
	}
	return strings.Join(ns[:len(ns)-1], ", ") + " and " + ns[len(ns)-1]
}

// FromStored fills a's dataset fields (API, dimensions, type, layout,
// chunk, fill, and the data's real address as the header) from a stored
// dataset; ranks, pattern, transfer and target stay a's.
func FromStored(a *Access, s Stored) error {
	where := fmt.Sprintf("%s: dataset %q", s.Path, s.Name)
	if len(s.Dims) == 0 {
		return fmt.Errorf("%w: %s is a scalar: nothing to advise", ErrInvalid, where)
	}
	for i, u := range s.Unlimited {
		if u && i > 0 {
			return fmt.Errorf("%w: %s: dimension %d is unlimited; advise handles an unlimited first dimension only", ErrInvalid, where, i)
		}
	}
	typ, err := storedType(s)
	if err != nil {
		return fmt.Errorf("%w: %s %v", ErrInvalid, where, err)
	}
	switch s.Layout {
	case "contiguous":
		a.Layout = Contiguous
	case "chunked":
		a.Layout = Chunked
		a.Chunk = append([]uint64(nil), s.Chunk...)
	default:
		return fmt.Errorf("%w: %s has a %s layout: nothing to advise (it is not striped data)", ErrInvalid, where, s.Layout)
	}
	a.Dims = append([]uint64(nil), s.Dims...)
	a.Unlimited = len(s.Unlimited) > 0 && s.Unlimited[0]
	for i, d := range a.Dims {
		if d == 0 {
			return fmt.Errorf("%w: %s: dimension %d is empty (no records written yet)", ErrInvalid, where, i)
		}
	}
	a.Type = typ
	a.API = HDF5
	if s.NetCDF4 {
		a.API = NetCDF4
	}
	fill, err := fillWritten(s.FillTime, s.FillValue)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, where, err)
	}
	a.Fill = fill
	a.fillFrom = fmt.Sprintf("read from the file: fill time %s, %s fill value", s.FillTime, map[string]string{"undefined": "no", "default": "the library's default", "user": "a user-defined"}[s.FillValue])
	a.Alignment = 1
	if s.Addr > 0 {
		a.Header = s.Addr
		a.stored = true
	}
	return nil
}

// fillWritten reports whether HDF5 writes fill values when it allocates
// a dataset's storage, from the dataset's fill time and whether a fill
// value is defined (HDF5's "Fill Value Behavior" table): always with
// H5D_FILL_TIME_ALLOC (the library's zeros when no value was set; an
// undefined value with ALLOC cannot be created), never with NEVER, and
// with IFSET (HDF5's default) only for a user-defined value: the
// library's default is not written. NetCDF-4 sets a value for every
// variable (its _FillValue or the type's default) and IFSET, so its
// variables are filled unless nc_def_var_fill(NC_NOFILL) set NEVER.
func fillWritten(time, value string) (bool, error) {
	switch value {
	case "undefined", "default", "user":
	default:
		return false, fmt.Errorf("fill value state %q: want undefined, default or user", value)
	}
	switch time {
	case "alloc":
		return true, nil
	case "never":
		return false, nil
	case "ifset":
		return value == "user", nil
	}
	return false, fmt.Errorf("fill time %q: want never, alloc or ifset", time)
}

// article is "a" or "an" before word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
