//go:build !hdf5

package inspect

// Open needs the HDF5 library: see ErrNoLibrary.
func Open(path string) (*File, error) { return nil, ErrNoLibrary }

// HaveLibrary reports whether Open can read files (a build with the tag
// hdf5).
const HaveLibrary = false
