package blast

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pario/pario/medic"
)

// selfSearchQueries is how many database proteins the self-search runs
// (every 200th of the 20,000): enough for marginal hits (E up to 10) and
// hits of equal score, in about 10 s on two cores.
const selfSearchQueries = 100

// processedRE matches -outfmt 7's per-batch query count line.
var processedRE = regexp.MustCompile(`(?m)^# BLAST processed \d+ quer(y|ies)\n`)

// TestBlastTabularSelfSearch: a self-search at BLAST's defaults (E-value
// 10, max_target_seqs 500) in every tabular format regenerates byte for
// byte. On the tiny database a query can gain marginal hits that belong to
// other queries and report equal-score hits in another order; the storage
// site must repair those queries as it does for the pairwise report.
func TestBlastTabularSelfSearch(t *testing.T) {
	need(t)
	for _, p := range []string{"blast_formatter"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s not found although blastp is (Debian package ncbi-blast+)", p)
		}
	}
	ctx := context.Background()
	dir := t.TempDir()
	recs, db, replica := exampleDatabases(t, dir)
	var q []string
	for i := 0; i < len(recs) && len(q) < selfSearchQueries; i += len(recs) / selfSearchQueries {
		q = append(q, recs[i])
	}
	if err := os.WriteFile(filepath.Join(dir, "q.fa"), []byte(strings.Join(q, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	// One search, every format from its archive: blast_formatter prints
	// what blastp would, except that -outfmt 7 counts the queries once per
	// batch (fixed below to blastp's single count at the end).
	archive := filepath.Join(dir, "search.asn")
	if b, err := exec.Command("blastp", "-query", filepath.Join(dir, "q.fa"), "-db", db, "-outfmt", "11", "-out", archive, "-num_threads", "2").CombinedOutput(); err != nil {
		t.Fatalf("blastp: %v\n%s", err, b)
	}
	for i, tc := range []struct {
		outfmt string
		chunks string // blast.chunks; "" for the default
	}{
		{outfmt: "6"}, {outfmt: "7"}, {outfmt: "10"},
		{outfmt: "6 qseqid sseqid evalue bitscore"}, {outfmt: "10 sseqid qaccver bitscore evalue"},
		// One chunk: every query searches every query's hits, and some
		// gain marginal ones; they must be searched again alone.
		{outfmt: "6", chunks: "1"},
	} {
		outfmt := tc.outfmt
		t.Run(fmt.Sprintf("outfmt%d", i), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("out%d.txt", i))
			orig, err := exec.Command("blast_formatter", "-archive", archive, "-outfmt", outfmt).Output()
			if err != nil {
				t.Fatalf("blast_formatter -outfmt %q: %v", outfmt, err)
			}
			if strings.Fields(outfmt)[0] == "7" {
				orig = processedRE.ReplaceAll(orig, nil)
				orig = append(orig, fmt.Sprintf("# BLAST processed %d queries\n", len(q))...)
			}
			if err := os.WriteFile(out, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			src := medic.Source{Path: out, Params: map[string]string{"program": "blastp", "query": "q.fa", "db": "orig", "outfmt": outfmt}, Dir: dir}
			var metaBuf bytes.Buffer
			if err := (Plugin{}).Encode(ctx, src, &metaBuf); err != nil {
				t.Fatal(err)
			}
			var logBuf bytes.Buffer
			env := medic.Env{Resources: map[string]string{"blast.db": replica, "blast.workers": "2"}, TempDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}
			if tc.chunks != "" {
				env.Resources["blast.chunks"] = tc.chunks
			}
			var got bytes.Buffer
			if err := (Plugin{}).Decode(ctx, bytes.NewReader(metaBuf.Bytes()), &got, env); err != nil {
				t.Fatalf("outfmt %q: %v\n%s", outfmt, err, logBuf.String())
			}
			if !bytes.Equal(got.Bytes(), orig) {
				t.Fatalf("outfmt %q: regenerated output differs from the original (%d vs %d bytes)", outfmt, got.Len(), len(orig))
			}
			if repaired := strings.Contains(logBuf.String(), "re-ran queries alone"); tc.chunks == "1" && !repaired {
				t.Errorf("outfmt %q in one chunk: no query was searched again alone; log:\n%s", outfmt, logBuf.String())
			}
			t.Logf("outfmt %q: output %d bytes, metadata %d bytes (%.0fx); %s", outfmt, len(orig), metaBuf.Len(),
				float64(len(orig))/float64(metaBuf.Len()), strings.TrimSpace(logBuf.String()))
		})
	}
}
