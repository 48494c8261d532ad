// Package nc4 is the benchmark's NetCDF-4 back end (-a NC4), the thesis'
// own driver (seed 002): IOR's -a NCMPI is PnetCDF, which writes only the
// classic formats, so NetCDF-4 gets its own name. The file holds one
// variable, "data", of NC_UBYTE over one dimension "x": element i is byte
// i of IOR's shared file. Options: --nc4.setalignment (nc_set_alignment:
// the alignment the thesis added to NetCDF-4), --nc4.nofill / --nc4.fill,
// --nc4.chunksize, --nc4.collective (IOR -c), --nc4.unlimited (x is the
// unlimited dimension; the extension is collective), --nc4.chunk-rule
// (with --nc4.unlimited and no chunk size: the library's default, the
// original 4.3 rule's one element, or the thesis' fix), --nc4.hints, and
// --nc4.dimy, chunkx, chunky for the thesis' 2-D variable data(x, y).
//
// Ranks are MPI processes (mpirun); built only with the build tag hdf5.
package nc4
