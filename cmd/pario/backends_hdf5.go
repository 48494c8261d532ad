//go:build hdf5

package main

// The cgo back ends: built only with the build tag hdf5 (make build-hdf5),
// so the default build needs no C library.
import (
	_ "github.com/pario/pario/bench/backend/hdf5"
	_ "github.com/pario/pario/bench/backend/mpiio"
	_ "github.com/pario/pario/bench/backend/nc4"
)
