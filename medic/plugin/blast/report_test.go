package blast

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pario/pario/medic"
)

// A pairwise report as BLAST+ 2.12 prints it, cut short.
const header = `BLASTP 2.12.0+


Reference: Stephen F. Altschul ...


Database: uniprot-example
           20,000 sequences; 9,055,569 total letters



`

func section(q, hit string) string {
	return "Query= " + q + "\n\nLength=57\n" +
		"Sequences producing significant alignments:                          (Bits)  Value\n\n" +
		hit + " Something                                          120     2e-38\n\n\n>" + hit + " Something\nLength=57\n\n" +
		"Lambda      K        H\n\nEffective search space used: 1234\n\n\n"
}

const footer = `  Database: uniprot-example
    Posted date:  Nov 22, 2026  6:20 AM
  Number of letters in database: 9,055,569
  Number of sequences in database:  20,000



Matrix: BLOSUM62
`

func TestSplitAndJoinPairwise(t *testing.T) {
	whole := header + section("q1", "A1") + section("q2", "B2") + section("q3", "C3") + footer
	p, err := splitPairwise([]byte(whole))
	if err != nil {
		t.Fatal(err)
	}
	if string(p.header) != header || string(p.footer) != footer || len(p.queries) != 3 || string(p.queries[1]) != section("q2", "B2") {
		t.Fatalf("split wrong: header %q footer %q queries %d", p.header, p.footer, len(p.queries))
	}
	// Two runs over q1 and q2,q3 (each with its own header and footer)
	// join into the one run over all three.
	a := header + section("q1", "A1") + footer
	b := header + section("q2", "B2") + section("q3", "C3") + strings.Replace(footer, "6:20", "6:21", 1)
	got, err := join("0", [][]byte{[]byte(a), []byte(b)})
	if err != nil {
		t.Fatal(err)
	}
	if want := header + section("q1", "A1") + section("q2", "B2") + section("q3", "C3") + strings.Replace(footer, "6:20", "6:21", 1); string(got) != want {
		t.Fatalf("join:\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"no queries here\n", header + section("q1", "A1")} {
		if _, err := splitPairwise([]byte(bad)); err == nil {
			t.Errorf("splitPairwise(%q) succeeded", bad)
		}
	}
}

func TestJoinTabular(t *testing.T) {
	got, _ := join("6", [][]byte{[]byte("q1\tA\n"), []byte("q2\tB\n")})
	if string(got) != "q1\tA\nq2\tB\n" {
		t.Fatalf("fmt 6: %q", got)
	}
	c1 := "# BLASTP 2.12.0+\n# Query: q1\n# 0 hits found\n# BLAST processed 1 queries\n"
	c2 := "# BLASTP 2.12.0+\n# Query: q2\n# 0 hits found\n# BLAST processed 1 queries\n"
	got, _ = join("7", [][]byte{[]byte(c1), []byte(c2)})
	want := "# BLASTP 2.12.0+\n# Query: q1\n# 0 hits found\n# BLASTP 2.12.0+\n# Query: q2\n# 0 hits found\n# BLAST processed 1 queries\n"
	if string(got) != want {
		t.Fatalf("fmt 7:\n%s\nwant\n%s", got, want)
	}
}

func TestVary(t *testing.T) {
	orig := header + section("q1", "A1") + footer
	v := varyLines([]byte(orig))
	want := []string{"           20,000 sequences; 9,055,569 total letters", "Effective search space used: 1234",
		"    Posted date:  Nov 22, 2026  6:20 AM", "  Number of letters in database: 9,055,569", "  Number of sequences in database:  20,000"}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("vary lines %q", v)
	}
	regen := strings.NewReplacer("20,000", "31", "9,055,569", "7,001", "1234", "99", "6:20", "7:45").Replace(orig)
	got, err := restoreVary([]byte(regen), v)
	if err != nil || string(got) != orig {
		t.Fatalf("restore: %v\n%s", err, got)
	}
	if _, err := restoreVary([]byte(regen), v[:4]); !errors.Is(err, medic.ErrDigest) {
		t.Fatalf("one line too many: %v, want ErrDigest", err)
	}
	if _, err := restoreVary([]byte(regen), append(v, "x")); !errors.Is(err, medic.ErrDigest) {
		t.Fatalf("one line too few: %v, want ErrDigest", err)
	}
}

func TestFastaRecords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{">a x\nMK\nLV\n>b\nGG\n", []string{">a x\nMK\nLV\n", ">b\nGG\n"}},
		{">a\nMK", []string{">a\nMK"}},
		{"MKLV\n", nil},           // no defline
		{"\n>a\nMK\n", nil},       // text before the first record
		{">a\nMK\n>\nGG\n", nil},  // a record without an id
		{">a\nMK\n> \nGG\n", nil}, // the same, with a blank
		{"", nil},
	} {
		if got := fastaRecords(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("fastaRecords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// chunks covers 0..n with at most k non-empty consecutive ranges, none
// heavier than its fair share plus the heaviest single query.
func TestChunksProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(t, "n")
		k := rapid.IntRange(1, 12).Draw(t, "k")
		var weights []int64
		if rapid.Bool().Draw(t, "weighted") {
			weights = rapid.SliceOfN(rapid.Int64Range(1, 1000), n, n).Draw(t, "w")
		}
		got := chunks(n, weights, k)
		if n == 0 {
			if got != nil {
				t.Fatalf("chunks of nothing: %v", got)
			}
			return
		}
		if len(got) > k || len(got) > n || (len(got) < k && len(got) < n) {
			t.Fatalf("%d ranges for n=%d k=%d", len(got), n, k)
		}
		w := func(i int) int64 {
			if weights == nil {
				return 1
			}
			return weights[i]
		}
		var total, heaviest int64
		for i := range n {
			total += w(i)
			heaviest = max(heaviest, w(i))
		}
		next := 0
		for _, c := range got {
			if c[0] != next || c[1] <= c[0] {
				t.Fatalf("ranges %v do not tile 0..%d", got, n)
			}
			var sum int64
			for i := c[0]; i < c[1]; i++ {
				sum += w(i)
			}
			if sum > total/int64(len(got))+2*heaviest {
				t.Fatalf("range %v weighs %d, fair share %d, heaviest query %d", c, sum, total/int64(len(got)), heaviest)
			}
			next = c[1]
		}
		if next != n {
			t.Fatalf("ranges %v end at %d, want %d", got, next, n)
		}
	})
}

func TestDeltaRoundTrip(t *testing.T) {
	idx := []int{0, 3, 4, 10}
	got, err := undelta(delta(idx), 11)
	if err != nil || !reflect.DeepEqual(got, idx) {
		t.Fatalf("round trip %v: %v %v", idx, got, err)
	}
	for _, bad := range [][]int{{0, 0}, {-1}, {5, 6}, {1, math.MaxInt}, {math.MaxInt}} {
		if _, err := undelta(bad, 11); err == nil {
			t.Errorf("undelta(%v) accepted", bad)
		}
	}
}

// FuzzReport feeds arbitrary text to the report parsers: they must not
// panic, and what they cut must put back together into the input.
func FuzzReport(f *testing.F) {
	f.Add([]byte(header+section("q1", "A1")+section("q2", "B2")+footer), "0")
	f.Add([]byte("q1\tA1\t100\nq1\tB2\t90\n# comment\nq2\tA1\t80\n"), "6")
	f.Add([]byte("# BLASTP 2.12.0+\n# Query: q1\n# BLAST processed 1 queries\n"), "7 qseqid sseqid")
	f.Add([]byte(">a x\nMK\n>b\nGG\n"), "10 saccver")
	f.Fuzz(func(t *testing.T, out []byte, outfmt string) {
		if strings.TrimSpace(outfmt) != "" {
			_, _ = HitIDs(out, outfmt)
			if _, err := subjectColumn(outfmt); err == nil {
				if _, err := join(outfmt, [][]byte{out, out}); err != nil && !strings.HasPrefix(strings.TrimSpace(outfmt), "0") {
					t.Fatalf("join of a tabular format failed: %v", err)
				}
			}
		}
		if got, err := restoreVary(out, varyLines(out)); err != nil || string(got) != string(out) {
			t.Fatalf("restoring an output's own database lines changed it (%v)", err)
		}
		if p, err := splitPairwise(out); err == nil && string(p.bytes()) != string(out) {
			t.Fatal("header, queries and footer do not add up to the report")
		}
		// Cut against two records, as a query file of q1 and q2 would be.
		if s, err := split(out, outfmt, []string{">q1\nM\n", ">q2\nM\n"}); err == nil && string(s.bytes()) != string(out) {
			t.Fatalf("the sections of -outfmt %q do not add up to the output", outfmt)
		}
		if recs := fastaRecords(string(out)); recs != nil && strings.Join(recs, "") != string(out) {
			t.Fatal("FASTA records do not add up to the query file")
		}
	})
}

// FuzzReadMeta: metadata from the wire never panics the decoder, and hit
// lists that decode name only accessions that exist.
func FuzzReadMeta(f *testing.F) {
	var b bytes.Buffer
	if err := writeMeta(&b, &meta{Mode: modeRegen, Accs: "A\nB\nC", Hits: [][]int{{0, 2}, {1}}, Weights: []int64{10, 20}}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(magic))
	f.Add([]byte("PMEDIC-BLAST1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := readMeta(bytes.NewReader(data))
		if err != nil {
			return
		}
		n := len(strings.Split(m.Accs, "\n"))
		for _, h := range m.Hits {
			idx, err := undelta(h, n)
			if err != nil {
				continue
			}
			for i, k := range idx {
				if k < 0 || k >= n || (i > 0 && k <= idx[i-1]) {
					t.Fatalf("undelta gave index %d of %d (%v)", k, n, idx)
				}
			}
		}
		_ = chunks(len(m.Weights), m.Weights, 8)
	})
}

// Metadata naming another program or a forbidden option is refused before
// anything runs.
func TestDecodeChecksMetadata(t *testing.T) {
	for name, m := range map[string]*meta{
		"program": {Mode: modeRegen, Program: "rm", Outfmt: "6", Accs: "A"},
		"option":  {Mode: modeRegen, Program: "blastp", Outfmt: "6", Accs: "A", Options: []string{"-export_search_strategy", "/tmp/x"}},
		"outfmt":  {Mode: modeRegen, Program: "blastp", Outfmt: " ", Accs: "A"},
	} {
		var b bytes.Buffer
		if err := writeMeta(&b, m); err != nil {
			t.Fatal(err)
		}
		err := (Plugin{}).Decode(t.Context(), &b, &bytes.Buffer{}, medic.Env{Resources: map[string]string{"blast.db": "/nonexistent"}})
		if err == nil || !strings.Contains(err.Error(), "corrupt metadata") {
			t.Errorf("%s: %v, want a corrupt-metadata error", name, err)
		}
	}
}

func TestSplitTabular(t *testing.T) {
	recs := []string{">tr|W0FSK4|W0FSK4_9FLAV polyprotein\nMK\n", ">q2 no hits\nMK\n", ">XP_1.2 desc\nMK\n"}
	for _, tc := range []struct {
		name, outfmt, out string
		want              []string // sections; nil: split must fail
	}{
		{"std", "6", "tr|W0FSK4|W0FSK4_9FLAV\tA\t1\ntr|W0FSK4|W0FSK4_9FLAV\tB\t2\nXP_1.2\tC\t3\n",
			[]string{"tr|W0FSK4|W0FSK4_9FLAV\tA\t1\ntr|W0FSK4|W0FSK4_9FLAV\tB\t2\n", "", "XP_1.2\tC\t3\n"}},
		{"accession", "10 sseqid qacc", "A,W0FSK4\nC,XP_1\n", []string{"A,W0FSK4\n", "", "C,XP_1\n"}},
		{"no newline at the end", "6 qseqid sseqid", "q2\tA", []string{"", "q2\tA", ""}},
		{"empty", "6", "", []string{"", "", ""}},
		{"out of order", "6", "q2\tA\nW0FSK4\tB\n", nil},
		{"unknown query", "6", "q9\tA\n", nil},
		{"query twice", "6", "q2\tA\nXP_1\tB\nq2\tC\n", nil},
		{"no query column", "6 sseqid evalue", "A\t1\n", nil},
		{"short line", "6 sseqid qseqid", "A\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := split([]byte(tc.out), tc.outfmt, recs)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("split succeeded: %q", s.queries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(s.queries))
			for i, q := range s.queries {
				got[i] = string(q)
			}
			if !reflect.DeepEqual(got, tc.want) || string(s.bytes()) != tc.out {
				t.Fatalf("sections %q, want %q", got, tc.want)
			}
		})
	}
	// Two records with the same id cannot be told apart.
	if _, err := split([]byte("q\tA\n"), "6", []string{">q a\nM\n", ">q b\nM\n"}); err == nil {
		t.Fatal("split matched a line to one of two records with the same id")
	}
}

func TestSplitCommented(t *testing.T) {
	q := func(id, hits string) string {
		return "# BLASTP 2.12.0+\n# Query: " + id + "\n# Database: db\n" + hits
	}
	q1 := q("q1", "# Fields: query acc.ver, subject acc.ver\n# 1 hits found\nq1\tA\n")
	q2 := q("q2", "# 0 hits found\n")
	foot := "# BLAST processed 2 queries\n"
	s, err := split([]byte(q1+q2+foot), "7", []string{">q1\nM\n", ">q2\nM\n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.queries) != 2 || string(s.queries[0]) != q1 || string(s.queries[1]) != q2 || string(s.footer) != foot {
		t.Fatalf("split wrong: %q footer %q", s.queries, s.footer)
	}
	for _, bad := range []string{q1 + q2, q1 + foot, "q1\tA\n" + foot, ""} {
		if _, err := split([]byte(bad), "7", []string{">q1\nM\n", ">q2\nM\n"}); err == nil {
			t.Errorf("split(%q) succeeded", bad)
		}
	}
}

func TestTabToFASTA(t *testing.T) {
	got, err := tabToFASTA([]byte("tr|A1|A1_X Title with\ttab and trailing blank \tMKV\nB2 \tGG\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := ">tr|A1|A1_X Title with\ttab and trailing blank \nMKV\n>B2 \nGG\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := tabToFASTA([]byte("no tab here\n")); err == nil {
		t.Fatal("a line without a tab was accepted")
	}
}
