// Package hdf5 is the benchmark's HDF5 back end (-a HDF5): parallel HDF5
// through MPI-IO, as IOR's HDF5 driver with the thesis' change (seed 002):
// every segment goes into one dataset, "/data", a one-dimensional array of
// bytes whose element i is byte i of IOR's shared file, which interleaved
// access needs. IOR's options are the driver's: --hdf5.setalignment (IOR
// -O setAlignment; H5Pset_alignment with that threshold and alignment),
// --hdf5.nofill (H5D_FILL_TIME_NEVER), --hdf5.chunksize (chunked layout),
// --hdf5.collective (IOR -c), --hdf5.hints (MPI-IO hints), and the thesis'
// --hdf5.unlimited (an extendible dataset grown before each write, the
// ranks agreeing on its length with a 64-bit MPI_MAX), and --hdf5.dimy,
// chunkx, chunky for the thesis' 2-D dataset. --hdf5.fill writes
// fill values at allocation, to measure what the thesis only claims.
//
// Ranks are MPI processes: run `mpirun -np N pario bench -a HDF5 ...` with
// a binary built with the build tag hdf5 (`make build-hdf5`); the default
// build has no HDF5 back end.
package hdf5
