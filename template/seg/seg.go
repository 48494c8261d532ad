// Package seg holds PI/OT segmentation functions and their registry by name.
//
// A segmentation function has the seed's contract (BSize in its figure 6):
// given the file, the bounds [pmin, pmax) of the parent's part and the
// current position, it returns the extent of the segment starting there, or
// -1 when there is none (the end). The parent calls it repeatedly, starting
// at pmin and moving on by each extent, and hands each segment out as soon
// as it is known. A function may read the file to find the size, as
// irregular records need. The functions here are pure: they read only
// through the io.ReaderAt they are given.
package seg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
)

// Func returns the extent of the segment at cur within [pmin, pmax), or -1
// at the end.
type Func func(r io.ReaderAt, pmin, pmax, cur int64) (int64, error)

var (
	mu       sync.RWMutex
	registry = map[string]Func{}
)

// Register adds fn under name; a name is registered once.
func Register(name string, fn Func) error {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := registry[name]; ok {
		return fmt.Errorf("seg: segmentation function %q is already registered", name)
	}
	registry[name] = fn
	return nil
}

// Lookup returns the function registered under name.
func Lookup(name string) (Func, error) {
	mu.RLock()
	defer mu.RUnlock()
	fn, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("seg: no segmentation function %q (registered: %v)", name, namesLocked())
	}
	return fn, nil
}

// Names lists the registered functions.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func init() {
	for name, fn := range map[string]Func{"Lines": Lines, "FASTA": FASTA, "LenPrefix32": LenPrefix32} {
		if err := Register(name, fn); err != nil {
			panic(err)
		}
	}
}

// Segment is one segment: its index, base and extent.
type Segment struct {
	Index        int
	Base, Extent int64
}

// All runs fn over [pmin, pmax) and returns every segment, as the parent
// would hand them out; for tests and tools.
func All(fn Func, r io.ReaderAt, pmin, pmax int64) ([]Segment, error) {
	var out []Segment
	err := Each(fn, r, pmin, pmax, func(s Segment) bool {
		out = append(out, s)
		return true
	})
	return out, err
}

// Each runs fn over [pmin, pmax) and gives visit each segment in turn,
// until visit returns false: a walk over an input of a billion records
// that keeps none of them.
func Each(fn Func, r io.ReaderAt, pmin, pmax int64, visit func(Segment) bool) error {
	for i, cur := 0, pmin; ; i++ {
		n, err := fn(r, pmin, pmax, cur)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		if n == 0 || cur+n > pmax {
			return fmt.Errorf("seg: extent %d at offset %d leaves [%d, %d)", n, cur, pmin, pmax)
		}
		if !visit(Segment{Index: i, Base: cur, Extent: n}) {
			return nil
		}
		cur += n
	}
}

// Fixed returns a function cutting segments of n bytes (the last may be
// shorter): the constant segmentation.
func Fixed(n int64) Func {
	return func(_ io.ReaderAt, _, pmax, cur int64) (int64, error) {
		if n <= 0 {
			return 0, fmt.Errorf("seg: fixed extent %d is not positive", n)
		}
		if cur >= pmax {
			return -1, nil
		}
		return min(n, pmax-cur), nil
	}
}

// scan reads the first firstChunk bytes, then chunks twice as large each
// time up to maxChunk: records are often a few hundred bytes, and the
// parent calls a segmentation function once per record, so reading 64 KiB
// for each would read the file hundreds of times over.
const (
	firstChunk = 1 << 10
	maxChunk   = 64 << 10
)

// scanBufs start at firstChunk and keep what they grow to.
var scanBufs = sync.Pool{New: func() any { b := make([]byte, firstChunk); return &b }}

// scan reads from cur to pmax a chunk at a time and returns the offset at
// which stop says a segment ends (relative to cur), or pmax-cur.
func scan(r io.ReaderAt, pmax, cur int64, stop func(buf []byte, at int64) int) (int64, error) {
	// From a pool: a walk over a file of short records calls scan once a
	// record, and a buffer made each time allocated 1 KiB a record (a GiB
	// for a million-line input).
	pooled := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(pooled)
	buf := (*pooled)[:firstChunk]
	for at := cur; at < pmax; {
		if at > cur && len(buf) < maxChunk {
			n := min(2*len(buf), maxChunk)
			if cap(*pooled) < n {
				*pooled = make([]byte, n)
			}
			buf = (*pooled)[:n]
		}
		n, err := r.ReadAt(buf[:min(int64(len(buf)), pmax-at)], at)
		if n > 0 {
			if i := stop(buf[:n], at-cur); i >= 0 {
				return at - cur + int64(i), nil
			}
			at += int64(n)
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return at - cur, nil
		}
		if err != nil {
			return 0, fmt.Errorf("seg: read at offset %d: %w", at, err)
		}
	}
	return pmax - cur, nil
}

// Lines cuts one newline-terminated record per segment (the last record
// may lack its newline).
func Lines(r io.ReaderAt, _, pmax, cur int64) (int64, error) {
	if cur >= pmax {
		return -1, nil
	}
	n, err := scan(r, pmax, cur, func(buf []byte, _ int64) int {
		for i, c := range buf {
			if c == '\n' {
				return i + 1
			}
		}
		return -1
	})
	if err == nil && n == 0 {
		return -1, nil // the file ends before pmax
	}
	return n, err
}

// FASTA cuts one FASTA record per segment: a '>' header line and the
// sequence lines up to the next line starting with '>'.
func FASTA(r io.ReaderAt, _, pmax, cur int64) (int64, error) {
	if cur >= pmax {
		return -1, nil
	}
	var first [1]byte
	if n, err := r.ReadAt(first[:], cur); n == 0 {
		if errors.Is(err, io.EOF) {
			return -1, nil
		}
		return 0, fmt.Errorf("seg: FASTA: read at offset %d: %w", cur, err)
	}
	if first[0] != '>' {
		return 0, fmt.Errorf("seg: FASTA: offset %d: a record starts with '>', found %q", cur, first[0])
	}
	prev := byte('>') // the byte before buf[0]; not a newline at the header
	return scan(r, pmax, cur, func(buf []byte, rel int64) int {
		for i, c := range buf {
			if c == '>' && prev == '\n' && rel+int64(i) > 0 {
				return i
			}
			prev = c
		}
		return -1
	})
}

// LenPrefix32 cuts records of a 4-byte little-endian length then that many
// bytes.
func LenPrefix32(r io.ReaderAt, _, pmax, cur int64) (int64, error) {
	if cur >= pmax {
		return -1, nil
	}
	var h [4]byte
	n, err := r.ReadAt(h[:], cur)
	if n == 0 && errors.Is(err, io.EOF) {
		return -1, nil
	}
	if n < 4 {
		return 0, fmt.Errorf("seg: LenPrefix32: offset %d: %d bytes of a 4-byte length: %w", cur, n, io.ErrUnexpectedEOF)
	}
	ext := 4 + int64(binary.LittleEndian.Uint32(h[:]))
	if cur+ext > pmax {
		return 0, fmt.Errorf("seg: LenPrefix32: offset %d: a record of %d bytes runs past the end of the part at %d", cur, ext, pmax)
	}
	return ext, nil
}
