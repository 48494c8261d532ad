package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/pario/pario/template/annot"
	"github.com/pario/pario/template/dock"
	"github.com/pario/pario/template/seg"
)

type config struct {
	Molecules int
	MeanBytes int64
	Unit      time.Duration // wall time per seed second of computation
	Unit10    time.Duration // the same for figure 10 (its per-chain coordination needs a longer one)
	Trials    int
	Out, Dir  string
}

func (c config) quick() config {
	c.Molecules, c.MeanBytes, c.Unit, c.Unit10, c.Trials = 12, 20_000, 50*time.Microsecond, 50*time.Microsecond, 1
	return c
}

// The seed's figures (seconds).
var (
	seedGrans = []float64{10, 37, 147}
	seedProcs = []int{2, 5, 10, 15}
	seedSeq   = []float64{479, 1853, 7339}
	seedFig7  = map[int][]float64{2: {512, 1361, 4875}, 5: {251, 535, 1824}, 10: {187, 324, 1062}, 15: {148, 255, 679}}
	seedSplit = []struct {
		cm, cede int
		secs     float64
	}{{10, 0, 1062}, {2, 8, 1023}, {3, 7, 1158}, {4, 6, 1344}}
)

const (
	newspaperAnn = `fin  NEWSPAPER ro wo b ComputeMolecule=BSize
fin  NEWSPAPER ro wo b ComputeCEDE=CEDESize
fout NEWSPAPER rc wc b ComputeMolecule=0
fout NEWSPAPER rc wc b ComputeCEDE=0
`
	logBlockAnn = `fin  NEWSPAPER ro wo b ComputeMolecule=BSize
fout LOG rc wc b ComputeMolecule=0
`
	simpleAnn = `fin  NEWSPAPER ro wo b ComputeMolecule=BLen
fout NEWSPAPER rc wc b ComputeMolecule=0
`
)

func mustParse(name, src string) *annot.File {
	f, err := annot.Parse(name, []byte(src))
	if err != nil {
		panic(err) // the annotations above are constants
	}
	return f
}

type exp struct {
	cfg      config
	in, inB  string // plain and length-prefixed inputs
	out      string
	mean     float64
	w        io.Writer
	csvFiles map[string][][]string
}

func (e *exp) cost(seedSecs float64) cost {
	return cost{Granularity: time.Duration(seedSecs * float64(e.cfg.Unit)), MeanBytes: e.mean}
}

// median runs f Trials times and returns the median time.
func (e *exp) median(f func() (time.Duration, error)) (time.Duration, error) {
	var ts []time.Duration
	for range max(1, e.cfg.Trials) {
		t, err := f()
		if err != nil {
			return 0, err
		}
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}

func run(ctx context.Context, cfg config, w io.Writer) error {
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "dockexp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	e := &exp{cfg: cfg, w: w, in: filepath.Join(dir, "molecules"), inB: filepath.Join(dir, "molecules.len"), out: filepath.Join(dir, "results"), csvFiles: map[string][][]string{}}
	gcfg := dock.Config{Molecules: cfg.Molecules, MeanBytes: cfg.MeanBytes, Seed: 4}
	sizes, err := generate(e.in, gcfg)
	if err != nil {
		return err
	}
	gcfg.LenPrefix = true
	if _, err := generate(e.inB, gcfg); err != nil {
		return err
	}
	var total int64
	for _, s := range sizes {
		total += s
	}
	e.mean = float64(total) / float64(len(sizes))
	fmt.Fprintf(w, "input: %d molecules, %.1f MB (mean %.0f KB); one seed second = %v of modelled compute\n\n", len(sizes), float64(total)/1e6, e.mean/1e3, cfg.Unit)
	for _, step := range []func(context.Context) error{e.fig7, e.fig10, e.logOutput, e.simpler} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	for name, rows := range e.csvFiles {
		if err := writeCSV(filepath.Join(cfg.Out, name), rows); err != nil {
			return err
		}
	}
	return nil
}

func generate(path string, cfg dock.Config) ([]int64, error) {
	var b bytes.Buffer
	sizes, err := dock.Generate(&b, cfg)
	if err != nil {
		return nil, err
	}
	return sizes, os.WriteFile(path, b.Bytes(), 0o644)
}

func writeCSV(path string, rows [][]string) error {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
func f1(v float64) string         { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string         { return strconv.FormatFloat(v, 'f', 2, 64) }

// fig7: sequential and 2, 5, 10, 15 ComputeMolecule processes at three
// granularities.
func (e *exp) fig7(ctx context.Context) error {
	ann := mustParse("newspaper.ann", newspaperAnn)
	rows := [][]string{{"granularity_seed_s", "granularity_ours_s", "processes", "seed_s", "ours_s", "seed_speedup", "ours_speedup"}}
	ours := map[int][]time.Duration{}
	var seq []time.Duration
	for gi, g := range seedGrans {
		c := e.cost(g)
		t, err := e.median(func() (time.Duration, error) { return sequential(e.in, e.out, c, false) })
		if err != nil {
			return fmt.Errorf("sequential at %v: %w", g, err)
		}
		seq = append(seq, t)
		rows = append(rows, []string{f1(g), secs(c.Granularity), "1", f1(seedSeq[gi]), secs(t), "1.00", "1.00"})
		for _, p := range seedProcs {
			t, err := e.median(func() (time.Duration, error) {
				return parallel(ctx, ann, e.in, e.out, p, 0, c, e.cfg.Molecules)
			})
			if err != nil {
				return fmt.Errorf("%d processes at %v: %w", p, g, err)
			}
			ours[p] = append(ours[p], t)
			rows = append(rows, []string{f1(g), secs(c.Granularity), strconv.Itoa(p), f1(seedFig7[p][gi]), secs(t), f2(seedSeq[gi] / seedFig7[p][gi]), f2(seq[gi].Seconds() / t.Seconds())})
		}
	}
	e.csvFiles["dock-fig7.csv"] = rows
	fmt.Fprintf(e.w, "Figure 7: execution time, seed (s) / ours (s), speedup over the sequential program in brackets\n\n")
	fmt.Fprintf(e.w, "| processes | %v s / %v | %v s / %v | %v s / %v |\n|---|---|---|---|\n", seedGrans[0], e.cost(seedGrans[0]).Granularity, seedGrans[1], e.cost(seedGrans[1]).Granularity, seedGrans[2], e.cost(seedGrans[2]).Granularity)
	fmt.Fprintf(e.w, "| sequential | %v / %s | %v / %s | %v / %s |\n", seedSeq[0], secs(seq[0]), seedSeq[1], secs(seq[1]), seedSeq[2], secs(seq[2]))
	for _, p := range seedProcs {
		fmt.Fprintf(e.w, "| %d |", p)
		for gi := range seedGrans {
			fmt.Fprintf(e.w, " %v (%.1fx) / %s (%.1fx) |", seedFig7[p][gi], seedSeq[gi]/seedFig7[p][gi], secs(ours[p][gi]), seq[gi].Seconds()/ours[p][gi].Seconds())
		}
		fmt.Fprintln(e.w)
	}
	fmt.Fprintln(e.w)
	return plotFig7(filepath.Join(e.cfg.Out, "dock-fig7.svg"), seq, ours)
}

// fig10: the composed newspaper at the largest granularity, 10 processes
// split between ComputeMolecule and ComputeCEDE.
func (e *exp) fig10(ctx context.Context) error {
	ann := mustParse("newspaper.ann", newspaperAnn)
	c := e.cost(seedGrans[2])
	if e.cfg.Unit10 > 0 {
		c.Granularity = time.Duration(seedGrans[2] * float64(e.cfg.Unit10))
	}
	rows := [][]string{{"compute_molecule", "compute_cede", "seed_s", "ours_s", "seed_relative", "ours_relative"}}
	var ours []time.Duration
	fmt.Fprintf(e.w, "Figure 10: composed newspapers, %v s granularity (ours %v), 10 processes\n\n| ComputeMolecule / ComputeCEDE | seed (s) | ours (s) | seed, relative to 10/0 | ours, relative to 10/0 |\n|---|---|---|---|---|\n", seedGrans[2], c.Granularity)
	for _, s := range seedSplit {
		t, err := e.median(func() (time.Duration, error) {
			return parallel(ctx, ann, e.in, e.out, s.cm, s.cede, c, e.cfg.Molecules)
		})
		if err != nil {
			return fmt.Errorf("split %d/%d: %w", s.cm, s.cede, err)
		}
		ours = append(ours, t)
		rs, ro := s.secs/seedSplit[0].secs, t.Seconds()/ours[0].Seconds()
		rows = append(rows, []string{strconv.Itoa(s.cm), strconv.Itoa(s.cede), f1(s.secs), secs(t), f2(rs), f2(ro)})
		fmt.Fprintf(e.w, "| %d/%d | %v | %s | %.2f | %.2f |\n", s.cm, s.cede, s.secs, secs(t), rs, ro)
	}
	fmt.Fprintln(e.w)
	e.csvFiles["dock-fig10.csv"] = rows
	return plotFig10(filepath.Join(e.cfg.Out, "dock-fig10.svg"), ours)
}

// logOutput: fout a log rather than a newspaper, against the sequential
// program, at the seed's typical granularity (37 s) and 10 processes.
func (e *exp) logOutput(ctx context.Context) error {
	c := e.cost(seedGrans[1])
	const p = 10
	// An atomic log (a) is no alternative: each write is a transaction of
	// its own, so molecules' chains interleave and the output's records
	// are broken (Stats fails); block (b) keeps a molecule's writes whole.
	var seq, np, lb time.Duration
	var err error
	if seq, err = e.median(func() (time.Duration, error) { return sequential(e.in, e.out, c, false) }); err != nil {
		return err
	}
	for _, r := range []struct {
		d   *time.Duration
		ann string
	}{{&np, newspaperAnn}, {&lb, logBlockAnn}} {
		ann := mustParse("log.ann", r.ann)
		if *r.d, err = e.median(func() (time.Duration, error) { return parallel(ctx, ann, e.in, e.out, p, 0, c, e.cfg.Molecules) }); err != nil {
			return fmt.Errorf("%s: %w", r.ann, err)
		}
	}
	rows := [][]string{{"program", "seed_relative_to_sequential", "ours_s", "ours_relative_to_sequential"},
		{"sequential", "1.00", secs(seq), "1.00"},
		{"fout NEWSPAPER rc wc b, 10 processes", f2(seedFig7[p][1] / seedSeq[1]), secs(np), f2(np.Seconds() / seq.Seconds())},
		{"fout LOG rc wc b, 10 processes", "1.25", secs(lb), f2(lb.Seconds() / seq.Seconds())},
	}
	e.csvFiles["dock-log.csv"] = rows
	fmt.Fprintf(e.w, "Log template for the output, %v s granularity (ours %v)\n\n| program | seed, relative to sequential | ours (s) | ours, relative to sequential |\n|---|---|---|---|\n", seedGrans[1], c.Granularity)
	for _, r := range rows[1:] {
		fmt.Fprintf(e.w, "| %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3])
	}
	fmt.Fprintln(e.w)
	return nil
}

// simpler: BSize against the one-read BLen over the length-prefixed
// input, whole runs (interleaved, so that drift in the machine's load
// falls on both) and the segmentation alone.
func (e *exp) simpler(ctx context.Context) error {
	c := e.cost(seedGrans[1])
	const p = 10
	full, simple := mustParse("newspaper.ann", newspaperAnn), mustParse("simple.ann", simpleAnn)
	var tb, tl []time.Duration
	for range max(3, 2*e.cfg.Trials) {
		b, err := parallel(ctx, full, e.in, e.out, p, 0, c, e.cfg.Molecules)
		if err != nil {
			return err
		}
		l, err := parallel(ctx, simple, e.inB, e.out, p, 0, c, e.cfg.Molecules)
		if err != nil {
			return err
		}
		tb, tl = append(tb, b), append(tl, l)
	}
	slices.Sort(tb)
	slices.Sort(tl)
	mb, ml := tb[len(tb)/2], tl[len(tl)/2]
	sb, err := cutTime(dock.BSize, e.in)
	if err != nil {
		return err
	}
	sl, err := cutTime(dock.BLen, e.inB)
	if err != nil {
		return err
	}
	change := 100 * (ml.Seconds() - mb.Seconds()) / mb.Seconds()
	rows := [][]string{{"measure", "bsize_s", "blen_s", "change_percent", "seed_change_percent"},
		{"run, 10 processes", secs(mb), secs(ml), f1(change), "-1"},
		{"cutting the whole input", strconv.FormatFloat(sb.Seconds(), 'f', 5, 64), strconv.FormatFloat(sl.Seconds(), 'f', 5, 64), f1(100 * (sl.Seconds() - sb.Seconds()) / mb.Seconds()), ""},
	}
	e.csvFiles["dock-simpler.csv"] = rows
	fmt.Fprintf(e.w, "Simpler segmentation function, %v s granularity (ours %v), 10 processes, median of %d interleaved runs\n\n| measure | BSize | BLen | change (of the BSize run) | seed |\n|---|---|---|---|---|\n", seedGrans[1], c.Granularity, len(tb))
	fmt.Fprintf(e.w, "| run | %s s | %s s | %+.1f%% | about -1%% |\n", secs(mb), secs(ml), change)
	fmt.Fprintf(e.w, "| cutting the whole input (parent only) | %.1f ms | %.1f ms | %+.2f%% | |\n\n", 1e3*sb.Seconds(), 1e3*sl.Seconds(), 100*(sl.Seconds()-sb.Seconds())/mb.Seconds())
	return nil
}

// cutTime is how long the parent takes to cut the whole file with fn.
func cutTime(fn seg.Func, path string) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := seg.All(fn, f, 0, st.Size()); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
