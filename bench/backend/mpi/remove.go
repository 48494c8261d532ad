//go:build hdf5

package mpi

import (
	"errors"
	"io/fs"
	"os"
)

// Remove deletes the file name that an MPI-IO, HDF5 or NetCDF-4 back end
// wrote; a file that is not there is no error (IOR removes before it
// writes).
func Remove(name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
