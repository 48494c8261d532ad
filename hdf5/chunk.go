package hdf5

import (
	"errors"
	"fmt"
	"math"
)

// DefaultChunkSize is NetCDF-4's DEFAULT_CHUNK_SIZE when the library is
// built without another value: 4 MiB per chunk.
const DefaultChunkSize = 4 << 20

// maxChunkBytes is check_chunksizes' limit (NC_MAX_UINT): a chunk larger
// than this is halved along every dimension until it fits.
const maxChunkBytes = math.MaxUint32

// dimMultiplier is NC_DIM_MULTIPLIER: a fixed dimension this many times
// shorter than the longest one is kept whole in the chunk.
const dimMultiplier = 10000

// allowedOverhang is NC_ALLOWED_OVERHANG: the part of a dimension the last
// chunk may leave unused before the chunk length is cut.
const allowedOverhang = 0.1

// Dim is one dimension of a variable. An unlimited (record) dimension has
// length 0 when the variable is defined, which is what the rule sees.
type Dim struct {
	Len       uint64
	Unlimited bool
}

// ChunkRule selects the version of NetCDF-4's nc4_find_default_chunksizes2.
type ChunkRule int

const (
	// RuleOriginal is the rule of NetCDF 4.3 the thesis measured: every
	// unlimited dimension gets chunk length 1 and the fixed dimensions
	// share DefaultChunkSize. A variable whose only dimension is
	// unlimited gets a chunk of one element (one byte for NC_BYTE).
	RuleOriginal ChunkRule = iota + 1
	// RuleThesis is the thesis' fix (section 5.2): when the only
	// dimension is unlimited it gets the whole default chunk size
	// (DefaultChunkSize / element size elements). Every other case is
	// RuleOriginal; the thesis left several unlimited dimensions alone.
	RuleThesis
)

func (r ChunkRule) String() string {
	switch r {
	case RuleOriginal:
		return "original"
	case RuleThesis:
		return "thesis"
	}
	return fmt.Sprintf("ChunkRule(%d)", int(r))
}

// ErrInvalid is matched (errors.Is) by every error of this package.
var ErrInvalid = errors.New("hdf5: invalid input")

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// DefaultChunks returns the chunk lengths (elements per dimension) NetCDF-4
// picks for a variable of the given dimensions and element size when the
// user gives none. defaultSize is the library's DEFAULT_CHUNK_SIZE in
// bytes (0 means DefaultChunkSize). The arithmetic follows the C code step
// by step, float32 product and truncations included, so that the numbers
// are the library's:
//
//  1. unlimited dimensions get 1; a fixed dimension more than 10000 times
//     shorter than the longest is kept whole;
//  2. every other dimension d gets (defaultSize/(values*elem))^(1/k) *
//     len(d) - 0.5, truncated, at most len(d) and at least 1, where values
//     is the product of the fixed lengths and k the number of dimensions
//     left;
//  3. while the chunk exceeds 4 GiB - 1 bytes every length is halved;
//  4. while the last chunk along d would leave more than 10% of len(d)
//     unused, the length is cut by 10% of len(d).
func DefaultChunks(rule ChunkRule, dims []Dim, elem uint64, defaultSize uint64) ([]uint64, error) {
	if rule != RuleOriginal && rule != RuleThesis {
		return nil, errorf("unknown chunk rule %d", int(rule))
	}
	if len(dims) == 0 {
		return nil, errorf("a scalar variable has no chunks")
	}
	if elem == 0 || elem > maxChunkBytes {
		return nil, errorf("element size must be in [1, %d] bytes, got %d", uint64(maxChunkBytes), elem)
	}
	if defaultSize == 0 {
		defaultSize = DefaultChunkSize
	}
	for i, d := range dims {
		if !d.Unlimited && d.Len == 0 {
			return nil, errorf("dimension %d: a fixed dimension needs a positive length", i)
		}
		if d.Unlimited && d.Len != 0 {
			return nil, errorf("dimension %d: an unlimited dimension has length 0 when the variable is defined, got %d", i, d.Len)
		}
	}
	chunks := make([]uint64, len(dims))
	if rule == RuleThesis && len(dims) == 1 && dims[0].Unlimited {
		chunks[0] = max(defaultSize/elem, 1)
		return chunks, nil
	}

	// Step 1. The C code multiplies in a float; so does this.
	var values float32 = 1
	var maxLen uint64
	set := 0
	for _, d := range dims {
		if d.Len != 0 {
			values *= float32(d.Len)
		} else {
			set++ // an unlimited dimension (length 0 at definition)
		}
		maxLen = max(maxLen, d.Len)
	}
	for i, d := range dims {
		switch {
		case d.Unlimited:
			chunks[i] = 1
		case satMul(d.Len, dimMultiplier) < maxLen:
			chunks[i] = d.Len
			set++
		}
	}
	// Step 2.
	for i, d := range dims {
		if chunks[i] != 0 {
			continue
		}
		share := math.Pow(float64(defaultSize)/float64(values*float32(elem)), 1/float64(len(dims)-set))
		suggested := toSize(share*float64(d.Len) - 0.5)
		chunks[i] = max(min(suggested, d.Len), 1)
	}
	// Step 3.
	for chunkBytes(chunks, elem) > maxChunkBytes {
		for i := range chunks {
			chunks[i] = max(chunks[i]/2, 1)
		}
	}
	// Step 4. An unlimited dimension has length 0 and is left alone.
	for i, d := range dims {
		over := float64(d.Len) * allowedOverhang
		for float64(d.Len%chunks[i]) > over {
			chunks[i] = toSize(float64(chunks[i]) - over)
		}
	}
	return chunks, nil
}

// toSize converts as C converts a double to size_t for the values the rule
// produces: truncation towards zero, negatives (undefined in C) to 0.
func toSize(v float64) uint64 {
	if v <= 0 || math.IsNaN(v) {
		return 0
	}
	if v >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(v)
}

func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// chunkBytes is the size of one chunk as check_chunksizes computes it (in
// a double, so it cannot overflow).
func chunkBytes(chunks []uint64, elem uint64) float64 {
	b := float64(elem)
	for _, c := range chunks {
		b *= float64(c)
	}
	return b
}

// ChunkBytes is the size in bytes of one chunk, saturating at MaxUint64.
func ChunkBytes(chunks []uint64, elem uint64) uint64 {
	b := elem
	for _, c := range chunks {
		b = satMul(b, c)
	}
	return b
}

// ChunkCount is the number of chunks that hold a dataset of the given
// extent: the entries of HDF5's chunk B-tree. An extent of 0 (an
// unlimited dimension before any record) counts as 1 record. Chunk
// lengths must be positive.
func ChunkCount(extent, chunks []uint64) (uint64, error) {
	if len(extent) != len(chunks) {
		return 0, errorf("extent has %d dimensions, chunk %d", len(extent), len(chunks))
	}
	n := uint64(1)
	for i, c := range chunks {
		if c == 0 {
			return 0, errorf("chunk dimension %d is 0", i)
		}
		e := max(extent[i], 1)
		n = satMul(n, (e-1)/c+1)
	}
	return n, nil
}
