package advise

import (
	"fmt"
	"strconv"
	"strings"
)

// typeSizes are the element types NetCDF-4 and HDF5 share, by their
// NetCDF names and the usual C ones, in bytes.
var typeSizes = map[string]uint64{
	"byte": 1, "ubyte": 1, "char": 1, "int8": 1, "uint8": 1,
	"short": 2, "ushort": 2, "int16": 2, "uint16": 2,
	"int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
	"int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

// TypeSize returns the size in bytes of an element type name (byte, short,
// int, float, int64, double and their unsigned and C spellings).
func TypeSize(name string) (uint64, error) {
	if n, ok := typeSizes[strings.ToLower(strings.TrimSpace(name))]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("element type %q: want one of byte, short, int, float, int64, double (or ubyte, ushort, uint, uint64)", name)
}

// maxDims is HDF5's H5S_MAX_RANK.
const maxDims = 32

// ParseDims parses dimension lengths written "1024x1024" (or with commas,
// "1024,1024"); each length is a positive decimal number. what names the
// flag in errors.
func ParseDims(what, s string) ([]uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%s: no dimensions given (want e.g. 1024x1024)", what)
	}
	parts := strings.Split(strings.NewReplacer("X", "x", ",", "x", "*", "x").Replace(s), "x")
	if len(parts) > maxDims {
		return nil, fmt.Errorf("%s: %d dimensions, at most %d", what, len(parts), maxDims)
	}
	dims := make([]uint64, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%s: %q: dimension %d is empty (want lengths separated by x, e.g. 1024x1024)", what, s, i)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: dimension %d %q is not a decimal length", what, i, p)
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: dimension %d has length 0", what, i)
		}
		dims[i] = n
	}
	return dims, nil
}

// FormatDims renders dimension lengths as ParseDims reads them.
func FormatDims(dims []uint64) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = strconv.FormatUint(d, 10)
	}
	return strings.Join(parts, "x")
}
