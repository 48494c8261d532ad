package main

// The seed's section 5.2 experiments that need real BLAST (--paper):
// the split of processors between the search and the post-processing
// (its figure 6), the query size and the number of requested hits
// (figures 7a and 7b), and the time of each phase (figures 5 and 11).
//
// The seed ran them on 80 processors; this machine has 2 cores. So each
// phase is run for real, once, on one core (blastp -num_threads 1, the
// plugin with blast.workers=1), and its CPU seconds are measured
// (getrusage: the phase's own and its children's, so other engineers'
// load does not count); a run on N processors is then that CPU time
// spread over them: the search over the compute processors (mpiBLAST
// cuts the database into segments, one per worker; ideal speedup
// assumed), the regeneration over the post-processing processors (the
// plugin cuts the queries into chunks). The link is the cost model's
// (cost.Raw, cost.Time), which the bandwidth and latency sweeps check
// against measured transfers.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/units"
)

// paperConfig are the --paper flags.
type paperConfig struct {
	data    string    // mmseqs2-examples data directory
	out     string    // where the CSV and PNG files go
	queries []int     // query counts (figure 7a, 11)
	hits    []int     // -max_target_seqs values (figure 7b)
	base    int       // query count of figures 5, 6 and 7b
	compute []int     // compute processors (figure 6)
	post    int       // post-processing processors
	procs   int       // compute processors of figures 5, 7 and 11
	link    cost.Link // the link of figures 6, 7 and 11
	rtts    []float64 // the delays of figure 5, seconds
	runs    string    // a medic-paper-runs.csv to draw from instead of running BLAST
}

// measured is one real run of each phase, in CPU seconds on one core.
type measured struct {
	queries, hits int     // query count, -max_target_seqs (0: BLAST's default)
	qbytes        int64   // query file size
	D, x          int64   // output and metadata bytes
	search, f, g  float64 // CPU seconds: search, encode, regenerate
}

// phases is a modeled run: compute (search, and for ParaMEDIC the
// metadata), post-processing (regeneration) and I/O (the link).
type phases struct{ compute, post, io float64 }

func (p phases) total() float64 { return p.compute + p.post + p.io }

// mpiBLAST: every processor searches, the output crosses the link.
func (m measured) mpiBLAST(procs int, l cost.Link) phases {
	return phases{compute: m.search / float64(procs), io: cost.Raw(0, float64(m.D), l)}
}

// paraMEDIC: compute processors search and encode, the metadata crosses
// the link, the post-processing processors regenerate.
func (m measured) paraMEDIC(compute, post int, l cost.Link) phases {
	return phases{
		compute: (m.search + m.f) / float64(compute),
		post:    m.g / float64(post),
		io:      cost.Time(0, cost.Estimate{X: float64(m.x)}, l),
	}
}

// cpu returns this process's and its waited-for children's CPU seconds.
func cpu() float64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	s := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return s(self.Utime) + s(self.Stime) + s(kids.Utime) + s(kids.Stime)
}

// bench is the compute and storage sites' databases and the query set.
type bench struct {
	dir, db, replica string
	queries          []string
}

func setupBench(ctx context.Context, data, dir string) (*bench, error) {
	b := &bench{dir: dir, db: filepath.Join(dir, "compute", "db"), replica: filepath.Join(dir, "storage", "db")}
	dbFasta, err := gunzip(filepath.Join(data, "DB.fasta.gz"))
	if err != nil {
		return nil, err
	}
	fa := filepath.Join(dir, "db.fa")
	if err := os.WriteFile(fa, dbFasta, 0o600); err != nil {
		return nil, err
	}
	for _, db := range []string{b.db, b.replica} {
		if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
			return nil, err
		}
		if out, err := exec.CommandContext(ctx, "makeblastdb", "-in", fa, "-dbtype", "prot", "-parse_seqids", "-title", "uniprot-example", "-out", db).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("makeblastdb: %w: %s", err, out)
		}
	}
	q, err := gunzip(filepath.Join(data, "QUERY.fasta.gz"))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(q))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var cur strings.Builder
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), ">") && cur.Len() > 0 {
			b.queries = append(b.queries, cur.String())
			cur.Reset()
		}
		cur.WriteString(sc.Text() + "\n")
	}
	if cur.Len() > 0 {
		b.queries = append(b.queries, cur.String())
	}
	return b, sc.Err()
}

func gunzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (Debian package mmseqs2-examples, or --data)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out.Bytes(), nil
}

// run measures one configuration: the search (pairwise report, as
// mpiBLAST wrote), the encode and the regeneration, each on one core.
func (b *bench) run(ctx context.Context, queries, hits int) (measured, error) {
	m := measured{queries: queries, hits: hits}
	if queries > len(b.queries) {
		return m, fmt.Errorf("%d queries asked, the data set has %d", queries, len(b.queries))
	}
	name := fmt.Sprintf("q%d-h%d", queries, hits)
	qf := filepath.Join(b.dir, name+".fa")
	q := strings.Join(b.queries[:queries], "")
	m.qbytes = int64(len(q))
	if err := os.WriteFile(qf, []byte(q), 0o600); err != nil {
		return m, err
	}
	out := filepath.Join(b.dir, name+".out")
	args := []string{"-query", qf, "-db", b.db, "-outfmt", "0", "-num_threads", "1", "-out", out}
	params := map[string]string{"program": "blastp", "query": qf, "db": b.db, "outfmt": "0"}
	if hits > 0 {
		args = append(args, "-max_target_seqs", strconv.Itoa(hits))
		params["max_target_seqs"] = strconv.Itoa(hits)
	}
	c0 := cpu()
	if o, err := exec.CommandContext(ctx, "blastp", args...).CombinedOutput(); err != nil {
		return m, fmt.Errorf("blastp: %w: %s", err, o)
	}
	m.search = cpu() - c0
	orig, err := os.ReadFile(out)
	if err != nil {
		return m, err
	}
	m.D = int64(len(orig))
	plugin, err := medic.Lookup("blast")
	if err != nil {
		return m, err
	}
	var meta bytes.Buffer
	c0 = cpu()
	if err := plugin.Encode(ctx, medic.Source{Path: out, Params: params}, &meta); err != nil {
		return m, err
	}
	m.f, m.x = cpu()-c0, int64(meta.Len())
	tmp, err := os.MkdirTemp(b.dir, "decode-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(tmp)
	var regen bytes.Buffer
	c0 = cpu()
	env := medic.Env{Resources: map[string]string{"blast.db": b.replica, "blast.workers": "1"}, TempDir: tmp}
	if err := plugin.Decode(ctx, bytes.NewReader(meta.Bytes()), &regen, env); err != nil {
		return m, err
	}
	m.g = cpu() - c0
	if !bytes.Equal(regen.Bytes(), orig) {
		return m, fmt.Errorf("%s: the regenerated report differs from the original", name)
	}
	fmt.Printf("  %3d queries (%6.1f KB), max_target_seqs %3d: report %7.2f MB, metadata %6.1f KB; CPU s: search %6.2f, encode %5.2f, regenerate %5.2f\n",
		queries, float64(m.qbytes)/1e3, hits, float64(m.D)/1e6, float64(m.x)/1e3, m.search, m.f, m.g)
	return m, nil
}

// paperExperiments runs the measurements and writes the figures.
func paperExperiments(ctx context.Context, c paperConfig) error {
	for _, p := range []string{"blastp", "makeblastdb", "blastdbcmd"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s not on $PATH (Debian package ncbi-blast+)", p)
		}
	}
	dir, err := os.MkdirTemp("", "medicexp-paper-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	runs := map[[2]int]measured{}
	var b *bench
	if c.runs != "" {
		if runs, err = readRuns(c.runs); err != nil {
			return err
		}
	} else if b, err = setupBench(ctx, c.data, dir); err != nil {
		return err
	}
	fmt.Printf("databases: 20,000 proteins (compute site and replica); links: %s, RTT %.0f ms, window %d KiB; %d post-processing processors\n",
		units.FormatRate(c.link.B), c.link.RTT*1e3, int(c.link.Window)>>10, c.post)
	get := func(q, h int) (measured, error) {
		if m, ok := runs[[2]int{q, h}]; ok {
			return m, nil
		}
		if b == nil {
			return measured{}, fmt.Errorf("%s has no run of %d queries with max_target_seqs %d", c.runs, q, h)
		}
		m, err := b.run(ctx, q, h)
		runs[[2]int{q, h}] = m
		return m, err
	}
	base, err := get(c.base, 0)
	if err != nil {
		return err
	}

	// Figure 6: compute processors 16..80 against 4 post-processing
	// ones; mpiBLAST gets all of them for the search.
	// At the figure's delay and at a short link too: where the crossover
	// falls depends on the link, as the cost model says.
	var split []row
	for _, rtt := range []float64{0, c.link.RTT / 2, c.link.RTT} {
		l := c.link
		l.RTT = rtt
		for _, n := range c.compute {
			split = append(split, row{x: float64(n) / float64(c.post), label: fmt.Sprintf("%d:%d", n, c.post), rtt: rtt,
				mpi: base.mpiBLAST(n+c.post, l), para: base.paraMEDIC(n, c.post, l), m: base})
		}
	}
	// Figure 7a and 11: query size.
	var query []row
	for _, q := range c.queries {
		m, err := get(q, 0)
		if err != nil {
			return err
		}
		query = append(query, row{x: float64(m.qbytes) / 1e3, label: fmt.Sprintf("%d (%.0f KB)", q, float64(m.qbytes)/1e3), rtt: c.link.RTT,
			mpi: m.mpiBLAST(c.procs+c.post, c.link), para: m.paraMEDIC(c.procs, c.post, c.link), m: m})
	}
	// Figure 7b: requested hits.
	var hits []row
	for _, h := range c.hits {
		m, err := get(c.base, h)
		if err != nil {
			return err
		}
		hits = append(hits, row{x: float64(h), label: strconv.Itoa(h), rtt: c.link.RTT,
			mpi: m.mpiBLAST(c.procs+c.post, c.link), para: m.paraMEDIC(c.procs, c.post, c.link), m: m})
	}
	// Figure 5: the network delay.
	var delay []row
	for _, rtt := range c.rtts {
		l := c.link
		l.RTT = rtt
		delay = append(delay, row{x: rtt * 1e3, label: fmt.Sprintf("%.0f ms", rtt*1e3), rtt: rtt,
			mpi: base.mpiBLAST(c.procs+c.post, l), para: base.paraMEDIC(c.procs, c.post, l), m: base})
	}
	fmt.Printf("measured (or read) in %v\n", time.Since(t0).Round(time.Second))
	if c.runs == "" {
		if err := writeRuns(filepath.Join(c.out, "medic-paper-runs.csv"), runs); err != nil {
			return err
		}
	}

	link := fmt.Sprintf("%s, RTT %.0f ms, %d KiB window", units.FormatRate(c.link.B), c.link.RTT*1e3, int(c.link.Window)>>10)
	figs := []struct {
		name, title, xlabel string
		rows                []row
		bars                bool
	}{
		{"split", fmt.Sprintf("processors for the search : post-processing (%d queries; %s, %d KiB window)", c.base, units.FormatRate(c.link.B), int(c.link.Window)>>10), "compute : post-processing processors", split, false},
		{"query", fmt.Sprintf("query size (%d+%d processors; %s)", c.procs, c.post, link), "query file (KB)", query, false},
		{"hits", fmt.Sprintf("requested hits, -max_target_seqs (%d queries, %d+%d processors; %s)", c.base, c.procs, c.post, link), "max_target_seqs", hits, false},
		{"phases-delay", fmt.Sprintf("phases against the delay (%d queries, %d+%d processors; %s at RTT 0)", c.base, c.procs, c.post, units.FormatRate(c.link.B)), "round-trip time", delay, true},
		{"phases-query", fmt.Sprintf("phases against the query size (%d+%d processors; %s)", c.procs, c.post, link), "queries (query file)", query, true},
	}
	for _, f := range figs {
		if err := writeRows(filepath.Join(c.out, "medic-paper-"+f.name+".csv"), f.rows); err != nil {
			return err
		}
		render := renderLines
		if f.bars {
			render = renderPhases
		}
		path := filepath.Join(c.out, "medic-paper-"+f.name+".png")
		if err := render(path, f.title, f.xlabel, f.rows); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}

var runsHeader = []string{"queries", "max_target_seqs", "query_bytes", "report_bytes", "metadata_bytes", "search_cpu_s", "encode_cpu_s", "regenerate_cpu_s"}

// writeRuns saves the measurements, so that the figures can be drawn again
// without BLAST (--paper-runs).
func writeRuns(path string, runs map[[2]int]measured) error {
	keys := make([][2]int, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(runsHeader)
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, k := range keys {
		m := runs[k]
		_ = w.Write([]string{strconv.Itoa(m.queries), strconv.Itoa(m.hits), strconv.FormatInt(m.qbytes, 10), strconv.FormatInt(m.D, 10),
			strconv.FormatInt(m.x, 10), g(m.search), g(m.f), g(m.g)})
	}
	w.Flush()
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// readRuns reads what writeRuns wrote.
func readRuns(path string) (map[[2]int]measured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(runsHeader, ",") {
		return nil, fmt.Errorf("%s: want the header %s", path, strings.Join(runsHeader, ","))
	}
	runs := map[[2]int]measured{}
	for i, r := range recs[1:] {
		var m measured
		var v [8]float64
		for j := range v {
			if v[j], err = strconv.ParseFloat(r[j], 64); err != nil {
				return nil, fmt.Errorf("%s line %d, %s: %w", path, i+2, runsHeader[j], err)
			}
		}
		m.queries, m.hits, m.qbytes, m.D, m.x = int(v[0]), int(v[1]), int64(v[2]), int64(v[3]), int64(v[4])
		m.search, m.f, m.g = v[5], v[6], v[7]
		runs[[2]int{m.queries, m.hits}] = m
	}
	return runs, nil
}

// row is one point of a figure: both schemes' modeled phases.
type row struct {
	x         float64
	label     string
	rtt       float64 // the link's round trip, seconds
	mpi, para phases
	m         measured
}

func writeRows(path string, rows []row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	_ = w.Write([]string{"x", "label", "rtt_ms", "queries", "max_target_seqs", "query_bytes", "report_bytes", "metadata_bytes",
		"search_cpu_s", "encode_cpu_s", "regenerate_cpu_s",
		"mpiblast_compute_s", "mpiblast_io_s", "mpiblast_total_s",
		"paramedic_compute_s", "paramedic_post_s", "paramedic_io_s", "paramedic_total_s"})
	for _, r := range rows {
		_ = w.Write([]string{g(r.x), r.label, g(r.rtt * 1e3), strconv.Itoa(r.m.queries), strconv.Itoa(r.m.hits), strconv.FormatInt(r.m.qbytes, 10),
			strconv.FormatInt(r.m.D, 10), strconv.FormatInt(r.m.x, 10), g(r.m.search), g(r.m.f), g(r.m.g),
			g(r.mpi.compute), g(r.mpi.io), g(r.mpi.total()), g(r.para.compute), g(r.para.post), g(r.para.io), g(r.para.total())})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// headroom is a y-axis top that leaves the upper part of a figure to its
// legend.
func headroom(rows []row) float64 {
	top := 0.0
	for _, r := range rows {
		top = max(top, r.mpi.total(), r.para.total())
	}
	return 1.45 * top
}

// renderLines draws both schemes' total times against x (figures 6, 7).
func renderLines(path, title, xlabel string, rows []row) error {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "time (s): compute + post-processing + I/O"
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	// One pair of lines per link delay: mpiBLAST solid, ParaMEDIC dashed.
	var rtts []float64
	mpi, para := map[float64]plotter.XYs{}, map[float64]plotter.XYs{}
	for _, r := range rows {
		if _, ok := mpi[r.rtt]; !ok {
			rtts = append(rtts, r.rtt)
		}
		mpi[r.rtt] = append(mpi[r.rtt], plotter.XY{X: r.x, Y: r.mpi.total()})
		para[r.rtt] = append(para[r.rtt], plotter.XY{X: r.x, Y: r.para.total()})
	}
	for i, rtt := range rtts {
		for k, s := range []struct {
			name string
			xy   plotter.XYs
		}{{"mpiBLAST (output over the link)", mpi[rtt]}, {"ParaMEDIC (blast plugin)", para[rtt]}} {
			line, pts, err := plotter.NewLinePoints(s.xy)
			if err != nil {
				return err
			}
			line.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
			pts.Shape = plotutil.Shape(k)
			if k == 1 {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(line, pts)
			p.Legend.Add(fmt.Sprintf("%s, RTT %.0f ms", s.name, rtt*1e3), line, pts)
		}
	}
	p.Y.Min, p.Y.Max = 0, headroom(rows)
	return p.Save(18*vg.Centimeter, 12*vg.Centimeter, path)
}

// renderPhases draws each point's phases as two stacked bars, mpiBLAST's
// and ParaMEDIC's (figures 5 and 11).
func renderPhases(path, title, xlabel string, rows []row) error {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = xlabel + "; left bar mpiBLAST, right bar ParaMEDIC"
	p.Y.Label.Text = "time (s)"
	p.Legend.Top = true
	w := vg.Points(18)
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.label
	}
	colors := []color.Color{plotutil.Color(0), plotutil.Color(2), plotutil.Color(1)}
	for s, scheme := range []func(row) phases{func(r row) phases { return r.mpi }, func(r row) phases { return r.para }} {
		var below *plotter.BarChart
		for k, part := range []struct {
			name string
			v    func(phases) float64
		}{{"compute", func(p phases) float64 { return p.compute }}, {"post-processing", func(p phases) float64 { return p.post }}, {"I/O (the link)", func(p phases) float64 { return p.io }}} {
			vals := make(plotter.Values, len(rows))
			for i, r := range rows {
				vals[i] = part.v(scheme(r))
			}
			bc, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return err
			}
			bc.Color = colors[k]
			bc.LineStyle.Width = vg.Points(0.5)
			bc.Offset = vg.Length(2*s-1) * w / 2
			if below != nil {
				bc.StackOn(below)
			}
			below = bc
			p.Add(bc)
			if s == 0 {
				p.Legend.Add(part.name, bc)
			}
		}
	}
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, headroom(rows)
	return p.Save(18*vg.Centimeter, 12*vg.Centimeter, path)
}
