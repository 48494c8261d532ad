// Package mpiio is the benchmark's MPI-IO back end (-a MPIIO), as IOR's:
// MPI_File_write_at / read_at on one shared file (or one per process with
// -F), independent by default and collective (the _all calls) with
// --mpiio.collective (IOR -c), with MPI-IO hints from --mpiio.hints.
// Under ROMIO's POSIX driver it reaches a pario mount like any program.
//
// Ranks are MPI processes (mpirun); built only with the build tag hdf5.
package mpiio
