package mcmc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pario/pario/mfg"
)

// Format is the MrBayes version whose output lines are written.
type Format uint8

const (
	// MB31 is MrBayes 3.1, which the thesis used: "tree rep.N = (...);",
	// "Gen LnL TL pi(A) ..." with a tab after every field, generation 1
	// onwards, no "end;" (appendix A.5).
	MB31 Format = iota + 1
	// MB327 is MrBayes 3.2.7, Debian's mb: "tree gen.N = [&U] (...);",
	// "Gen LnL LnPr TL pi(A) ...", generation 0 sampled, "end;" closing
	// the .t file.
	MB327
)

func (f Format) String() string {
	switch f {
	case MB31:
		return "3.1"
	case MB327:
		return "3.2.7"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat reads "3.1" or "3.2.7".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "3.1", "mb31":
		return MB31, nil
	case "3.2.7", "3.2", "mb327":
		return MB327, nil
	}
	return 0, invalid("format %q: want 3.1 or 3.2.7", s)
}

// Sections of a run's area, in the file order of appendix A.5.
const (
	SectionT = 0
	SectionP = 1
)

// Name is taxon i's name (0-based): its number, as the thesis' gtaxa
// named them (the translate table of A.5 reads "1 1, 2 2, ...").
func Name(i int) string { return strconv.Itoa(i + 1) }

// ID is the "[ID: N]" of the files' headers: FileID, else ten digits
// from the seed, so the headers' size does not depend on it.
func (p Params) ID() uint64 {
	if p.FileID != 0 {
		return p.FileID
	}
	return 1_000_000_000 + hash(p.Seed, 0)%9_000_000_000
}

// THeader is the .t file's header.
func (p Params) THeader() string { return tHeader(p.Format, p.Taxa, p.ID()) }

func tHeader(f Format, taxa int, id uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#NEXUS\n[ID: %010d]\n", id)
	if f == MB327 {
		b.WriteString("[Param: tree]\n")
	}
	// 3.1's "\ttranslate" is a reconstruction: the thesis' listing lost
	// its indentation, and with it a run's headers are the 300 B that,
	// with 401 B of lines, make A.5.3.4's 701 B per run at 16 taxa.
	if f == MB327 {
		b.WriteString("begin trees;\n   translate\n")
	} else {
		b.WriteString("begin trees;\n\ttranslate\n")
	}
	for i := range taxa {
		end := ","
		if i == taxa-1 {
			end = ";"
		}
		fmt.Fprintf(&b, "%8d %s%s\n", i+1, Name(i), end)
	}
	return b.String()
}

// PHeader is the .p file's header.
func (p Params) PHeader() string { return pHeader(p.Format, p.ID()) }

func pHeader(f Format, id uint64) string {
	if f == MB327 {
		return fmt.Sprintf("[ID: %010d]\nGen\tLnL\tLnPr\tTL\tpi(A)\tpi(C)\tpi(G)\tpi(T)\n", id)
	}
	return fmt.Sprintf("[ID: %010d]\nGen\tLnL\tTL\tpi(A)\tpi(C)\tpi(G)\tpi(T)\t\n", id)
}

// TTrailer closes the .t file: "end;" in 3.2.7, nothing in 3.1's files
// of appendix A.5.
func (p Params) TTrailer() string {
	if p.Format == MB327 {
		return "end;\n"
	}
	return ""
}

// Header and Trailer of section s.
func (p Params) Header(s int) string {
	if s == SectionT {
		return p.THeader()
	}
	return p.PHeader()
}

func (p Params) Trailer(s int) string {
	if s == SectionT {
		return p.TTrailer()
	}
	return ""
}

// blLen is the length of one printed branch length: "%.6f" of a value in
// (0, 1) or "%.6e" of one in [1e-3, 1).
func (p Params) blLen() int {
	if p.Format == MB327 {
		return len("2.000000e-02")
	}
	return len("0.100000")
}

// treePrefix is what comes before the tree.
func (p Params) treePrefix(b []byte, gen int64) []byte {
	if p.Format == MB327 {
		b = append(b, "   tree gen."...)
		b = strconv.AppendInt(b, gen, 10)
		return append(b, " = [&U] "...)
	}
	b = append(b, "   tree rep."...)
	b = strconv.AppendInt(b, gen, 10)
	return append(b, " = "...)
}

// newickLen is the length of every tree of p: the shape changes, the
// characters do not (n leaves, n-3 inner nodes below the root's
// trichotomy, n-1 commas, every branch length of one width).
func (p Params) newickLen() int {
	n := p.Taxa
	labels := 0
	for i := range n {
		labels += len(Name(i))
	}
	bl := p.blLen()
	return labels + n*(1+bl) + (n-3)*(3+bl) + (n - 1) + 3
}

// TWidth is the fixed size of a .t line: the longest one, at the last
// generation, padded.
func (p Params) TWidth() int64 {
	return int64(len(p.treePrefix(nil, p.Gens)) + p.newickLen() + 1)
}

// lnlMin bounds LnL from below (see Params.LnL).
func (p Params) lnlMin() float64 { return -1000 - 500*float64(p.Taxa) }

// PWidth is the fixed size of a .p line: the line of the widest values.
// LnPr is taken negative (a sign more) so that MrBayes' own lines, whose
// prior can be either, fit too.
func (p Params) PWidth() int64 {
	return int64(len(p.pLine(nil, p.Gens, p.lnlMin(), -10*float64(p.Taxa), 2*float64(p.Taxa), [4]float64{1, 1, 1, 1})) + 1)
}

// Desc is the parallel file's description for mfg: per run the .t
// section, then the .p section (appendix A.5), no file header.
func (p Params) Desc() mfg.Desc {
	return mfg.Desc{
		Sections: []mfg.Section{
			{Name: "t", Header: int64(len(p.THeader())), Record: p.TWidth(), Trailer: int64(len(p.TTrailer()))},
			{Name: "p", Header: int64(len(p.PHeader())), Record: p.PWidth()},
		},
		Runs: p.Runs, Gens: p.Gens, SampleFreq: p.SampleFreq, Gen0: p.Format == MB327,
	}
}

// rng is a splitmix64 stream.
type rng struct{ s uint64 }

func (r *rng) next() uint64   { r.s += 0x9e3779b97f4a7c15; return splitmix64(r.s) }
func (r *rng) unit() float64  { return unit(r.next()) }
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// appendLine appends run r's section s line at generation gen, written by
// its cold chain c, padded with spaces to the section's width.
func (p Params) appendLine(b []byte, s, r, c int, gen int64) []byte {
	start := len(b)
	width := p.PWidth()
	if s == SectionT {
		width = p.TWidth()
		b = p.treeLine(b, r, c, gen)
	} else {
		g := rng{hash(p.Seed, tagParam, uint64(r), uint64(c), uint64(gen))}
		var pi [4]float64
		sum := 0.0
		for i := range pi {
			pi[i] = 0.05 + g.unit()
			sum += pi[i]
		}
		for i := range pi {
			pi[i] /= sum
		}
		tl := p.treeLength(r, c, gen)
		lnpr := float64(p.Taxa) * (1 + 9*g.unit())
		b = p.pLine(b, gen, p.LnL(r, c, gen), lnpr, tl, pi)
	}
	// The widths are the longest lines by construction; a longer one is a
	// bug here, and would break the map, so it must not pass unnoticed.
	if int64(len(b)-start) >= width {
		panic(fmt.Sprintf("mcmc: line of %d bytes for width %d (section %d, %d taxa, gen %d)", len(b)-start, width, s, p.Taxa, gen))
	}
	for int64(len(b)-start) < width-1 {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// pLine is a .p line without its newline.
func (p Params) pLine(b []byte, gen int64, lnl, lnpr, tl float64, pi [4]float64) []byte {
	b = strconv.AppendInt(b, gen, 10)
	if p.Format == MB327 {
		for _, v := range []float64{lnl, lnpr, tl, pi[0], pi[1], pi[2], pi[3]} {
			b = append(b, '\t')
			b = strconv.AppendFloat(b, v, 'e', 6, 64)
		}
		return b
	}
	b = append(b, '\t')
	b = strconv.AppendFloat(b, lnl, 'f', 3, 64)
	b = append(b, '\t')
	b = strconv.AppendFloat(b, tl, 'f', 3, 64)
	for _, v := range pi {
		b = append(b, '\t')
		b = strconv.AppendFloat(b, v, 'f', 6, 64)
	}
	return append(b, '\t')
}

// branch lengths are in [1e-3, 0.999): one printed width in both formats.
func branch(g *rng) float64 { return 0.001 + 0.998*g.unit() }

// treeLength is the sum of the tree's branch lengths: the .p line's TL.
func (p Params) treeLength(r, c int, gen int64) float64 {
	g := rng{hash(p.Seed, tagTree, uint64(r), uint64(c), uint64(gen))}
	sum := 0.0
	for range 2*p.Taxa - 3 {
		sum += branch(&g)
	}
	return sum
}

// treeLine is a .t line without its newline: a random unrooted tree on
// the taxa, written as MrBayes does with a basal trichotomy whose last
// member is taxon 1.
func (p Params) treeLine(b []byte, r, c int, gen int64) []byte {
	b = p.treePrefix(b, gen)
	n := p.Taxa
	g := rng{hash(p.Seed, tagTree, uint64(r), uint64(c), uint64(gen))}
	bl := make([]float64, 2*n-3) // the branch lengths in treeLength's order
	for i := range bl {
		bl[i] = branch(&g)
	}
	// Nodes 0..n-2 are taxa 2..n, nodes n-1.. the inner ones; join two
	// random subtrees until two are left, then close with taxon 1.
	kids := make([][2]int, n-3)
	pool := make([]int, n-1)
	for i := range pool {
		pool[i] = i
	}
	for k := range kids {
		take := func() int {
			i := g.intn(len(pool))
			v := pool[i]
			pool[i] = pool[len(pool)-1]
			pool = pool[:len(pool)-1]
			return v
		}
		a := take()
		kids[k] = [2]int{a, take()}
		pool = append(pool, n-1+k)
	}
	var write func(v int)
	write = func(v int) {
		if v < n-1 {
			b = append(b, Name(v+1)...)
		} else {
			k := kids[v-(n-1)]
			b = append(b, '(')
			write(k[0])
			b = append(b, ',')
			write(k[1])
			b = append(b, ')')
		}
		b = append(b, ':')
		b = p.appendBL(b, bl[v])
	}
	b = append(b, '(')
	write(pool[0])
	b = append(b, ',')
	write(pool[1])
	b = append(b, ',')
	b = append(b, Name(0)...)
	b = append(b, ':')
	b = p.appendBL(b, bl[2*n-4])
	return append(b, ");"...)
}

func (p Params) appendBL(b []byte, v float64) []byte {
	if p.Format == MB327 {
		return strconv.AppendFloat(b, v, 'e', 6, 64)
	}
	return strconv.AppendFloat(b, v, 'f', 6, 64)
}
