// Package mpi is the MPI runtime the cgo back ends (MPIIO, HDF5, NC4)
// share: MPI_Init once per process, on one OS thread that makes every MPI,
// HDF5 and NetCDF call (Do), so the libraries see a single thread whatever
// goroutine the benchmark engine runs on, and MPI_Finalize when the last
// back end closes (mpirun reports a process that exits without it as a
// failure).
//
// The code needs Open MPI's headers and library and is built only with the
// build tag hdf5 (`go build -tags hdf5`, `make build-hdf5`); without it
// this package is empty and the default build needs no C library.
package mpi
