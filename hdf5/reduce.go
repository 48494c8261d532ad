package hdf5

import "fmt"

// Reduction is the MPI datatype NetCDF-4 hands MPI_Allreduce(MPI_MAX) when
// the ranks agree on the new length of an extended dimension (seed 002,
// section 5.3). The lengths are 64-bit unsigned (hsize_t / size_t); only
// a 64-bit unsigned reduction keeps every one.
type Reduction int

const (
	// ReduceInt32 is MPI_INT, the original code: each length is taken as
	// a 32-bit signed integer, so lengths of 2^31 and more turn negative
	// and lose the maximum to any small positive length (or, alone, come
	// back sign-extended as a huge length).
	ReduceInt32 Reduction = iota + 1
	// ReduceUint32 is MPI_UNSIGNED, the thesis' fix: right up to 2^32-1,
	// wrapped past it (2^32 + 5 becomes 5).
	ReduceUint32
	// ReduceUint64 is MPI_UNSIGNED_LONG_LONG: right for every length.
	ReduceUint64
)

func (r Reduction) String() string {
	switch r {
	case ReduceInt32:
		return "MPI_INT"
	case ReduceUint32:
		return "MPI_UNSIGNED"
	case ReduceUint64:
		return "MPI_UNSIGNED_LONG_LONG"
	}
	return fmt.Sprintf("Reduction(%d)", int(r))
}

// ReduceMax returns what MPI_Allreduce(MPI_MAX) over the ranks' lengths
// leaves in the 64-bit length when the reduction runs in type r: each
// length converted to r's type as C converts it (the low bits kept), the
// maximum taken in that type's order, and the result assigned back to the
// 64-bit length (a negative int sign-extends). lengths holds one length
// per rank and must not be empty.
func ReduceMax(r Reduction, lengths []uint64) (uint64, error) {
	if len(lengths) == 0 {
		return 0, errorf("reduce: no lengths (one per rank)")
	}
	switch r {
	case ReduceInt32:
		m := int32(lengths[0])
		for _, l := range lengths[1:] {
			m = max(m, int32(l))
		}
		return uint64(int64(m)), nil
	case ReduceUint32:
		m := uint32(lengths[0])
		for _, l := range lengths[1:] {
			m = max(m, uint32(l))
		}
		return uint64(m), nil
	case ReduceUint64:
		return maxOf(lengths), nil
	}
	return 0, errorf("reduce: unknown reduction %d", int(r))
}

func maxOf(xs []uint64) uint64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = max(m, x)
	}
	return m
}

// ReduceLimit is the largest length below which every set of lengths
// reduces correctly in r: 2^31 for MPI_INT, 2^32 for MPI_UNSIGNED, none
// (0) for the 64-bit reduction.
func ReduceLimit(r Reduction) uint64 {
	switch r {
	case ReduceInt32:
		return 1 << 31
	case ReduceUint32:
		return 1 << 32
	}
	return 0
}
