// Package hdf5 holds the mechanisms of the HDF5/NetCDF-4 thesis (seed 002)
// as pure functions, so that they can be tested on the sizes that break
// them without a C library: NetCDF-4's default chunk rule as it was and as
// the thesis fixed it (DefaultChunks), and the reduction NetCDF-4 uses to
// agree on a dimension's length when ranks extend it (ReduceMax), in the
// three widths the thesis discusses. The alignment arithmetic lives in
// package pattern, beside the x-OST analysis it feeds.
//
// Package hdf5 does no I/O; the cgo back ends that call the real libraries
// are in bench/backend/hdf5 (build tag hdf5).
package hdf5
