package mcmc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pario/pario/mfg"
	"github.com/pario/pario/rank"
)

func taxa16(runs, chains, procs int) Params {
	// No swap before the first sample: its assignment is the initial one.
	return Params{Runs: runs, Chains: chains, Procs: procs, Taxa: 16, Gens: 1, SampleFreq: 1, SwapFreq: 10, Seed: 1, Format: MB31}
}

func TestHeats(t *testing.T) {
	for j, want := range []float64{1, 1 / 1.5, 0.5, 0.4} {
		if got := Heat(j); got != want {
			t.Errorf("Heat(%d) = %v, want %v", j, got, want)
		}
	}
}

// Table A.4: about 24 B per taxon per run and generation; 401 B at 16
// taxa, and 701 B per run with the headers (A.5.3.4).
func TestLineSizes(t *testing.T) {
	p := taxa16(1, 1, 1)
	if got := p.TWidth() + p.PWidth(); got != 401 {
		t.Errorf("16 taxa: %d B of lines per run and generation, want 401 (table A.4)", got)
	}
	if got := len(p.THeader()) + len(p.PHeader()); got != 300 {
		t.Errorf("16 taxa: %d B of headers per run, want 300 (701 - 401, A.5.3.4)", got)
	}
	for _, tc := range []struct {
		taxa int
		want int64
	}{{64, 1506}, {1024, 24538}} {
		p.Taxa = tc.taxa
		got := p.TWidth() + p.PWidth()
		if d := got - tc.want; d < -tc.want/1000 || d > tc.want/1000 {
			t.Errorf("%d taxa: %d B, want %d within 0.1%% (table A.4)", tc.taxa, got, tc.want)
		}
	}
}

// The thesis' worked cases, through the workload: one generation of 16
// taxa written with MFG.
func TestThesisCases(t *testing.T) {
	for _, tc := range []struct {
		c       [3]int
		pattern string
		buffers []int64 // bytes of lines each rank writes
	}{
		{[3]int{9, 3, 8}, "Complete+1", []int64{802, 401, 401, 401, 401, 401, 401, 401}},
		{[3]int{8, 3, 8}, "pi_1", []int64{401, 401, 401, 401, 401, 401, 401, 401}},
		{[3]int{7, 3, 8}, "Partial-1", []int64{401, 401, 401, 401, 401, 401, 401, 0}},
		{[3]int{3, 5, 4}, "Partial-1", []int64{401, 401, 401, 0}},
	} {
		p := taxa16(tc.c[0], tc.c[1], tc.c[2])
		t.Run(p.Config().String(), func(t *testing.T) {
			pat, err := p.Config().Classify(p.Config().Initial())
			if err != nil {
				t.Fatal(err)
			}
			if pat.String() != tc.pattern {
				t.Errorf("pattern %s, want %s", pat, tc.pattern)
			}
			f, _ := runMFG(t, p, 1)
			for k, want := range tc.buffers {
				// Every run written has its 300 B of headers with its
				// first generation.
				if got := f.byRank[k] - 300*(want/401); got != want {
					t.Errorf("rank %d wrote %d B of lines, want %d", k, got, want)
				}
			}
		})
	}
	// Eq. 5.1: 3 runs x 5 chains on 4 processes, 8 patterns.
	if got := taxa16(3, 5, 4).Config().Patterns().Int64(); got != 8 {
		t.Errorf("3/5/4: %d patterns, want 8", got)
	}
	// Varstrip at 8/4/8: 8 strips of 701 B (A.5.3.4).
	p := taxa16(8, 4, 8)
	m, err := mfg.New(p.Desc())
	if err != nil {
		t.Fatal(err)
	}
	strips, _, err := mfg.Strips(m, p.Config(), mfg.RoundRobin(8, 8))
	if err != nil {
		t.Fatal(err)
	}
	if want := "0:701;1:701;2:701;3:701;4:701;5:701;6:701;7:701"; strips != want {
		t.Errorf("varstrip strips %s, want %s", strips, want)
	}
}

// The thesis' criterion, property-tested: the MFG parallel file is the
// serial files end to end, every byte written once, and Split gives the
// serial files back.
func TestMFGEqualsSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 0))
	n := 25
	if testing.Short() {
		n = 6
	}
	for i := range n {
		runs, chains := 1+rng.IntN(6), 1+rng.IntN(4)
		p := Params{
			Runs: runs, Chains: chains, Procs: 1 + rng.IntN(min(runs*chains, 6)),
			Taxa: 4 + rng.IntN(20), Gens: 1 + rng.Int64N(30), SampleFreq: 1 + rng.Int64N(4),
			SwapFreq: 1 + rng.Int64N(3), Seed: rng.Uint64(), Format: Format(1 + rng.IntN(2)),
		}
		if p.Format == MB31 && p.Gens < p.SampleFreq {
			p.Gens = p.SampleFreq
		}
		lambda := 1 + rng.Int64N(5)
		t.Run(fmt.Sprintf("%d:%v/%d taxa/%d gens/%s/lambda %d", i, p.Config(), p.Taxa, p.Gens, p.Format, lambda), func(t *testing.T) {
			serial := runSerial(t, p)
			f, _ := runMFG(t, p, lambda)
			want := concat(serial, p.Runs)
			if !bytes.Equal(f.data, want) {
				t.Fatalf("parallel file (%d B) differs from the serial files end to end (%d B)", len(f.data), len(want))
			}
			for off, n := range f.times {
				if n != 1 {
					t.Fatalf("byte %d written %d times", off, n)
				}
			}
			out := newMemFS()
			if err := Split(context.Background(), p, bytes.NewReader(f.data), int64(len(f.data)), "out", out.create); err != nil {
				t.Fatal(err)
			}
			if len(out.files) != 2*p.Runs {
				t.Fatalf("split made %d files, want %d", len(out.files), 2*p.Runs)
			}
			for name, b := range serial.files {
				if !bytes.Equal(out.files[name].Bytes(), b.Bytes()) {
					t.Errorf("split's %s differs from the serial run's", name)
				}
			}
		})
	}
}

// The cold chain moves semi-randomly: reproducibly from the seed, within
// the ranks of its run, and at all.
func TestSwaps(t *testing.T) {
	p := Params{Runs: 3, Chains: 5, Procs: 4, Taxa: 8, Gens: 200, SampleFreq: 1, SwapFreq: 1, Seed: 7, Format: MB31}
	holders := func(p Params) [][]int {
		var out [][]int
		for r := range p.Runs {
			u := p.NewRun(r)
			var h []int
			for u.Gen() < p.Gens {
				u.Step()
				h = append(h, u.Holder())
			}
			out = append(out, h)
		}
		return out
	}
	a, b := holders(p), holders(p)
	p2 := p
	p2.Seed++
	c := holders(p2)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the same seed gave different swaps")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("another seed gave the same swaps")
	}
	for r, h := range a {
		ranks := p.Config().RanksOfRun(r)
		moves := 0
		for g, k := range h {
			if k < ranks[0] || k > ranks[len(ranks)-1] {
				t.Fatalf("run %d at generation %d on rank %d, its chains are on %v", r, g+1, k, ranks)
			}
			if g > 0 && k != h[g-1] {
				moves++
			}
		}
		if moves == 0 {
			t.Errorf("run %d: the cold chain never changed process in %d generations", r, p.Gens)
		}
	}
	// The Metropolis rule: swaps between a cold and a heated chain are
	// accepted sometimes, not always.
	u := p.NewRun(0)
	changes := 0
	for range 1000 {
		c := u.Cold()
		u.Step()
		if u.Cold() != c {
			changes++
		}
	}
	if changes == 0 || changes > 600 {
		t.Errorf("the cold heat changed chains %d times in 1000 generations", changes)
	}
}

func TestFormat327(t *testing.T) {
	p := Params{Runs: 2, Chains: 2, Procs: 2, Taxa: 12, Gens: 20, SampleFreq: 10, SwapFreq: 1, Seed: 3, Format: MB327}
	fs := runSerial(t, p)
	tf := fs.files["out.run1.t"].String()
	pf := fs.files["out.run1.p"].String()
	lines := strings.Split(strings.TrimSuffix(tf, "\n"), "\n")
	if lines[0] != "#NEXUS" || !strings.HasPrefix(lines[1], "[ID: ") || lines[2] != "[Param: tree]" || lines[3] != "begin trees;" ||
		lines[4] != "   translate" || lines[5] != "       1 1," || lines[16] != "      12 12;" || lines[len(lines)-1] != "end;" {
		t.Errorf("t file header or trailer unlike mb 3.2.7's:\n%s", tf)
	}
	for i, gen := range []int{0, 10, 20} {
		l := lines[17+i]
		if !strings.HasPrefix(l, fmt.Sprintf("   tree gen.%d = [&U] (", gen)) || !strings.HasSuffix(strings.TrimRight(l, " "), ");") {
			t.Errorf("tree line %d: %q", i, l)
		}
		if int64(len(l)+1) != p.TWidth() {
			t.Errorf("tree line %d is %d B, want %d", i, len(l)+1, p.TWidth())
		}
	}
	pl := strings.Split(pf, "\n")
	if pl[1] != "Gen\tLnL\tLnPr\tTL\tpi(A)\tpi(C)\tpi(G)\tpi(T)" {
		t.Errorf("p header %q", pl[1])
	}
	for i, gen := range []string{"0", "10", "20"} {
		f := strings.Split(strings.TrimRight(pl[2+i], " "), "\t")
		if f[0] != gen || len(f) != 8 {
			t.Errorf("p line %d: %q", i, pl[2+i])
		}
	}
}

// MrBayes writes its ID as ten digits, leading zeros kept (mb 3.2.7 wrote
// "[ID: 0689844749]" in a CI run): the headers do the same, so a file mb
// wrote with such an ID still matches pario's header byte for byte.
func TestIDKeepsLeadingZeros(t *testing.T) {
	for _, f := range []Format{MB31, MB327} {
		p := Params{Taxa: 4, FileID: 689844749, Format: f}
		if h := p.THeader(); !strings.HasPrefix(h, "#NEXUS\n[ID: 0689844749]\n") {
			t.Errorf("format %v: t header starts %q", f, h[:min(len(h), 30)])
		}
		if h := p.PHeader(); !strings.HasPrefix(h, "[ID: 0689844749]\n") {
			t.Errorf("format %v: p header starts %q", f, h[:min(len(h), 30)])
		}
	}
}

// Bad parameters are refused on every rank, and nothing is written.
func TestBadInput(t *testing.T) {
	ok := taxa16(4, 2, 4)
	for _, tc := range []struct {
		name string
		edit func(*Params)
		want string
	}{
		{"no runs", func(p *Params) { p.Runs = 0 }, "runs must be at least 1"},
		{"np too large", func(p *Params) { p.Procs = 9 }, "every process needs a chain"},
		{"few taxa", func(p *Params) { p.Taxa = 3 }, "taxa"},
		{"no format", func(p *Params) { p.Format = 0 }, "format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tc.want)
			}
			n := max(1, min(p.Procs, 8))
			f, fs := newMemFile(), newMemFS()
			for _, mode := range []IO{IOMFG, IOSerial} {
				err := rank.RunLocal(context.Background(), n, func(ctx context.Context, c *rank.Comm) error {
					_, err := Run(ctx, c, p, Output{Mode: mode, Lambda: 1, File: rankWriter{f, c.Rank()}, Create: fs.create, Base: "out"})
					return err
				})
				if !errors.Is(err, ErrInvalid) && !errors.Is(err, mfg.ErrInvalid) {
					t.Errorf("%v: Run = %v, want an invalid-input error", mode, err)
				}
			}
			if len(f.data) != 0 || len(fs.files) != 0 {
				t.Errorf("bad input wrote %d B and %d files", len(f.data), len(fs.files))
			}
		})
	}
}

// The serial baseline keeps 2 x nruns files open at rank 0, as MrBayes:
// with 512 runs it needs 1024 descriptors and fails under a limit of
// 1024 (with stdin, stdout and stderr taken), while MFG writes one file.
func TestOpenFileLimit(t *testing.T) {
	p := Params{Runs: 512, Chains: 1, Procs: 4, Taxa: 4, Gens: 2, SampleFreq: 1, SwapFreq: 1, Seed: 1, Format: MB31}
	fs := newMemFS()
	fs.limit = 1024 - 3
	err := rank.RunLocal(context.Background(), p.Procs, func(ctx context.Context, c *rank.Comm) error {
		_, err := Run(ctx, c, p, Output{Mode: IOSerial, Create: fs.create, Base: "out"})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Fatalf("serial with 512 runs under 1021 free descriptors: %v, want too many open files", err)
	}
	f, _ := runMFG(t, p, 1)
	if int64(len(f.data)) != mustMap(t, p).Size() {
		t.Errorf("MFG wrote %d B, want %d", len(f.data), mustMap(t, p).Size())
	}
}

func mustMap(t testing.TB, p Params) *mfg.Map {
	m, err := mfg.New(p.Desc())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Split refuses a file it cannot account for byte by byte, and creates
// nothing.
func TestSplitRefuses(t *testing.T) {
	p := Params{Runs: 3, Chains: 2, Procs: 2, Taxa: 6, Gens: 4, SampleFreq: 1, SwapFreq: 1, Seed: 5, Format: MB327}
	f, _ := runMFG(t, p, 2)
	good := f.data
	m := mustMap(t, p)
	rec, _ := m.Record(1, SectionP, 2)
	trec, _ := m.Record(2, SectionT, 0)
	tlast, _ := m.Record(0, SectionT, m.Samples()-1)
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"short", func(b []byte) []byte { return b[:len(b)-1] }, "the file has"},
		{"long", func(b []byte) []byte { return append(b, ' ') }, "the file has"},
		{"not nexus", func(b []byte) []byte { b[0] = 'x'; return b }, "does not start"},
		{"header", func(b []byte) []byte { b[m.RunOffset(1)+20] ^= 1; return b }, "header"},
		{"trailer", func(b []byte) []byte { b[tlast.End()+1] = 'x'; return b }, "trailer"},
		{"newline", func(b []byte) []byte { b[rec.End()-1] = ' '; return b }, "newline"},
		{"hole", func(b []byte) []byte { b[rec.Off+3] = 0; return b }, "NUL"},
		{"wrong generation", func(b []byte) []byte { b[rec.Off] = '9'; return b }, "does not start with"},
		{"tree", func(b []byte) []byte { copy(b[trec.Off+3:], "TREE"); return b }, "does not start with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(bytes.Clone(good))
			fs := newMemFS()
			err := Split(context.Background(), p, bytes.NewReader(b), int64(len(b)), "out", fs.create)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Split = %v, want an invalid-input error naming %q", err, tc.want)
			}
			if len(fs.files) != 0 {
				t.Errorf("split created %d files from a bad file", len(fs.files))
			}
		})
	}
}

func TestMatrix(t *testing.T) {
	var a, b bytes.Buffer
	p := taxa16(2, 2, 2)
	if err := Matrix(context.Background(), &a, 16, 50, 9, &p); err != nil {
		t.Fatal(err)
	}
	if err := Matrix(context.Background(), &b, 16, 50, 9, &p); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Error("the same seed gave different matrices")
	}
	s := a.String()
	if !strings.Contains(s, "dimensions ntax=16 nchar=50;") || !strings.Contains(s, "mcmc nruns=2 nchains=2 ngen=1") {
		t.Errorf("matrix header:\n%s", s[:min(len(s), 400)])
	}
	_, body, _ := strings.Cut(s, "matrix\n")
	body, _, _ = strings.Cut(body, ";\nend;")
	rows := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(rows) != 16 {
		t.Fatalf("%d rows, want 16", len(rows))
	}
	for i, row := range rows {
		name, seq, _ := strings.Cut(row, " ")
		if name != Name(i) || len(seq) != 50 || strings.Trim(seq, "acgt") != "" {
			t.Errorf("row %d: %q", i, row)
		}
	}
	if err := Matrix(context.Background(), io.Discard, 3, 10, 1, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("3 taxa: %v", err)
	}
}

func TestLambda(t *testing.T) {
	p := Params{Runs: 8, Chains: 4, Procs: 8, Taxa: 16, Gens: 100, SampleFreq: 1, SwapFreq: 1, Seed: 1, Format: MB31}
	// One node of 1 GiB with 8 ranks of one run each.
	node := p.NodeOf("n0", 1<<30, 64<<20, 256<<20, []int{0, 1, 2, 3, 4, 5, 6, 7}, false)
	limit, err := mfg.LambdaLimit([]mfg.Node{node})
	if err != nil {
		t.Fatal(err)
	}
	if node.LocalRuns != 8 || node.LineMemory != 405 { // 401 B at 16 taxa, 2 more digits of generation in each line
		t.Fatalf("node %+v", node)
	}
	for _, tc := range []struct {
		req      int64
		auto     bool
		limit    int64
		swapping bool
		want     int64
		err      error
	}{
		{4, false, limit, false, 4, nil},
		{1000, false, limit, false, 100, nil}, // cut to the samples
		{5, false, 4, false, 0, mfg.ErrLambda},
		{2, false, limit, true, 0, mfg.ErrLambda},
		{0, false, limit, false, 0, ErrInvalid},
		{0, true, limit, false, 16, nil}, // 3.2 KB a generation: tiny lines, lambda 16
		{0, true, limit, true, 1, nil},   // a node swaps: 1
		{0, true, 3, false, 3, nil},      // within the limit
	} {
		got, err := p.Lambda(tc.req, tc.auto, 8, tc.limit, tc.swapping)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("Lambda(%d, auto %v, limit %d, swapping %v) = %d, %v; want %d, %v", tc.req, tc.auto, tc.limit, tc.swapping, got, err, tc.want, tc.err)
		}
	}
	// Big lines (delta_ioz > 4 on 1 server): auto gives 1.
	p.Taxa, p.Runs, p.Procs = 4096, 16, 8
	if got, err := p.Lambda(0, true, 1, Unlimited, false); err != nil || got != 1 {
		t.Errorf("auto lambda at %d taxa x %d runs on 1 server = %d, %v; want 1", p.Taxa, p.Runs, got, err)
	}
}
