// Package dist holds pario's distribution functions: the pure arithmetic that
// maps a byte offset of a logical file onto (datafile, physical offset) and
// back. It does no I/O.
//
// The interface mirrors PVFS2/OrangeFS's distribution methods
// (logical_to_physical_offset, physical_to_logical_offset,
// next_mapped_offset, contiguous_length, logical_file_size, get_num_dfiles,
// parameter encode/decode/string), because those are exactly what make
// splitting a request into per-server pieces cheap: NextMapped and
// ContiguousLength let a client walk a range strip by strip without probing
// byte by byte.
//
// A Distribution value is bound to a fixed number of datafiles (one per I/O
// server the file uses). Datafile numbers run 0..Datafiles()-1; which server
// holds which datafile is the metadata server's business, not this package's.
package dist

import (
	"fmt"
	"math"
)

// Distribution maps logical file offsets to datafiles. Implementations are
// immutable and safe for concurrent use. All offsets and sizes are bytes and
// never negative; methods may panic only on negative arguments, a datafile
// number out of range or a sizes slice of the wrong length, which are
// programming errors, never input errors (inputs are validated when a
// Distribution is built).
//
// Every logical offset in [0, math.MaxInt64] maps without overflow. Going
// the other way, a physical offset can lie beyond every logical offset an
// int64 can hold; ToLogical, NextMapped and LogicalSize then return
// math.MaxInt64 rather than wrap. Parameter limits (MaxStripeWidth) keep
// that from happening for logical offsets below 2^62.
type Distribution interface {
	// Name is the registered name, e.g. "simple_stripe".
	Name() string
	// Params is the canonical parameter string, "key=value[,key=value]",
	// such that New(Name(), Params(), ...) rebuilds an equal distribution.
	// It is empty for distributions without parameters.
	Params() string
	// Datafiles is the number of datafiles the distribution spreads over.
	Datafiles() int

	// ToPhysical maps a logical offset to its datafile and the offset
	// inside that datafile.
	ToPhysical(logical int64) (datafile int, physical int64)
	// ToLogical is the inverse of ToPhysical for datafile df.
	ToLogical(df int, physical int64) int64
	// NextMapped returns the smallest logical offset >= logical that is
	// stored on datafile df (PVFS2's next_mapped_offset).
	NextMapped(df int, logical int64) int64
	// ContiguousLength returns how many bytes starting at logical stay on
	// the same datafile at consecutive physical offsets (at least 1). The
	// built-in distributions return the whole run, which spans several
	// strips where consecutive strips share a datafile (a single datafile,
	// a one-datafile twod_stripe group, adjacent varstrip strips).
	ContiguousLength(logical int64) int64
	// LogicalSize recovers the logical file size from the physical sizes of
	// the datafiles (len(sizes) == Datafiles()): one past the largest
	// logical offset any datafile holds. Sparse and short datafiles are
	// normal.
	LogicalSize(sizes []int64) int64
	// PhysicalSize is the size datafile df must have for a file of the given
	// logical size: the number of bytes of [0, logicalSize) it stores. A
	// truncate sets every datafile to this.
	PhysicalSize(df int, logicalSize int64) int64
}

// Piece is one contiguous run of a logical range that lives on one datafile.
type Piece struct {
	Datafile int
	Logical  int64 // offset in the logical file
	Physical int64 // offset in the datafile
	Length   int64
}

// Split cuts the logical range [off, off+length) into pieces, each stored
// contiguously on one datafile, in logical order. The pieces cover the range
// exactly once. A zero length gives no pieces. It panics if off or length is
// negative or off+length overflows int64.
//
// It walks the range once to count the pieces and once to fill them, so the
// result is the only allocation: ContiguousLength is cheap, a reallocating
// append is not.
func Split(d Distribution, off, length int64) []Piece {
	if off < 0 || length < 0 || length > math.MaxInt64-off {
		panic(fmt.Sprintf("dist.Split: bad range off=%d length=%d", off, length))
	}
	end := off + length
	count := 0
	for o := off; o < end; o += min(d.ContiguousLength(o), end-o) {
		count++
	}
	if count == 0 {
		return nil
	}
	pieces := make([]Piece, 0, count)
	for off < end {
		df, phys := d.ToPhysical(off)
		n := min(d.ContiguousLength(off), end-off)
		pieces = append(pieces, Piece{Datafile: df, Logical: off, Physical: phys, Length: n})
		off += n
	}
	return pieces
}
