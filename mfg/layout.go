// Package mfg is the arithmetic of "mapping at first generation" (MFG), the
// partitioning function of seed 000 (chapters 5 and 6): many processes take
// turns, semi-randomly, to write the lines of one shared write-only output
// whose layout is known in advance, and each process writes its own lines
// straight into one parallel file, with no gather to rank 0.
//
// From a Desc (file header, the sections of a run with a header, a fixed
// record size and a trailer each, the number of runs, generations and the
// sample frequency) New computes the Map of the whole file: the offset and
// size of every record of every run at every sampled generation. A Config
// (runs x chains on processes, spread as MrBayes spreads them) gives the
// writer Assignment of a generation, its pattern type (Complete-1,
// Partial-1, Complete+1, Partial+1, pi_1) and the I/O swaps; Map.View is
// what one process writes for a batch of lambda generations. The rest are
// the thesis' rules as functions: lambda_max (eq. 6.1) and the automatic
// lambda (8.2.4.1), su_max (eq. 7.4), the varstrip chunk bounds (eqs. 7.5,
// 7.6), and Strips, a varstrip layout that keeps each rank's bytes on its
// own server.
//
// The layout is run-major, as the thesis' appendix A.5: the file header,
// then per run its sections in order (MrBayes: the t header, the t lines,
// the p header, the p lines), each section's records in generation order.
// So the parallel file is the concatenation of the serial files, and a
// rank's lines of lambda consecutive generations of one run are contiguous.
//
// The package is pure: no I/O. See docs/mfg.md.
package mfg

import (
	"errors"
	"fmt"
	"iter"
)

// ErrInvalid is wrapped by every error about a bad description, config,
// assignment or parameter.
var ErrInvalid = errors.New("mfg: invalid input")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Limits keep every offset of a Map inside int64 with room to spare.
const (
	MaxRuns     = 1 << 20
	MaxSections = 64
	MaxSize     = 1 << 62 // the largest file a Map describes
)

// Section is one record type of a run's area: a header, Records
// fixed-size records (one per sampled generation) and a trailer. Records
// must have a fixed size for the map to exist; the writer pads them.
type Section struct {
	Name    string // "t", "p": for messages only
	Header  int64  // bytes before the first record
	Record  int64  // bytes of every record, > 0
	Trailer int64  // bytes after the last record (MrBayes 3.2.7's "end;")
}

// Desc describes a write-only output whose layout is known in advance.
type Desc struct {
	FileHeader int64     // bytes before the first run (figure 6.1's metadata header), may be 0
	Sections   []Section // one run's area, in file order
	Runs       int       // nruns
	Gens       int64     // ngen: generations 1..Gens
	SampleFreq int64     // generations g with g % SampleFreq == 0 are sampled
	Gen0       bool      // generation 0 is sampled too (MrBayes 3.2.7)
}

// Map is the map mu of a whole parallel file: every process computes the
// same one at the first generation.
type Map struct {
	d        Desc
	samples  int64   // sampled generations
	secOff   []int64 // offset of each section within a run's area
	secSize  []int64
	runSize  int64
	fileSize int64
}

// mul returns a*b, or false if it exceeds MaxSize. Both are >= 0.
func mul(a, b int64) (int64, bool) {
	if a != 0 && b > MaxSize/a {
		return 0, false
	}
	return a * b, true
}

func add(a, b int64) (int64, bool) {
	if a > MaxSize-b {
		return 0, false
	}
	return a + b, true
}

// New validates d and computes its map.
func New(d Desc) (*Map, error) {
	switch {
	case d.Runs < 1:
		return nil, invalid("desc: runs must be at least 1, got %d", d.Runs)
	case d.Runs > MaxRuns:
		return nil, invalid("desc: %d runs, the limit is %d", d.Runs, MaxRuns)
	case d.Gens < 0:
		return nil, invalid("desc: generations must not be negative, got %d", d.Gens)
	case d.SampleFreq < 1:
		return nil, invalid("desc: sample frequency must be at least 1, got %d", d.SampleFreq)
	case len(d.Sections) == 0:
		return nil, invalid("desc: a run needs at least one section")
	case len(d.Sections) > MaxSections:
		return nil, invalid("desc: %d sections, the limit is %d", len(d.Sections), MaxSections)
	case d.FileHeader < 0 || d.FileHeader > MaxSize:
		return nil, invalid("desc: file header of %d bytes is out of range [0, %d]", d.FileHeader, int64(MaxSize))
	}
	m := &Map{d: d, samples: d.Gens / d.SampleFreq}
	m.d.Sections = append([]Section(nil), d.Sections...)
	if d.Gen0 {
		m.samples++
	}
	if m.samples == 0 {
		return nil, invalid("desc: no generation is sampled (%d generations, sample frequency %d)", d.Gens, d.SampleFreq)
	}
	for i, s := range d.Sections {
		switch {
		case s.Record < 1:
			return nil, invalid("desc: section %d %q: record size must be at least 1, got %d", i, s.Name, s.Record)
		case s.Header < 0 || s.Header > MaxSize:
			return nil, invalid("desc: section %d %q: header of %d bytes is out of range", i, s.Name, s.Header)
		case s.Trailer < 0 || s.Trailer > MaxSize:
			return nil, invalid("desc: section %d %q: trailer of %d bytes is out of range", i, s.Name, s.Trailer)
		}
		size, ok := mul(s.Record, m.samples)
		if ok {
			size, ok = add(size, s.Header)
		}
		if ok {
			size, ok = add(size, s.Trailer)
		}
		m.secOff = append(m.secOff, m.runSize)
		if ok {
			m.runSize, ok = add(m.runSize, size)
		}
		if !ok {
			return nil, invalid("desc: section %d %q: a run's area exceeds %d bytes", i, s.Name, int64(MaxSize))
		}
		m.secSize = append(m.secSize, size)
	}
	all, ok := mul(m.runSize, int64(d.Runs))
	if ok {
		all, ok = add(all, d.FileHeader)
	}
	if !ok {
		return nil, invalid("desc: %d runs of %d bytes exceed %d bytes", d.Runs, m.runSize, int64(MaxSize))
	}
	m.fileSize = all
	return m, nil
}

// Desc returns the description the map was built from.
func (m *Map) Desc() Desc {
	d := m.d
	d.Sections = append([]Section(nil), m.d.Sections...)
	return d
}

// Size is the size of the whole parallel file.
func (m *Map) Size() int64 { return m.fileSize }

// Runs is the number of runs.
func (m *Map) Runs() int { return m.d.Runs }

// Samples is the number of sampled generations: the records per section.
func (m *Map) Samples() int64 { return m.samples }

// RunSize is the size of one run's area.
func (m *Map) RunSize() int64 { return m.runSize }

// RunOffset is where run r's area starts.
func (m *Map) RunOffset(r int) int64 { return m.d.FileHeader + int64(r)*m.runSize }

// Gen is the generation of sample i (0 <= i < Samples()).
func (m *Map) Gen(i int64) int64 {
	if m.d.Gen0 {
		return i * m.d.SampleFreq
	}
	return (i + 1) * m.d.SampleFreq
}

// Sample is the sample index of generation gen, or false if gen is not
// sampled.
func (m *Map) Sample(gen int64) (int64, bool) {
	if gen < 0 || gen > m.d.Gens || gen%m.d.SampleFreq != 0 || gen == 0 && !m.d.Gen0 {
		return 0, false
	}
	i := gen / m.d.SampleFreq
	if !m.d.Gen0 {
		i--
	}
	return i, true
}

// Extent is a byte range of the file.
type Extent struct{ Off, Len int64 }

// End is one past the last byte.
func (e Extent) End() int64 { return e.Off + e.Len }

// Record is the extent of run r's record of section s at sample i.
func (m *Map) Record(r, s int, i int64) (Extent, error) {
	if err := m.check(r, s, i); err != nil {
		return Extent{}, err
	}
	sec := m.d.Sections[s]
	return Extent{m.RunOffset(r) + m.secOff[s] + sec.Header + i*sec.Record, sec.Record}, nil
}

func (m *Map) check(r, s int, i int64) error {
	switch {
	case r < 0 || r >= m.d.Runs:
		return invalid("run %d out of range [0, %d)", r, m.d.Runs)
	case s < 0 || s >= len(m.d.Sections):
		return invalid("section %d out of range [0, %d)", s, len(m.d.Sections))
	case i < 0 || i >= m.samples:
		return invalid("sample %d out of range [0, %d)", i, m.samples)
	}
	return nil
}

// Kind says what a Piece holds.
type Kind uint8

const (
	FileHeader Kind = iota // the file's header, before every run
	Header                 // a section's header
	Records                // Count consecutive records of one section
	Trailer                // a section's trailer
)

func (k Kind) String() string {
	switch k {
	case FileHeader:
		return "file header"
	case Header:
		return "header"
	case Records:
		return "records"
	case Trailer:
		return "trailer"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Piece is one entry of the map or of a view: what it holds and where.
type Piece struct {
	Kind    Kind
	Run     int   // -1 for the file header
	Section int   // -1 for the file header
	First   int64 // Records: sample index of the first record
	Count   int64 // Records: how many consecutive records
	Extent
}

func (p Piece) String() string {
	switch p.Kind {
	case FileHeader:
		return fmt.Sprintf("file header [%d,%d)", p.Off, p.End())
	case Records:
		return fmt.Sprintf("run %d section %d samples %d..%d [%d,%d)", p.Run, p.Section, p.First, p.First+p.Count-1, p.Off, p.End())
	}
	return fmt.Sprintf("run %d section %d %s [%d,%d)", p.Run, p.Section, p.Kind, p.Off, p.End())
}

// All yields the whole map in file order: the file header (if any), then
// for every run and section its header (if any), each record on its own,
// and its trailer (if any). The pieces tile [0, Size()).
func (m *Map) All() iter.Seq[Piece] {
	return func(yield func(Piece) bool) {
		if m.d.FileHeader > 0 && !yield(Piece{Kind: FileHeader, Run: -1, Section: -1, Extent: Extent{0, m.d.FileHeader}}) {
			return
		}
		for r := 0; r < m.d.Runs; r++ {
			for s := range m.d.Sections {
				for _, p := range m.section(r, s, 0, m.samples, true, true) {
					if p.Kind != Records {
						if !yield(p) {
							return
						}
						continue
					}
					for i := range p.Count {
						q := p
						q.First, q.Count = p.First+i, 1
						q.Off, q.Len = p.Off+i*m.d.Sections[s].Record, m.d.Sections[s].Record
						if !yield(q) {
							return
						}
					}
				}
			}
		}
	}
}

// section returns run r's section s pieces for samples [first, first+n):
// the header if withHeader, the records as one piece, the trailer if
// withTrailer. Empty headers and trailers are left out.
func (m *Map) section(r, s int, first, n int64, withHeader, withTrailer bool) []Piece {
	sec := m.d.Sections[s]
	base := m.RunOffset(r) + m.secOff[s]
	var out []Piece
	if withHeader && sec.Header > 0 {
		out = append(out, Piece{Kind: Header, Run: r, Section: s, Extent: Extent{base, sec.Header}})
	}
	if n > 0 {
		out = append(out, Piece{Kind: Records, Run: r, Section: s, First: first, Count: n,
			Extent: Extent{base + sec.Header + first*sec.Record, n * sec.Record}})
	}
	if withTrailer && sec.Trailer > 0 {
		out = append(out, Piece{Kind: Trailer, Run: r, Section: s, Extent: Extent{base + m.secSize[s] - sec.Trailer, sec.Trailer}})
	}
	return out
}

// Assignment says which process writes each run: a[r] is the rank that
// holds run r's cold chain in a generation.
type Assignment []int

// View is what rank writes for the batch of samples [first,
// first+len(holders)), holders[i] being the assignment at sample first+i
// (lambda = len(holders) generations kept in memory and written at once).
// The pieces are in file order, which is also the order of the rank's
// buffer: for each run and section the rank holds, its records of the
// samples it held the run at (consecutive ones merged into one piece), the
// section's header with the run's first sample and its trailer with the
// last; the file header goes with run 0's first sample. A rank that holds
// nothing gets no pieces: it only joins the barrier.
//
// The views of all ranks over consecutive batches tile the file exactly
// once.
func (m *Map) View(rank int, first int64, holders []Assignment) ([]Piece, error) {
	return m.ViewRuns(rank, 0, m.d.Runs, first, holders)
}

// ViewRuns is View looking only at runs [lo, hi): with Config.RunsOf(rank)
// its cost is in the runs the rank holds chains of, not in all runs, so a
// Complete-1 generation costs each process the same whatever nruns is.
func (m *Map) ViewRuns(rank, lo, hi int, first int64, holders []Assignment) ([]Piece, error) {
	if lo < 0 || hi > m.d.Runs || lo > hi {
		return nil, invalid("view: runs [%d, %d) out of range [0, %d)", lo, hi, m.d.Runs)
	}
	n := int64(len(holders))
	switch {
	case n == 0:
		return nil, invalid("view: no assignment: a batch holds at least one sample")
	case first < 0 || first > m.samples-n:
		return nil, invalid("view: samples [%d, %d) out of range [0, %d)", first, first+n, m.samples)
	}
	for i, a := range holders {
		if len(a) != m.d.Runs {
			return nil, invalid("view: assignment of sample %d names %d runs, the file has %d", first+int64(i), len(a), m.d.Runs)
		}
	}
	var out []Piece
	if first == 0 && m.d.FileHeader > 0 && lo == 0 && hi > 0 && holders[0][0] == rank {
		out = append(out, Piece{Kind: FileHeader, Run: -1, Section: -1, Extent: Extent{0, m.d.FileHeader}})
	}
	last := m.samples - 1
	for r := lo; r < hi; r++ {
		for s := range m.d.Sections {
			for i := int64(0); i < n; {
				if holders[i][r] != rank {
					i++
					continue
				}
				j := i + 1
				for j < n && holders[j][r] == rank {
					j++
				}
				out = append(out, m.section(r, s, first+i, j-i, first+i == 0, first+j-1 == last)...)
				i = j
			}
		}
	}
	return out, nil
}

// ViewAt is the view of rank at one sampled generation gen (lambda = 1).
func (m *Map) ViewAt(rank int, gen int64, a Assignment) ([]Piece, error) {
	i, ok := m.Sample(gen)
	if !ok {
		return nil, invalid("view: generation %d is not sampled (generations %d, sample frequency %d, generation 0 sampled: %v)",
			gen, m.d.Gens, m.d.SampleFreq, m.d.Gen0)
	}
	return m.View(rank, i, []Assignment{a})
}

// Bytes is the total length of pieces: the size of the buffer they fill.
func Bytes(pieces []Piece) int64 {
	var n int64
	for _, p := range pieces {
		n += p.Len
	}
	return n
}

// Extents merges pieces that touch into the list of (offset, size) a
// vectored write takes, in file order.
func Extents(pieces []Piece) []Extent {
	var out []Extent
	for _, p := range pieces {
		if k := len(out) - 1; k >= 0 && out[k].End() == p.Off {
			out[k].Len += p.Len
			continue
		}
		out = append(out, p.Extent)
	}
	return out
}

// Batches is the number of writes (wnum) with lambda samples per write; the
// last one may be partial.
func (m *Map) Batches(lambda int64) (int64, error) {
	if lambda < 1 {
		return 0, invalid("lambda must be at least 1, got %d", lambda)
	}
	return (m.samples + lambda - 1) / lambda, nil
}

// Batch is the range of samples [first, first+n) of write w with lambda
// samples per write.
func (m *Map) Batch(lambda, w int64) (first, n int64, err error) {
	nb, err := m.Batches(lambda)
	if err != nil {
		return 0, 0, err
	}
	if w < 0 || w >= nb {
		return 0, 0, invalid("write %d out of range [0, %d) for lambda %d", w, nb, lambda)
	}
	first = w * lambda
	return first, min(lambda, m.samples-first), nil
}

// DataGen is the data one sampled generation adds to the file: one record
// of every section of every run (data_gen in the thesis, headers left out).
func (m *Map) DataGen() int64 {
	var rec int64
	for _, s := range m.d.Sections {
		rec += s.Record
	}
	// At most the file's size: every run has at least one sample.
	return rec * int64(m.d.Runs)
}
