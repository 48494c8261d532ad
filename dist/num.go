package dist

import (
	"errors"
	"fmt"
	"math"
)

// Limits on parameters. They exist so that every mapping can be computed in
// int64 without overflow: with a stripe (one full round over all datafiles)
// of at most MaxStripeWidth = 2^62 bytes, any logical offset below 2^62 plus
// one stripe still fits in an int64, so NextMapped and friends never
// saturate for offsets below 2^62.
const (
	// MaxStripSize bounds strip_size and each varstrip strip: 1 TiB is far
	// beyond any useful strip and keeps products with counts small.
	MaxStripSize = 1 << 40
	// MaxStripeWidth bounds one full round of a distribution: strip_size *
	// datafiles (simple_stripe), strip_size * group_strip_factor * datafiles
	// (twod_stripe), or the sum of all strips (varstrip).
	MaxStripeWidth = 1 << 62
	// MaxStripsLength bounds the varstrip strips string, as in OrangeFS
	// (PVFS_DIST_VARSTRIP_MAX_STRIPS_STRING_LENGTH).
	MaxStripsLength = 1024
	// maxCount bounds num_groups and group_strip_factor; OrangeFS keeps them
	// in uint32 on the wire.
	maxCount = math.MaxUint32
)

// ErrInvalid is matched (with errors.Is) by every error this package returns:
// all of them mean the layout, parameters or hints given are unusable, which
// the file system reports as EINVAL.
var ErrInvalid = errors.New("dist: invalid layout")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func errorf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// mulAdd returns a*b+c for non-negative arguments, saturating at
// math.MaxInt64. Only the inverse mappings need it: a physical offset far
// enough out has no logical offset that fits in an int64.
func mulAdd(a, b, c int64) int64 {
	if b != 0 && a > (math.MaxInt64-c)/b {
		return math.MaxInt64
	}
	return a*b + c
}

// runFrom clamps a run length n starting at off so that off+n does not
// overflow, keeping it at least 1 as ContiguousLength promises.
func runFrom(off, n int64) int64 {
	if n > math.MaxInt64-off {
		n = math.MaxInt64 - off
	}
	return max(n, 1)
}

// unbounded is ContiguousLength for a distribution whose every byte from off
// onwards is on one datafile at consecutive physical offsets.
func unbounded(off int64) int64 { return runFrom(off, math.MaxInt64) }

func checkOffset(what string, off int64) {
	if off < 0 {
		panic(fmt.Sprintf("dist: negative %s %d", what, off))
	}
}

func checkDatafile(df, n int) {
	if df < 0 || df >= n {
		panic(fmt.Sprintf("dist: datafile %d out of range [0, %d)", df, n))
	}
}

// logicalSize is LogicalSize for any distribution whose per-datafile mapping
// is increasing: the last byte of each datafile is the largest logical
// offset it holds, so the file ends one past the largest of those. This is
// right for short and sparse files, unlike OrangeFS's varstrip and
// twod_stripe, which sum the physical sizes.
func logicalSize(d Distribution, sizes []int64) int64 {
	if len(sizes) != d.Datafiles() {
		panic(fmt.Sprintf("dist: %s: LogicalSize got %d sizes for %d datafiles", d.Name(), len(sizes), d.Datafiles()))
	}
	var end int64
	for df, size := range sizes {
		checkOffset("datafile size", size)
		if size == 0 {
			continue
		}
		last := d.ToLogical(df, size-1)
		if last == math.MaxInt64 {
			return math.MaxInt64
		}
		end = max(end, last+1)
	}
	return end
}

// nextMapped is NextMapped for any distribution with an increasing
// per-datafile mapping: df holds exactly physical [0, PhysicalSize(df, off))
// below off, so its next byte at or after off is the one at that physical
// offset.
func nextMapped(d Distribution, df int, off int64) int64 {
	return d.ToLogical(df, d.PhysicalSize(df, off))
}

// parseUint parses a plain decimal number: digits only, no sign, no spaces.
func parseUint(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
