package blast

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/pario/pario/medic"
)

func init() { medic.Register(Plugin{}) }

// Plugin is the BLAST+ plugin; the zero value is ready to use.
type Plugin struct{}

// Name implements medic.Plugin.
func (Plugin) Name() string { return "blast" }

// RegenRate implements medic.RegenRater: what a plan prices g with when
// the receiver has not regenerated with blast yet. Regeneration re-runs
// the search, so its time goes with the queries and the database more than
// with the report's bytes; this is the slowest rate measured on the
// development machine under its usual load (docs/medic-auto.csv, blastp
// sends at 10 MB/s: 207 KB in 11.2 s, 912 KB in 20.2 s, 2.33 MB in 14.4 s,
// that is 18-160 kB/s), so that a first send chooses blast only where it
// wins even then. After one send with blast the receiver's record of its
// real rate prices it.
func (Plugin) RegenRate() float64 { return 18e3 }

var _ medic.RegenRater = Plugin{}

const magic = "PMEDIC-BLAST2\n"

// Mode of a metadata record.
const (
	modeRegen = "regen" // regenerate by re-running the search
	modeRaw   = "raw"   // fallback: the output itself, zstd-compressed
)

// meta is the metadata record (JSON, zstd-compressed, after magic).
type meta struct {
	Mode    string   `json:"mode"`
	Size    int64    `json:"size"`   // bytes of the original output
	SHA256  []byte   `json:"sha256"` // of the original output
	Raw     []byte   `json:"raw,omitempty"`
	Program string   `json:"program,omitempty"`
	Outfmt  string   `json:"outfmt,omitempty"`
	Evalue  string   `json:"evalue,omitempty"`
	MaxTgt  string   `json:"max_target_seqs,omitempty"`
	Options []string `json:"options,omitempty"`
	// DBTitle and DBSize describe the original database: its title (so
	// the tiny database carries the same) and its total residues (-dbsize).
	DBTitle string `json:"db_title,omitempty"`
	DBSize  int64  `json:"dbsize,omitempty"`
	Query   string `json:"query,omitempty"` // the query FASTA, verbatim
	// Accs are the hit accessions in the original database's OID order,
	// newline-separated.
	Accs string `json:"accs,omitempty"`
	// Vary is the original text of the lines that describe the database
	// rather than the hits (varyRE), in order.
	Vary []string `json:"vary,omitempty"`
	// For a pairwise report whose queries can be told apart: Weights are
	// the bytes of each query's section (how the storage site balances
	// the re-run over its workers) and Hits each query's hits, as
	// ascending indices into Accs, delta-coded (what it checks the re-run
	// against, query by query).
	Weights []int64 `json:"weights,omitempty"`
	Hits    [][]int `json:"hits,omitempty"`
}

// forbidden are the search options the plugin sets itself or that would
// name files or database subsets of the compute site.
var forbidden = map[string]bool{
	"-db": true, "-query": true, "-out": true, "-outfmt": true, "-dbsize": true,
	"-searchsp": true, "-remote": true, "-evalue": true, "-max_target_seqs": true,
	"-subject": true, "-subject_loc": true, "-gilist": true, "-seqidlist": true,
	"-negative_gilist": true, "-negative_seqidlist": true, "-taxids": true, "-taxidlist": true,
	"-negative_taxids": true, "-negative_taxidlist": true,
	"-import_search_strategy": true, "-export_search_strategy": true,
}

// checkOptions refuses the forbidden options.
func checkOptions(options []string) error {
	for _, o := range options {
		if forbidden[o] {
			return fmt.Errorf("blast: option %s is not allowed (the plugin sets it, or it names a file or a part of the database)", o)
		}
	}
	return nil
}

// threadOptions set how many threads a search uses: the compute site's
// choice, recorded with the options, which the storage site does not
// replay (blast.workers decides its parallelism: each of its searches is
// one thread, so that the workers fill its cores and no more).
var threadOptions = map[string]bool{"-num_threads": true, "-mt_mode": true}

// withoutThreads is options less the thread options and their values.
func withoutThreads(options []string) []string {
	var out []string
	for i := 0; i < len(options); i++ {
		if threadOptions[options[i]] {
			i++ // its value
			continue
		}
		out = append(out, options[i])
	}
	return out
}

var dbtypes = map[string]string{
	"blastp": "prot", "blastx": "prot", "blastn": "nucl", "tblastn": "nucl", "tblastx": "nucl",
}

// params is the parsed Source.Params.
type params struct {
	program, query, db, outfmt, evalue, maxTgt, bin string
	options                                         []string
}

func parseParams(src medic.Source) (params, error) {
	p := params{
		program: src.Params["program"],
		query:   src.Params["query"],
		db:      src.Params["db"],
		outfmt:  strings.TrimSpace(src.Params["outfmt"]),
		evalue:  src.Params["evalue"],
		maxTgt:  src.Params["max_target_seqs"],
		bin:     src.Params["bin"],
		options: strings.Fields(src.Params["options"]),
	}
	if p.outfmt == "" {
		p.outfmt = "0"
	}
	if _, ok := dbtypes[p.program]; !ok {
		return p, fmt.Errorf("blast: param program=%q: want one of blastp, blastn, blastx, tblastn, tblastx", p.program)
	}
	if p.query == "" || p.db == "" {
		return p, errors.New("blast: params query (the query FASTA) and db (the database searched) are required")
	}
	if src.Dir != "" {
		if !filepath.IsAbs(p.query) {
			p.query = filepath.Join(src.Dir, p.query)
		}
		if !filepath.IsAbs(p.db) {
			p.db = filepath.Join(src.Dir, p.db)
		}
	}
	if err := checkOptions(p.options); err != nil {
		return p, fmt.Errorf("param options: %w", err)
	}
	if _, err := subjectColumn(p.outfmt); err != nil {
		return p, err
	}
	return p, nil
}

// subjectColumn returns the 0-based subject-id column of a tabular outfmt, or
// -1 for the pairwise report.
func subjectColumn(outfmt string) (int, error) {
	f := strings.Fields(outfmt)
	if len(f) == 0 {
		return 0, errors.New("blast: empty outfmt")
	}
	switch f[0] {
	case "0":
		if len(f) > 1 {
			return 0, fmt.Errorf("blast: outfmt %q: format 0 takes no fields", outfmt)
		}
		return -1, nil
	case "6", "7", "10":
	default:
		return 0, fmt.Errorf("blast: outfmt %q not supported (use 0, 6, 7 or 10)", outfmt)
	}
	if len(f) == 1 {
		return 1, nil // std: qaccver saccver ...
	}
	fields := f[1:]
	if fields[0] == "std" {
		return 1, nil
	}
	for i, c := range fields {
		switch c {
		case "sseqid", "sacc", "saccver", "sallseqid", "sallacc":
			return i, nil
		case "std":
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("blast: outfmt %q has no subject id column (add sseqid or saccver)", outfmt)
}

// HitIDs returns the subject ids in a BLAST output, first occurrence order.
func HitIDs(out []byte, outfmt string) ([]string, error) {
	col, err := subjectColumn(outfmt)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	if col >= 0 {
		sep := "\t"
		if strings.Fields(outfmt)[0] == "10" {
			sep = ","
		}
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			cols := strings.Split(line, sep)
			if col >= len(cols) {
				return nil, fmt.Errorf("blast: output line %q has no column %d", line, col+1)
			}
			for _, id := range strings.Split(cols[col], ";") { // sallseqid
				add(id)
			}
		}
		return ids, sc.Err()
	}
	inList := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Sequences producing significant alignments"):
			inList = true
			continue
		case strings.HasPrefix(line, ">"):
			inList = false
			if f := strings.Fields(line[1:]); len(f) > 0 {
				add(f[0])
			}
			continue
		}
		if inList {
			if strings.TrimSpace(line) == "" {
				continue // blank lines surround the list
			}
			if strings.HasPrefix(line, "Query=") || strings.HasPrefix(line, "Lambda") {
				inList = false
				continue
			}
			if f := strings.Fields(line); len(f) > 0 {
				add(f[0])
			}
		}
	}
	return ids, sc.Err()
}

// tool locates a BLAST+ program.
func tool(bin, name string) (string, error) {
	if bin != "" {
		p := filepath.Join(bin, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("%w: blast: program %s not found in %s", medic.ErrMissing, name, bin)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: blast: program %s not on $PATH (install Debian package ncbi-blast+ or set resource blast.bin)", medic.ErrMissing, name)
	}
	return p, nil
}

// run executes a program and returns its stdout; errors carry stderr.
func run(ctx context.Context, bin, name string, args ...string) ([]byte, []byte, error) {
	path, err := tool(bin, name)
	if err != nil {
		return nil, nil, err
	}
	// medic.Command: the program dies with the receiver, and with its
	// process group when the regeneration is canceled.
	cmd := medic.Command(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = medic.RunCommand(cmd)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return stdout.Bytes(), stderr.Bytes(), fmt.Errorf("blast: %s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), stderr.Bytes(), nil
}

var infoRE = regexp.MustCompile(`(?m)^Database: (.*)\n\s*([\d,]+) sequences; ([\d,]+) total`)

// dbInfo returns a database's title and total residues.
func dbInfo(ctx context.Context, bin, db string) (string, int64, error) {
	out, _, err := run(ctx, bin, "blastdbcmd", "-db", db, "-info")
	if err != nil {
		return "", 0, err
	}
	m := infoRE.FindSubmatch(out)
	if m == nil {
		return "", 0, fmt.Errorf("blast: cannot read the size of database %s from blastdbcmd -info", db)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(string(m[3]), ",", ""), 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("blast: database %s size %q: %v", db, m[3], err)
	}
	return string(m[1]), n, nil
}

// resolve maps ids to (OID, accession) in db and returns the accessions in
// OID order, with the long form of each id (what -outfmt "6 sseqid"
// prints, "sp|P12345|NAME") mapped to its accession in alias. It returns
// the ids the database lacks separately.
func resolve(ctx context.Context, bin, db, dir string, ids []string) (accs []string, alias map[string]string, missing []string, err error) {
	list := filepath.Join(dir, "ids.txt")
	if err := os.WriteFile(list, []byte(strings.Join(ids, "\n")+"\n"), 0o600); err != nil {
		return nil, nil, nil, err
	}
	out, stderr, err := run(ctx, bin, "blastdbcmd", "-db", db, "-entry_batch", list, "-outfmt", "%o\t%a\t%i")
	if err != nil && len(out) == 0 && !bytes.Contains(stderr, []byte("Skipped")) {
		return nil, nil, nil, err
	}
	missing = skipped(stderr)
	if err != nil && len(missing) == 0 {
		return nil, nil, nil, err
	}
	type hit struct {
		oid int64
		acc string
	}
	var hits []hit
	seen := map[int64]bool{}
	alias = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		oid, perr := strconv.ParseInt(f[0], 10, 64)
		if len(f) != 3 || perr != nil {
			return nil, nil, nil, fmt.Errorf("blast: blastdbcmd printed %q, want OID, accession and id", line)
		}
		a := f[1]
		alias[f[2]] = a
		if !seen[oid] {
			seen[oid] = true
			hits = append(hits, hit{oid, a})
		}
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].oid < hits[j].oid })
	for _, h := range hits {
		accs = append(accs, h.acc)
	}
	return accs, alias, missing, nil
}

// regeneration is one storage-site run: the tiny database and the query
// records it re-runs the search with.
type regeneration struct {
	m       *meta
	accs    []string       // m.Accs, split
	index   map[string]int // accession or long id (as in the tiny database) -> index into accs
	hits    [][]int        // m.Hits decoded: each query's indices into accs; nil without them
	bin     string
	dir     string
	tiny    string   // the tiny database
	recs    []string // query records; nil when the query file cannot be cut
	workers int      // searches at once
	chunks  int      // searches in all (at most one per query)
	log     *slog.Logger
}

// skipped returns the ids blastdbcmd -entry_batch reported it could not find.
func skipped(stderr []byte) []string {
	var ids []string
	for _, line := range strings.Split(string(stderr), "\n") {
		if i := strings.Index(line, "Skipped "); i >= 0 {
			ids = append(ids, strings.TrimSpace(line[i+len("Skipped "):]))
		}
	}
	return ids
}

// regenerate rebuilds the tiny database from db and re-runs the search as
// chunks searches, workers at a time, returning the regenerated output with
// the database lines restored.
func regenerate(ctx context.Context, bin, db, dir string, m *meta, workers, chunks int, log *slog.Logger) ([]byte, error) {
	// The accessions come in the original database's OID order, and
	// blastdbcmd writes them in the order asked: the tiny database keeps it.
	accs := strings.Split(m.Accs, "\n")
	list := filepath.Join(dir, "ids.txt")
	if err := os.WriteFile(list, []byte(m.Accs+"\n"), 0o600); err != nil {
		return nil, err
	}
	// Each sequence with its long id and its title as they are (-outfmt
	// %f would shorten the id, and so change what sseqid prints; with
	// -long_seqids it drops a title's trailing blanks, which the pairwise
	// report prints).
	tab, stderr, err := run(ctx, bin, "blastdbcmd", "-db", db, "-entry_batch", list, "-outfmt", "%i %t\t%s")
	if missing := skipped(stderr); len(missing) > 0 {
		return nil, fmt.Errorf("%w: blast: replica %s lacks %d hit sequence(s): %s", medic.ErrMissing, db, len(missing), strings.Join(missing, ", "))
	}
	if err != nil {
		return nil, err
	}
	seqs, err := tabToFASTA(tab)
	if err != nil {
		return nil, fmt.Errorf("blast: blastdbcmd on replica %s: %w", db, err)
	}
	fa := filepath.Join(dir, "hits.fa")
	if err := os.WriteFile(fa, seqs, 0o600); err != nil {
		return nil, err
	}
	switch n := len(lineStarts(seqs, ">")); {
	case n < len(accs):
		return nil, fmt.Errorf("%w: blast: replica %s resolves the %d hit accessions to only %d sequences", medic.ErrMissing, db, len(accs), n)
	case n > len(accs):
		// An accession names several sequences here: another database.
		return nil, fmt.Errorf("%w: blast: replica %s resolves the %d hit accessions to %d sequences", medic.ErrDigest, db, len(accs), n)
	}
	r := &regeneration{m: m, accs: accs, index: seqIndex(seqs, accs), bin: bin, dir: dir, tiny: filepath.Join(dir, "tiny"), recs: fastaRecords(m.Query), workers: max(workers, 1), chunks: max(chunks, 1), log: log}
	if m.Hits != nil {
		if len(m.Hits) != len(r.recs) {
			return nil, fmt.Errorf("blast: corrupt metadata: hits for %d queries, the query file has %d", len(m.Hits), len(r.recs))
		}
		r.hits = make([][]int, len(m.Hits))
		for i, d := range m.Hits {
			if r.hits[i], err = undelta(d, len(accs)); err != nil {
				return nil, err
			}
		}
	}
	if _, _, err := run(ctx, bin, "makeblastdb", "-in", fa, "-dbtype", dbtypes[m.Program], "-parse_seqids",
		"-out", r.tiny, "-title", m.DBTitle); err != nil {
		return nil, err
	}
	out, err := r.search(ctx)
	if err != nil {
		return nil, err
	}
	if out, err = r.repair(ctx, out); err != nil {
		return nil, err
	}
	return restoreVary(out, m.Vary)
}

// chunksPerWorker is the default number of chunks per worker: more chunks
// mean fewer candidate sequences per search (each chunk searches only its
// own queries' hits) against one more process start each; 4 per worker
// took a third less CPU than one search of everything on the example data.
const chunksPerWorker = 4

// search re-runs the whole search: the queries cut into consecutive chunks
// of about equal weight, each searched against only its queries' hits, the
// heaviest chunks started first, and the chunks' outputs joined as one run
// would have printed them.
func (r *regeneration) search(ctx context.Context) ([]byte, error) {
	if r.recs == nil {
		return r.blast(ctx, "all", r.m.Query, nil)
	}
	ranges := chunks(len(r.recs), r.m.Weights, r.chunks)
	weight := func(c [2]int) int64 {
		var w int64
		for i := c[0]; i < c[1]; i++ {
			if i < len(r.m.Weights) {
				w += r.m.Weights[i]
			} else {
				w++
			}
		}
		return w
	}
	order := make([]int, len(ranges))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return weight(ranges[order[a]]) > weight(ranges[order[b]]) })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make([][]byte, len(ranges))
	errs := make([]error, len(ranges))
	next := make(chan int, len(order))
	for _, i := range order {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(r.workers, len(ranges)) {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					continue
				}
				c := ranges[i]
				parts[i], errs[i] = r.blast(ctx, fmt.Sprintf("chunk%d", i), strings.Join(r.recs[c[0]:c[1]], ""), r.hitsOf(c))
				if errs[i] != nil {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return nil, err
	}
	out, err := join(r.m.Outfmt, parts)
	if err != nil {
		return nil, fmt.Errorf("%w: blast: joining the re-run's chunks: %v", medic.ErrDigest, err)
	}
	return out, nil
}

// firstError returns the first error that is not the cancellation the
// first failure caused in the other chunks (or that cancellation, if it
// is all there is).
func firstError(errs []error) error {
	var canceled error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			canceled = err
		default:
			return err
		}
	}
	return canceled
}

// hitsOf returns the accessions the queries of range c hit, in OID order,
// or nil (search everything) when the metadata does not say.
func (r *regeneration) hitsOf(c [2]int) []string {
	if r.hits == nil {
		return nil
	}
	seen := map[int]bool{}
	var idx []int
	for _, hits := range r.hits[c[0]:c[1]] {
		for _, k := range hits {
			if !seen[k] {
				seen[k] = true
				idx = append(idx, k)
			}
		}
	}
	sort.Ints(idx)
	return r.accsOf(idx)
}

// accsOf returns the accessions at indices idx.
func (r *regeneration) accsOf(idx []int) []string {
	only := make([]string, len(idx))
	for i, k := range idx {
		only[i] = r.accs[k]
	}
	return only
}

// blast runs the search for query (FASTA text) against the tiny database,
// restricted to the accessions only when given, and returns its output.
func (r *regeneration) blast(ctx context.Context, name, query string, only []string) ([]byte, error) {
	m := r.m
	q := filepath.Join(r.dir, name+".fa")
	if err := os.WriteFile(q, []byte(query), 0o600); err != nil {
		return nil, err
	}
	res := filepath.Join(r.dir, name+".out")
	args := []string{"-query", q, "-db", r.tiny, "-dbsize", strconv.FormatInt(m.DBSize, 10), "-outfmt", m.Outfmt, "-out", res}
	if m.Evalue != "" {
		args = append(args, "-evalue", m.Evalue)
	}
	if m.MaxTgt != "" {
		args = append(args, "-max_target_seqs", m.MaxTgt)
	}
	if only != nil {
		if len(only) == 0 {
			// An empty list would search everything; an id no database
			// has searches nothing, as the original found nothing.
			only = []string{"pario-medic-no-hit"}
		}
		list := filepath.Join(r.dir, name+".ids")
		if err := os.WriteFile(list, []byte(strings.Join(only, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "-seqidlist", list)
	}
	args = append(args, withoutThreads(m.Options)...)
	if _, _, err := run(ctx, r.bin, m.Program, args...); err != nil {
		return nil, err
	}
	return os.ReadFile(res)
}

// repair checks a regenerated output query by query against the hits the
// compute site saw. On the tiny database a query can gain a marginal hit
// that belongs to another query of its chunk (BLAST's preliminary cutoffs
// depend on the database searched); such a query is searched again alone,
// restricted to its own hits (-seqidlist), which gives back its original
// section.
func (r *regeneration) repair(ctx context.Context, out []byte) ([]byte, error) {
	if r.hits == nil {
		return out, nil
	}
	s, err := split(out, r.m.Outfmt, r.recs)
	if err != nil {
		return nil, fmt.Errorf("%w: blast: the re-run's output cannot be cut into the original's %d queries: %v", medic.ErrDigest, len(r.hits), err)
	}
	repaired := 0
	for i, sec := range s.queries {
		got, err := HitIDs(sec, r.m.Outfmt)
		if err != nil {
			return nil, err
		}
		if sameHits(got, r.hits[i], r.index) {
			continue
		}
		alone, err := r.blast(ctx, fmt.Sprintf("query%d", i), r.recs[i], r.accsOf(r.hits[i]))
		if err != nil {
			return nil, err
		}
		as, err := split(alone, r.m.Outfmt, r.recs[i:i+1])
		if err != nil {
			return nil, fmt.Errorf("%w: blast: re-running query %d alone: %v", medic.ErrDigest, i+1, err)
		}
		s.queries[i] = as.queries[0]
		repaired++
	}
	if repaired == 0 {
		return out, nil
	}
	r.log.Info("blast: re-ran queries alone whose hits differed on the tiny database", "queries", repaired)
	return s.bytes(), nil
}

// sameHits reports whether the hit ids got are the accessions want (indices
// into accs, which index maps ids to), as sets.
func sameHits(got []string, want []int, index map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	set := make(map[int]bool, len(want))
	for _, k := range want {
		set[k] = true
	}
	for _, id := range got {
		k, ok := index[id]
		if !ok || !set[k] {
			return false
		}
		delete(set, k)
	}
	return true
}

// tabToFASTA turns blastdbcmd's "ID TITLE<tab>SEQUENCE" lines into FASTA.
// A title may hold a tab, a sequence cannot: the last tab splits them.
func tabToFASTA(tab []byte) ([]byte, error) {
	var b bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSuffix(tab, []byte("\n")), []byte("\n")) {
		i := bytes.LastIndexByte(line, '\t')
		if i < 0 {
			return nil, fmt.Errorf("printed %.80q, want an id, a title, a tab and a sequence", line)
		}
		b.WriteByte('>')
		b.Write(line[:i])
		b.WriteByte('\n')
		b.Write(line[i+1:])
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// seqIndex maps the ids of the tiny database's sequences (FASTA text in
// accs' order) to their index: each accession, and the first word of each
// defline joined by Ctrl-A (what sseqid and sallseqid print).
func seqIndex(fasta []byte, accs []string) map[string]int {
	index := make(map[string]int, 2*len(accs))
	for k, a := range accs {
		index[a] = k
	}
	for k, at := range lineStarts(fasta, ">") {
		if k >= len(accs) {
			break
		}
		line, _, _ := bytes.Cut(fasta[at+1:], []byte("\n"))
		for _, def := range bytes.Split(line, []byte("\x01")) {
			if f := bytes.Fields(def); len(f) > 0 {
				index[string(f[0])] = k
			}
		}
	}
	return index
}

// delta codes ascending indices as their differences (smaller numbers
// compress better); undelta reverses it and checks each index against n.
func delta(idx []int) []int {
	out := make([]int, len(idx))
	prev := 0
	for i, k := range idx {
		out[i], prev = k-prev, k
	}
	return out
}

func undelta(d []int, n int) ([]int, error) {
	out := make([]int, len(d))
	k := 0
	for i, x := range d {
		// x < n-k keeps k+x below n without overflowing.
		if x < 0 || x >= n-k || (i > 0 && x == 0) {
			return nil, fmt.Errorf("blast: corrupt metadata: hit delta %d after index %d of %d", x, k, n)
		}
		k += x
		out[i] = k
	}
	return out, nil
}

// Encode implements medic.Plugin.
func (Plugin) Encode(ctx context.Context, src medic.Source, w io.Writer) error {
	m, err := encode(ctx, src, slog.Default())
	if err != nil {
		return err
	}
	return writeMeta(w, m)
}

func encode(ctx context.Context, src medic.Source, log *slog.Logger) (*meta, error) {
	p, err := parseParams(src)
	if err != nil {
		return nil, err
	}
	out, err := os.ReadFile(src.Path)
	if err != nil {
		return nil, fmt.Errorf("blast: %w", err)
	}
	sum := sha256.Sum256(out)
	query, err := os.ReadFile(p.query)
	if err != nil {
		return nil, fmt.Errorf("blast: query: %w", err)
	}
	ids, err := HitIDs(out, p.outfmt)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		log.Warn("blast: shipping the output compressed instead of regenerating it", "why", "the search found no hits")
		return &meta{Mode: modeRaw, Size: int64(len(out)), SHA256: sum[:], Raw: out}, nil
	}
	title, size, err := dbInfo(ctx, p.bin, p.db)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "medic-blast-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	accs, alias, missing, err := resolve(ctx, p.bin, p.db, dir, ids)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("blast: database %s does not know hit id(s) %s: is it the database the search ran against (built with -parse_seqids)?", p.db, strings.Join(missing, ", "))
	}
	m := &meta{
		Mode: modeRegen, Size: int64(len(out)), SHA256: sum[:],
		Program: p.program, Outfmt: p.outfmt, Evalue: p.evalue, MaxTgt: p.maxTgt, Options: p.options,
		DBTitle: title, DBSize: size, Query: string(query), Accs: strings.Join(accs, "\n"),
		Vary: varyLines(out),
	}
	m.Weights, m.Hits = perQuery(out, p.outfmt, string(query), accs, alias)
	return m, nil
}

// perQuery returns each query's weight and hits (see meta), or nils when
// the output's queries cannot be matched to the query file's records (see
// split) or a printed id is not an accession of the database.
func perQuery(out []byte, outfmt, query string, accs []string, alias map[string]string) ([]int64, [][]int) {
	recs := fastaRecords(query)
	if recs == nil {
		return nil, nil
	}
	p, err := split(out, outfmt, recs)
	if err != nil {
		return nil, nil
	}
	index := make(map[string]int, len(accs))
	for i, a := range accs {
		index[a] = i
	}
	for id, a := range alias {
		if i, ok := index[a]; ok {
			index[id] = i
		}
	}
	weights := make([]int64, len(p.queries))
	hits := make([][]int, len(p.queries))
	for i, sec := range p.queries {
		weights[i] = int64(len(sec))
		ids, err := HitIDs(sec, outfmt)
		if err != nil {
			return nil, nil
		}
		idx := make([]int, 0, len(ids))
		for _, id := range ids {
			k, ok := index[id]
			if !ok {
				return weights, nil
			}
			idx = append(idx, k)
		}
		sort.Ints(idx)
		hits[i] = delta(idx)
	}
	return weights, hits
}

// Decode implements medic.Plugin.
func (Plugin) Decode(ctx context.Context, r io.Reader, out io.Writer, env medic.Env) error {
	m, err := readMeta(r)
	if err != nil {
		return err
	}
	data, err := decode(ctx, m, env)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}

func decode(ctx context.Context, m *meta, env medic.Env) ([]byte, error) {
	var data []byte
	switch m.Mode {
	case modeRaw:
		data = m.Raw
	case modeRegen:
		// The metadata is authenticated, but only as far as the key: check
		// what ends up on a command line as Encode did.
		if _, ok := dbtypes[m.Program]; !ok {
			return nil, fmt.Errorf("blast: corrupt metadata: program %q", m.Program)
		}
		if err := checkOptions(m.Options); err != nil {
			return nil, fmt.Errorf("corrupt metadata: %w", err)
		}
		if _, err := subjectColumn(m.Outfmt); err != nil {
			return nil, fmt.Errorf("corrupt metadata: %w", err)
		}
		db, err := env.Resource("blast.db")
		if err != nil {
			return nil, err
		}
		dir := env.TempDir
		if dir == "" {
			d, err := os.MkdirTemp("", "medic-blast-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(d)
			dir = d
		}
		workers, err := positive(env.Resources, "blast.workers", runtime.GOMAXPROCS(0))
		if err != nil {
			return nil, err
		}
		chunks, err := positive(env.Resources, "blast.chunks", chunksPerWorker*workers)
		if err != nil {
			return nil, err
		}
		log := env.Logger
		if log == nil {
			log = slog.Default()
		}
		regen, err := regenerate(ctx, env.Resources["blast.bin"], db, dir, m, workers, chunks, log)
		if err != nil {
			return nil, err
		}
		data = regen
	default:
		return nil, fmt.Errorf("blast: corrupt metadata: mode %q", m.Mode)
	}
	if sum := sha256.Sum256(data); int64(len(data)) != m.Size || !bytes.Equal(sum[:], m.SHA256) {
		return nil, fmt.Errorf("%w: blast: regenerated output (%d bytes) does not match the original (%d bytes, sha256 %x); is the replica the same database and BLAST+ the same version?", medic.ErrDigest, len(data), m.Size, m.SHA256)
	}
	return data, nil
}

// positive returns the resource key as a positive integer, or def when unset.
func positive(res map[string]string, key string, def int) (int, error) {
	v, ok := res[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("blast: resource %s=%q: want a positive integer", key, v)
	}
	return n, nil
}

func writeMeta(w io.Writer, m *meta) error {
	js, err := json.Marshal(m)
	if err != nil {
		return err
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		return err
	}
	defer enc.Close()
	if _, err := io.WriteString(w, magic); err != nil {
		return err
	}
	_, err = w.Write(enc.EncodeAll(js, nil))
	return err
}

// maxMeta bounds the decompressed metadata.
const maxMeta = 1 << 30

func readMeta(r io.Reader) (*meta, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte(magic)) {
		return nil, errors.New("blast: corrupt metadata: bad magic")
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxMeta))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	js, err := dec.DecodeAll(b[len(magic):], nil)
	if err != nil {
		return nil, fmt.Errorf("blast: corrupt metadata: %w", err)
	}
	var m meta
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, fmt.Errorf("blast: corrupt metadata: %w", err)
	}
	return &m, nil
}
