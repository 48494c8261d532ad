//go:build !hdf5

package inspect

// Open needs the HDF5 library: see ErrNoLibrary.
func Open(path string) (*File, error) { return nil, ErrNoLibrary }
