package blast

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/medic"
)

// exampleData is Debian's mmseqs2-examples: 20,000 UniProt proteins and 500
// queries.
const exampleData = "/usr/share/doc/mmseqs2/example-data"

// numQueries keeps the test well under 30 s on two cores.
const numQueries = 20

// need skips the test when a prerequisite is absent, or fails it under CI
// (testenv.SkipOrFail).
func need(t *testing.T) {
	t.Helper()
	var missing []string
	for _, p := range []string{"blastp", "makeblastdb", "blastdbcmd"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p+" (Debian package ncbi-blast+)")
		}
	}
	for _, f := range []string{"DB.fasta.gz", "QUERY.fasta.gz"} {
		if _, err := os.Stat(filepath.Join(exampleData, f)); err != nil {
			missing = append(missing, filepath.Join(exampleData, f)+" (Debian package mmseqs2-examples)")
		}
	}
	if len(missing) == 0 {
		return
	}
	testenv.SkipOrFail(t, "missing %s", strings.Join(missing, ", "))
}

// readFASTA reads a gzipped FASTA into records (each with its header).
func readFASTA(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	var cur strings.Builder
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, ">") && cur.Len() > 0 {
			recs = append(recs, cur.String())
			cur.Reset()
		}
		cur.WriteString(line + "\n")
	}
	if cur.Len() > 0 {
		recs = append(recs, cur.String())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

func makedb(t *testing.T, dir, name string, recs []string) string {
	t.Helper()
	fa := filepath.Join(dir, name+".fa")
	if err := os.WriteFile(fa, []byte(strings.Join(recs, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, name)
	if out, err := exec.Command("makeblastdb", "-in", fa, "-dbtype", "prot", "-parse_seqids", "-out", db, "-title", "uniprot-example").CombinedOutput(); err != nil {
		t.Fatalf("makeblastdb: %v\n%s", err, out)
	}
	return db
}

// exampleDatabases builds the compute site's database (dir/orig) and the
// storage site's replica (dir/replica/replica) from the example's 20,000
// proteins, and returns their records.
func exampleDatabases(t *testing.T, dir string) (recs []string, db, replica string) {
	t.Helper()
	recs = readFASTA(t, filepath.Join(exampleData, "DB.fasta.gz"))
	db = makedb(t, dir, "orig", recs)
	replicaDir := filepath.Join(dir, "replica")
	if err := os.Mkdir(replicaDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return recs, db, makedb(t, replicaDir, "replica", recs)
}

// differsOnlyAsDocumented reports the lines of a and b that differ other than
// in the ways the package documentation lists.
var allowed = regexp.MustCompile(`^(\s+[\d,]+ sequences; [\d,]+ total (letters|residues|bases)|\s*Posted date:.*|Effective search space used: \d+|\s*Number of (letters|sequences) in database:.*)$`)

func TestBlastRoundTrip(t *testing.T) {
	need(t)
	ctx := context.Background()
	dir := t.TempDir()
	recs, db, replica := exampleDatabases(t, dir)
	queries := readFASTA(t, filepath.Join(exampleData, "QUERY.fasta.gz"))[:numQueries]
	qf := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(qf, []byte(strings.Join(queries, "")), 0o600); err != nil {
		t.Fatal(err)
	}

	// The two original searches, concurrently.
	outfmts := []string{"6", "7", "0"}
	searchTime := map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(outfmts))
	for i, outfmt := range outfmts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			b, err := exec.Command("blastp", "-query", qf, "-db", db, "-outfmt", outfmt, "-out", filepath.Join(dir, "out"+outfmt+".txt")).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("blastp -outfmt %s: %v\n%s", outfmt, err, b)
			}
			mu.Lock()
			searchTime[outfmt] = time.Since(t0)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("group", func(t *testing.T) {
		for _, outfmt := range outfmts {
			t.Run("outfmt"+outfmt, func(t *testing.T) {
				t.Parallel()
				roundTrip(t, dir, db, replica, outfmt, searchTime[outfmt])
			})
		}
	})
	// Metadata naming a few database sequences, as a search would.
	var accs []string
	for _, r := range recs[100:105] {
		accs = append(accs, strings.Split(r, "|")[1])
	}
	gone := accs[2]
	m := &meta{Mode: modeRegen, Program: "blastp", Outfmt: "6", DBTitle: "x", DBSize: 9055569,
		Query: queries[0], Accs: strings.Join(accs, "\n")}
	var metaBuf bytes.Buffer
	if err := writeMeta(&metaBuf, m); err != nil {
		t.Fatal(err)
	}

	t.Run("missing", func(t *testing.T) {
		// A replica without one hit sequence.
		var kept []string
		for _, r := range recs {
			if !strings.Contains(strings.SplitN(r, " ", 2)[0], "|"+gone+"|") {
				kept = append(kept, r)
			}
		}
		if len(kept) != len(recs)-1 {
			t.Fatalf("removing %s kept %d of %d records", gone, len(kept), len(recs))
		}
		bad := makedb(t, t.TempDir(), "bad", kept)
		var got bytes.Buffer
		tmp := t.TempDir()
		err := (Plugin{}).Decode(ctx, bytes.NewReader(metaBuf.Bytes()), &got, medic.Env{Resources: map[string]string{"blast.db": bad}, TempDir: tmp})
		if err == nil {
			t.Fatal("decode against a replica lacking a hit sequence succeeded")
		}
		if !errors.Is(err, medic.ErrMissing) || !strings.Contains(err.Error(), gone) {
			t.Fatalf("error %q should wrap ErrMissing and name %s", err, gone)
		}
		if got.Len() != 0 {
			t.Fatalf("%d bytes written despite the error", got.Len())
		}
		t.Logf("missing sequence: %v", err)
	})

	t.Run("noResource", func(t *testing.T) {
		err := (Plugin{}).Decode(ctx, bytes.NewReader(metaBuf.Bytes()), &bytes.Buffer{}, medic.Env{TempDir: t.TempDir()})
		if !errors.Is(err, medic.ErrMissing) || !strings.Contains(err.Error(), "blast.db") {
			t.Fatalf("error %v should wrap ErrMissing and name blast.db", err)
		}
	})
}

func roundTrip(t *testing.T, dir, db, replica, outfmt string, tSearch time.Duration) {
	ctx := context.Background()
	out := filepath.Join(dir, "out"+outfmt+".txt")
	orig, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	src := medic.Source{Path: out, Params: map[string]string{"program": "blastp", "query": "q.fa", "db": "orig", "outfmt": outfmt}, Dir: dir}
	if outfmt == "6" {
		// The compute site's threads: recorded, and not the storage
		// site's to use (its workers decide).
		src.Params["options"] = "-num_threads 2"
	}
	var metaBuf bytes.Buffer
	t0 := time.Now()
	if err := (Plugin{}).Encode(ctx, src, &metaBuf); err != nil {
		t.Fatal(err)
	}
	tEnc := time.Since(t0)
	m, err := readMeta(bytes.NewReader(metaBuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if m.Mode != modeRegen {
		t.Fatalf("mode %q, want %q", m.Mode, modeRegen)
	}
	// Only the database lines are shipped as text: none for tabular
	// output, -outfmt 7's database path and query count, the header,
	// footer and search-space lines of the report.
	for _, v := range m.Vary {
		ok := outfmt == "0" && allowed.MatchString(v) || outfmt == "7" && (strings.HasPrefix(v, "# BLAST processed") || strings.HasPrefix(v, "# Database: "))
		if !ok {
			t.Errorf("line %q shipped verbatim; not one the documentation lists", v)
		}
	}
	if outfmt == "0" && len(m.Vary) != numQueries+4 {
		t.Errorf("pairwise report: %d database lines shipped, want %d (header, 3 footer, one per query)", len(m.Vary), numQueries+4)
	}
	if outfmt == "0" && (len(m.Hits) != numQueries || len(m.Weights) != numQueries) {
		t.Errorf("pairwise report: hits for %d and weights for %d queries, want %d", len(m.Hits), len(m.Weights), numQueries)
	}

	env := medic.Env{Resources: map[string]string{"blast.db": replica, "blast.workers": "3"}, TempDir: t.TempDir()}
	var argLog string
	if outfmt == "6" {
		env.Resources["blast.bin"], argLog = loggingBLAST(t)
	}
	var got bytes.Buffer
	t0 = time.Now()
	if err := (Plugin{}).Decode(ctx, bytes.NewReader(metaBuf.Bytes()), &got, env); err != nil {
		t.Fatal(err)
	}
	tDec := time.Since(t0)
	if argLog != "" {
		b, err := os.ReadFile(argLog)
		if err != nil || !strings.Contains(string(b), "-query") {
			t.Fatalf("no blastp call logged: %v %q", err, b)
		}
		if strings.Contains(string(b), "-num_threads") {
			t.Errorf("the storage site ran blastp with the compute site's -num_threads:\n%s", b)
		}
	}
	if !bytes.Equal(got.Bytes(), orig) {
		t.Fatalf("regenerated output differs from the original (%d vs %d bytes)", got.Len(), len(orig))
	}

	zenc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	zlen := len(zenc.EncodeAll(orig, nil))
	zenc.Close()
	ratio := float64(len(orig)) / float64(metaBuf.Len())
	t.Logf("outfmt %s: %d queries, %d hit sequences; output %d bytes, metadata %d bytes (%.0fx; zstd -3 on the output: %d bytes, %.1fx); %d lines verbatim; search %v, f (encode) %v, g (decode) %v",
		outfmt, numQueries, len(strings.Split(m.Accs, "\n")), len(orig), metaBuf.Len(), ratio, zlen, float64(len(orig))/float64(zlen), len(m.Vary), tSearch.Round(time.Millisecond), tEnc.Round(time.Millisecond), tDec.Round(time.Millisecond))
	if outfmt == "0" && ratio < 100 {
		t.Errorf("metadata only %.0fx smaller than the report, want >= 100x", ratio)
	}
}

// TestBlastRepairsAQueryThatGainsAHit: on the tiny database PAN1_PICGU's
// search finds a marginal hit (H2Q809, E = 4.7) that belongs to the other
// query's hits and that the search of the whole database did not report;
// the storage site must notice it, search that query again alone and still
// give back the original report byte for byte.
func TestBlastRepairsAQueryThatGainsAHit(t *testing.T) {
	need(t)
	ctx := context.Background()
	dir := t.TempDir()
	recs, db, replica := exampleDatabases(t, dir)
	// Records 6001 (G1RYF3, whose hits include H2Q809) and 11201 (PAN1_PICGU).
	qf := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(qf, []byte(recs[6000]+recs[11200]), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.txt")
	if b, err := exec.Command("blastp", "-query", qf, "-db", db, "-outfmt", "0", "-out", out).CombinedOutput(); err != nil {
		t.Fatalf("blastp: %v\n%s", err, b)
	}
	orig, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var metaBuf bytes.Buffer
	src := medic.Source{Path: out, Params: map[string]string{"program": "blastp", "query": "q.fa", "db": "orig"}, Dir: dir}
	if err := (Plugin{}).Encode(ctx, src, &metaBuf); err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	// One chunk: the two queries search each other's hits too.
	env := medic.Env{Resources: map[string]string{"blast.db": replica, "blast.chunks": "1"}, TempDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}
	var got bytes.Buffer
	if err := (Plugin{}).Decode(ctx, bytes.NewReader(metaBuf.Bytes()), &got, env); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), orig) {
		t.Fatalf("regenerated report differs from the original (%d vs %d bytes)", got.Len(), len(orig))
	}
	if !strings.Contains(logBuf.String(), "re-ran queries alone") || !strings.Contains(logBuf.String(), "queries=1") {
		t.Fatalf("the gained hit was not repaired by a lone re-run; log:\n%s", logBuf.String())
	}
}

// A query without hits gets a chunk of its own (two queries, two chunks):
// its chunk must search nothing rather than everything, so that its
// "No hits found" section comes back as it was.
func TestBlastQueryWithoutHits(t *testing.T) {
	need(t)
	ctx := context.Background()
	dir := t.TempDir()
	recs, db, replica := exampleDatabases(t, dir)
	qf := filepath.Join(dir, "q.fa")
	// At E <= 1e-5 a short made-up sequence matches nothing.
	if err := os.WriteFile(qf, []byte(recs[6000]+">nohit a made-up sequence\nMQHYPKLWCRDEFVNATGSWYHPMCKQ\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.txt")
	if b, err := exec.Command("blastp", "-query", qf, "-db", db, "-outfmt", "0", "-evalue", "1e-5", "-out", out).CombinedOutput(); err != nil {
		t.Fatalf("blastp: %v\n%s", err, b)
	}
	orig, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(orig, []byte("***** No hits found *****")) {
		t.Fatal("the second query found hits; the test needs one that finds none")
	}
	var metaBuf bytes.Buffer
	src := medic.Source{Path: out, Params: map[string]string{"program": "blastp", "query": "q.fa", "db": "orig", "evalue": "1e-5"}, Dir: dir}
	if err := (Plugin{}).Encode(ctx, src, &metaBuf); err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	env := medic.Env{Resources: map[string]string{"blast.db": replica, "blast.workers": "2", "blast.chunks": "2"}, TempDir: scratch}
	var got bytes.Buffer
	if err := (Plugin{}).Decode(ctx, bytes.NewReader(metaBuf.Bytes()), &got, env); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), orig) {
		t.Fatalf("regenerated report differs from the original (%d vs %d bytes)", got.Len(), len(orig))
	}
	// The second chunk's list names no sequence of the database (an empty
	// list would have searched them all).
	lists, _ := filepath.Glob(filepath.Join(scratch, "chunk*.ids"))
	restricted := 0
	for _, l := range lists {
		if b, err := os.ReadFile(l); err == nil && strings.TrimSpace(string(b)) == "pario-medic-no-hit" {
			restricted++
		}
	}
	if len(lists) != 2 || restricted != 1 {
		t.Fatalf("%d chunk lists, %d of them restricted to no sequence; want 2 and 1", len(lists), restricted)
	}
}

// loggingBLAST is a blast.bin directory whose blastp logs its arguments
// (a line a call) to the returned file and runs the real one; the other
// BLAST+ programs are the real ones.
func loggingBLAST(t *testing.T) (dir, log string) {
	t.Helper()
	dir, log = t.TempDir(), filepath.Join(t.TempDir(), "blastp.args")
	real, err := exec.LookPath("blastp")
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s\nexec %s \"$@\"\n", log, real)
	if err := os.WriteFile(filepath.Join(dir, "blastp"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"blastdbcmd", "makeblastdb"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, log
}
