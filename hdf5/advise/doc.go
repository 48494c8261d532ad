// Package advise turns a description of how a parallel program writes an
// HDF5 or NetCDF-4 dataset (dimensions, element type, ranks, how the
// dataset is split among them, transfer size, layout, library settings)
// and the striping of the directory it writes to into the best practices
// the HDF5/NetCDF-4 thesis (seed 002) ends with: align objects to the
// strip, contiguous layout unless chunks are needed (and then which chunk
// shape), fill off, independent or collective I/O, the transfer size, the
// stripe count and strip size. Each advice carries its expected effect,
// computed with package pattern's analysis of the requests as they land on
// the strips now and as they would with the advice taken, next to the
// thesis' measurements.
//
// It is pure: `pario advise` parses flags into an Access, prints
// Advice.Text and, with --apply, sets Advice.Layout on a directory.
package advise
