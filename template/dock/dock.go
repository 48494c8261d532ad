// Package dock is the seed's molecular docking example (seed 004, section
// 3), rebuilt so that PI/OT's figures can be reproduced: a generator of the
// molecule input in the seed's record grammar, its segmentation functions
// (BSize of figure 6, the "simpler" length-prefixed one it was compared
// with, and CEDESize for the composed newspaper), and the compute step
// with a granularity knob.
//
// The grammar (figure 4), little-endian 32-bit ints as on the seed's Suns'
// C int, but in a fixed byte order so files move between machines:
//
//	B    = int N, N x (C E D E), E
//	atom = int M, M x (int, char)     (C, D and E are atoms)
//
// An atom holds at most MaxM elements (the seed's 4096-byte scratch
// buffer). In the length-prefixed form every B is preceded by an int
// giving its length, so its segmentation function reads one int.
//
// Importing the package registers BSize, BLen and CEDESize in the
// template/seg registry. Everything here is pure: it reads and writes only
// what it is given.
package dock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/pario/pario/template/seg"
)

// MaxM is the most elements an atom may hold: the seed's AtomicSize reads
// an atom into a 4096-byte buffer, and an element is 5 bytes.
const MaxM = 4096 / elemSize

// MaxN bounds the chains of one B, so a corrupt count is an error rather
// than a 100 GB segment.
const MaxN = 1 << 20

const (
	intSize  = 4
	elemSize = 5 // int + char
)

func init() {
	for name, fn := range map[string]seg.Func{"BSize": BSize, "BLen": BLen, "CEDESize": CEDESize} {
		if err := seg.Register(name, fn); err != nil {
			panic(err)
		}
	}
}

// Config sizes a generated input. The seed's: 50 molecules of about 350 KB.
type Config struct {
	Molecules int    // B molecules
	MeanBytes int64  // mean size of a B; sizes vary from half to one and a half times it
	MaxM      int    // most elements in an atom, 1..MaxM; 0 means MaxM
	Seed      uint64 // the same seed gives the same file
	LenPrefix bool   // precede each B by its length (the simpler format)
}

// Seed is the seed's input: 50 B molecules of about 350 KB, 17 MB.
func Seed() Config { return Config{Molecules: 50, MeanBytes: 350_000, Seed: 4} }

// Generate writes cfg's input to w and returns the size of each B as
// written (with its length prefix, if any): the segments a segmentation
// function must find.
func Generate(w io.Writer, cfg Config) ([]int64, error) {
	maxM := cfg.MaxM
	if maxM == 0 {
		maxM = MaxM
	}
	if maxM < 1 || maxM > MaxM || cfg.Molecules < 0 || cfg.MeanBytes < 0 {
		return nil, fmt.Errorf("dock: config %+v: molecules and mean size must be >= 0, MaxM in 1..%d", cfg, MaxM)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x70696f74))
	meanAtom := float64(intSize) + elemSize*float64(1+maxM)/2
	meanN := max(1, int(float64(cfg.MeanBytes)/(4*meanAtom)))
	sizes := make([]int64, 0, cfg.Molecules)
	var buf []byte
	for range cfg.Molecules {
		n := meanN/2 + rng.IntN(meanN+1)
		buf = binary.LittleEndian.AppendUint32(buf[:0], uint32(n))
		for range 4*n + 1 {
			m := 1 + rng.IntN(maxM)
			buf = binary.LittleEndian.AppendUint32(buf, uint32(m))
			for range m {
				buf = binary.LittleEndian.AppendUint32(buf, rng.Uint32())
				buf = append(buf, byte('a'+rng.IntN(26)))
			}
		}
		size := int64(len(buf))
		if cfg.LenPrefix {
			if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(buf)))); err != nil {
				return sizes, fmt.Errorf("dock: write molecule %d: %w", len(sizes), err)
			}
			size += intSize
		}
		if _, err := w.Write(buf); err != nil {
			return sizes, fmt.Errorf("dock: write molecule %d: %w", len(sizes), err)
		}
		sizes = append(sizes, size)
	}
	return sizes, nil
}

// ErrFormat is wrapped by every error about a malformed input.
var ErrFormat = errors.New("malformed molecule input")

// readInt reads the int at off, which must end by pmax.
func readInt(r io.ReaderAt, off, pmax int64, what string) (int64, error) {
	if off+intSize > pmax {
		return 0, fmt.Errorf("dock: %s at offset %d: runs past the part's end %d: %w", what, off, pmax, ErrFormat)
	}
	var b [intSize]byte
	if n, err := r.ReadAt(b[:], off); n < intSize {
		if err == nil || errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("dock: %s at offset %d: truncated file: %w", what, off, ErrFormat)
		}
		return 0, fmt.Errorf("dock: read %s at offset %d: %w", what, off, err)
	}
	return int64(int32(binary.LittleEndian.Uint32(b[:]))), nil
}

// atEnd reports whether the file ends at off: the seed's segmentation
// function returns -1 when its fread of N fails, and a part whose end is
// not known (pmax math.MaxInt64) ends where the file does.
func atEnd(r io.ReaderAt, off int64) bool {
	var b [1]byte
	n, err := r.ReadAt(b[:], off)
	return n == 0 && errors.Is(err, io.EOF)
}

// atomSize is the seed's AtomicSize: the atom's M, and its size.
func atomSize(r io.ReaderAt, off, pmax int64) (int64, error) {
	m, err := readInt(r, off, pmax, "atom's element count M")
	if err != nil {
		return 0, err
	}
	if m < 0 || m > MaxM {
		return 0, fmt.Errorf("dock: atom at offset %d: M = %d is outside 0..%d: %w", off, m, MaxM, ErrFormat)
	}
	size := intSize + m*elemSize
	if off+size > pmax {
		return 0, fmt.Errorf("dock: atom at offset %d: its %d bytes run past the part's end %d: %w", off, size, pmax, ErrFormat)
	}
	return size, nil
}

// BSize is the seed's figure 6: the extent of the B at cur, found by
// reading N and the size of each of its 4N+1 atoms (so a molecule is read
// twice: once here, once by its worker), or -1 at the end of the part.
func BSize(r io.ReaderAt, pmin, pmax, cur int64) (int64, error) {
	if cur >= pmax || atEnd(r, cur) {
		return -1, nil
	}
	n, err := readInt(r, cur, pmax, "B's chain count N")
	if err != nil {
		return 0, err
	}
	if n < 0 || n > MaxN {
		return 0, fmt.Errorf("dock: B at offset %d: N = %d is outside 0..%d: %w", cur, n, MaxN, ErrFormat)
	}
	off := cur + intSize
	for range 4*n + 1 {
		size, err := atomSize(r, off, pmax)
		if err != nil {
			return 0, fmt.Errorf("dock: B at offset %d: %w", cur, err)
		}
		off += size
	}
	return off - cur, nil
}

// BLen is the seed's simpler segmentation function, over the
// length-prefixed format (Config.LenPrefix): one read of the B's length.
func BLen(r io.ReaderAt, pmin, pmax, cur int64) (int64, error) {
	if cur >= pmax || atEnd(r, cur) {
		return -1, nil
	}
	l, err := readInt(r, cur, pmax, "B's length")
	if err != nil {
		return 0, err
	}
	if l <= 0 || cur+intSize+l > pmax {
		return 0, fmt.Errorf("dock: B at offset %d: length %d is not positive or runs past the part's end %d: %w", cur, l, pmax, ErrFormat)
	}
	return intSize + l, nil
}

// CEDESize cuts the inside of one B (after its N, up to its end) into its
// C E D E chains, for the composed newspaper: the extent of the chain at
// cur, or -1 when only the trailing E is left (its ComputeMolecule
// process handles it).
func CEDESize(r io.ReaderAt, pmin, pmax, cur int64) (int64, error) {
	if cur >= pmax {
		return -1, nil
	}
	off := cur
	for i := range 4 {
		size, err := atomSize(r, off, pmax)
		if err != nil {
			return 0, fmt.Errorf("dock: chain at offset %d: %w", cur, err)
		}
		off += size
		if i == 0 && off == pmax {
			return -1, nil // the trailing E
		}
	}
	return off - cur, nil
}

// Molecule is one parsed B: its atoms in file order (4N+1 of them), each
// as its raw bytes, M first.
type Molecule struct {
	N     int
	Atoms [][]byte
}

// Parse parses one B that fills rec exactly (a segment BSize found).
func Parse(rec []byte) (Molecule, error) {
	r := bytesReaderAt(rec)
	end := int64(len(rec))
	n, err := readInt(r, 0, end, "B's chain count N")
	if err != nil {
		return Molecule{}, err
	}
	if n < 0 || n > MaxN {
		return Molecule{}, fmt.Errorf("dock: B: N = %d is outside 0..%d: %w", n, MaxN, ErrFormat)
	}
	mol := Molecule{N: int(n)}
	off := int64(intSize)
	for range 4*n + 1 {
		size, err := atomSize(r, off, end)
		if err != nil {
			return Molecule{}, err
		}
		mol.Atoms = append(mol.Atoms, rec[off:off+size])
		off += size
	}
	if off != end {
		return Molecule{}, fmt.Errorf("dock: B ends at byte %d of a %d-byte record: %w", off, end, ErrFormat)
	}
	return mol, nil
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Process is the compute step for one atom (the seed's ProcessEData and
// WriteEData): work rounds of deterministic mixing over each element,
// the granularity knob (CPU time grows linearly with work and with the
// atom's size), and an output atom whose size depends on the data, so
// output records vary in size as the seed's did. It appends the output
// to out.
func Process(out, atom []byte, work int) []byte {
	m := int(binary.LittleEndian.Uint32(atom))
	h := uint64(m)
	for i := range m {
		e := atom[intSize+i*elemSize : intSize+(i+1)*elemSize]
		x := uint64(binary.LittleEndian.Uint32(e)) | uint64(e[4])<<32
		for range work {
			x = mix(x ^ h)
		}
		h = mix(h + x)
	}
	outM := 1 + int(h%uint64(m+1))
	out = binary.LittleEndian.AppendUint32(out, uint32(outM))
	for range outM {
		h = mix(h)
		out = binary.LittleEndian.AppendUint32(out, uint32(h))
		out = append(out, byte('a'+h>>32%26))
	}
	return out
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// OutHeader starts a molecule's output record: 'B' and N, as the seed's
// ComputeMolecule writes them.
func OutHeader(out []byte, n int) []byte {
	return binary.LittleEndian.AppendUint32(append(out, 'B'), uint32(n))
}

// Stats is the seed's Stats pass: it reads an output file of whole output
// records (in any order) and counts them and their atoms.
func Stats(out []byte) (molecules, atoms int, err error) {
	r := bytesReaderAt(out)
	end := int64(len(out))
	for off := int64(0); off < end; {
		if out[off] != 'B' {
			return molecules, atoms, fmt.Errorf("dock: output record at offset %d starts with %q, not 'B': %w", off, out[off], ErrFormat)
		}
		n, err := readInt(r, off+1, end, "output's chain count N")
		if err != nil {
			return molecules, atoms, err
		}
		if n < 0 || n > MaxN {
			return molecules, atoms, fmt.Errorf("dock: output record at offset %d: N = %d: %w", off, n, ErrFormat)
		}
		off += 1 + intSize
		for range 4*n + 1 {
			size, err := atomSize(r, off, end)
			if err != nil {
				return molecules, atoms, err
			}
			off += size
			atoms++
		}
		molecules++
	}
	return molecules, atoms, nil
}
