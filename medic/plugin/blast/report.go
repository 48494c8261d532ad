package blast

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pario/pario/medic"
)

// The pure half of regeneration: cutting a query file and a BLAST output
// into per-query pieces, balancing the pieces over workers, putting the
// workers' outputs back together, and restoring the lines that depend on
// the database rather than on the hits.

// varyRE matches the lines of an output that describe the database searched
// rather than the hits: the tiny database's counts and posting date, the
// effective search space (which BLAST derives from the number of sequences),
// and in -outfmt 7 the database's path and the number of queries run.
// Encode records the original text of every such line, in order; Decode
// writes them back over the regenerated ones.
var varyRE = regexp.MustCompile(`^(\s+[\d,]+ sequences; [\d,]+ total (letters|residues|bases)|\s*Posted date:.*|Effective search space used: \d+|\s*Number of (letters|sequences) in database:.*|# Database: .*|# BLAST processed \d+ quer(y|ies))$`)

// varyLines returns the lines of out that varyRE matches, in order.
func varyLines(out []byte) []string {
	var v []string
	for _, l := range strings.Split(string(out), "\n") {
		if varyRE.MatchString(l) {
			v = append(v, l)
		}
	}
	return v
}

// restoreVary writes the original text of the database-dependent lines over
// those of a regenerated output. A different count of such lines means the
// regenerated output has another shape: ErrDigest, so the sender can fall
// back to shipping the bytes.
func restoreVary(out []byte, vary []string) ([]byte, error) {
	lines := strings.Split(string(out), "\n")
	j := 0
	for i, l := range lines {
		if !varyRE.MatchString(l) {
			continue
		}
		if j == len(vary) {
			return nil, fmt.Errorf("%w: blast: the regenerated output has more database lines than the original's %d", medic.ErrDigest, len(vary))
		}
		lines[i] = vary[j]
		j++
	}
	if j != len(vary) {
		return nil, fmt.Errorf("%w: blast: the regenerated output has %d database lines, the original %d", medic.ErrDigest, j, len(vary))
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// fastaRecords cuts a query file into its records, each starting with '>'.
// It returns nil when the file cannot be cut safely: text before the first
// record, or a record without an id (BLAST would number it Query_N, and
// the number would change with the cut).
func fastaRecords(q string) []string {
	if !strings.HasPrefix(q, ">") {
		return nil
	}
	var recs []string
	for q != "" {
		end := strings.Index(q, "\n>")
		rec := q
		if end >= 0 {
			rec, q = q[:end+1], q[end+1:]
		} else {
			q = ""
		}
		if id := strings.Fields(strings.SplitN(rec[1:], "\n", 2)[0]); len(id) == 0 {
			return nil
		}
		recs = append(recs, rec)
	}
	return recs
}

// sections is an output cut at its queries.
type sections struct {
	header  []byte   // up to the first "Query=" line; none in tabular output
	queries [][]byte // one per query, each from its "Query=" line, its
	// "# BLASTP" comment line or its first tabular line (and empty in
	// -outfmt 6 and 10 for a query without hits)
	footer []byte // the database statistics and search parameters, or the
	// "# BLAST processed" line
}

// bytes joins the sections back into an output.
func (s sections) bytes() []byte {
	var b bytes.Buffer
	b.Write(s.header)
	for _, q := range s.queries {
		b.Write(q)
	}
	b.Write(s.footer)
	return b.Bytes()
}

// split cuts an output in format outfmt into one section per query record
// of recs. It fails when the sections cannot be told apart or matched to
// the records: tabular output without a query id column, query ids that
// do not name the records in order, a count that differs.
func split(out []byte, outfmt string, recs []string) (sections, error) {
	var s sections
	var err error
	switch f := strings.Fields(outfmt); {
	case len(f) == 0:
		return s, errors.New("blast: empty outfmt")
	case f[0] == "0":
		s, err = splitPairwise(out)
	case f[0] == "7":
		s, err = splitCommented(out)
	default:
		return splitTabular(out, outfmt, recs)
	}
	if err == nil && len(s.queries) != len(recs) {
		err = fmt.Errorf("blast: output has %d query sections, the query file %d records", len(s.queries), len(recs))
	}
	return s, err
}

// splitPairwise cuts a pairwise report into header, queries and footer.
func splitPairwise(b []byte) (sections, error) {
	var p sections
	starts := lineStarts(b, "Query= ")
	if len(starts) == 0 {
		return p, errors.New("blast: pairwise report has no \"Query=\" line")
	}
	foot := bytes.LastIndex(b, []byte("\n  Database: "))
	if foot < starts[len(starts)-1] {
		return p, errors.New("blast: pairwise report has no database statistics after its last query")
	}
	foot++
	p.header = b[:starts[0]]
	for i, s := range starts {
		end := foot
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		p.queries = append(p.queries, b[s:end])
	}
	p.footer = b[foot:]
	return p, nil
}

// splitCommented cuts -outfmt 7 output at its queries: each starts with the
// program's line ("# BLASTP 2.12.0+", the output's first line), queries
// without hits included, and the output ends with "# BLAST processed".
func splitCommented(b []byte) (sections, error) {
	var s sections
	first, _, ok := bytes.Cut(b, []byte("\n"))
	if !ok || !bytes.HasPrefix(first, []byte("# ")) {
		return s, errors.New("blast: -outfmt 7 output does not start with the program's comment line")
	}
	starts := lineStarts(b, string(first)+"\n")
	foot := lineStarts(b, "# BLAST processed ")
	if len(foot) != 1 || foot[0] < starts[len(starts)-1] {
		return s, errors.New("blast: -outfmt 7 output does not end with one \"# BLAST processed\" line")
	}
	for i, at := range starts {
		end := foot[0]
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		s.queries = append(s.queries, b[at:end])
	}
	s.footer = b[foot[0]:]
	return s, nil
}

// queryColumn returns the 0-based query id column of a tabular outfmt, or
// -1 when it has none.
func queryColumn(outfmt string) int {
	f := strings.Fields(outfmt)
	if len(f) <= 1 {
		return 0 // std: qaccver first
	}
	for i, c := range f[1:] {
		switch c {
		case "qseqid", "qacc", "qaccver", "std":
			return i
		}
	}
	return -1
}

// splitTabular cuts -outfmt 6 or 10 output at its queries. BLAST prints a
// query's lines together, in the order of the query file, and nothing for
// a query without hits; the query id column tells which record a run of
// lines belongs to.
func splitTabular(b []byte, outfmt string, recs []string) (sections, error) {
	s := sections{queries: make([][]byte, len(recs))}
	col := queryColumn(outfmt)
	if col < 0 {
		return s, fmt.Errorf("blast: outfmt %q has no query id column (qseqid, qacc or qaccver)", outfmt)
	}
	sep := []byte("\t")
	if strings.Fields(outfmt)[0] == "10" {
		sep = []byte(",")
	}
	names := recordNames(recs)
	last, start := -1, 0
	var key []byte
	for off := 0; off < len(b); {
		end := len(b)
		if nl := bytes.IndexByte(b[off:], '\n'); nl >= 0 {
			end = off + nl + 1
		}
		cols := bytes.Split(bytes.TrimRight(b[off:end], "\n"), sep)
		if col >= len(cols) {
			return s, fmt.Errorf("blast: output line %q has no column %d", b[off:end], col+1)
		}
		if last < 0 || !bytes.Equal(cols[col], key) {
			k, ok := names[string(cols[col])]
			if !ok || k <= last {
				return s, fmt.Errorf("blast: query id %q does not name one query record after record %d", cols[col], last+1)
			}
			if last >= 0 {
				s.queries[last] = b[start:off]
			}
			last, start, key = k, off, cols[col]
		}
		off = end
	}
	if last >= 0 {
		s.queries[last] = b[start:]
	}
	return s, nil
}

// recordNames maps the ids BLAST may print for each query record to the
// record's index: the defline's first word, its "|"-separated parts and
// those without a ".N" version. A name two records share maps to -1.
func recordNames(recs []string) map[string]int {
	names := map[string]int{}
	add := func(n string, i int) {
		if n == "" {
			return
		}
		if j, ok := names[n]; ok && j != i {
			i = -1
		}
		names[n] = i
	}
	for i, r := range recs {
		word := strings.Fields(strings.SplitN(r[1:], "\n", 2)[0])[0]
		for _, n := range append([]string{word}, strings.Split(word, "|")...) {
			add(n, i)
			if dot := strings.LastIndexByte(n, '.'); dot > 0 {
				if _, err := strconv.Atoi(n[dot+1:]); err == nil {
					add(n[:dot], i)
				}
			}
		}
	}
	return names
}

// lineStarts returns the offsets of the lines of b that begin with prefix.
func lineStarts(b []byte, prefix string) []int {
	var at []int
	for off := 0; off < len(b); {
		if bytes.HasPrefix(b[off:], []byte(prefix)) {
			at = append(at, off)
		}
		nl := bytes.IndexByte(b[off:], '\n')
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	return at
}

// join puts the outputs of consecutive query chunks back into one output,
// as a single run over all the queries would have printed it.
func join(outfmt string, parts [][]byte) ([]byte, error) {
	if len(parts) == 1 {
		return parts[0], nil
	}
	var out bytes.Buffer
	kind := ""
	if f := strings.Fields(outfmt); len(f) > 0 {
		kind = f[0]
	}
	switch kind {
	case "0":
		for i, b := range parts {
			p, err := splitPairwise(b)
			if err != nil {
				return nil, fmt.Errorf("chunk %d: %w", i+1, err)
			}
			if i == 0 {
				out.Write(p.header)
			}
			for _, q := range p.queries {
				out.Write(q)
			}
			if i == len(parts)-1 {
				out.Write(p.footer)
			}
		}
	case "7":
		// Each run ends with "# BLAST processed N queries"; one at the end.
		for i, b := range parts {
			if i < len(parts)-1 {
				if at := lineStarts(b, "# BLAST processed "); len(at) > 0 {
					b = b[:at[len(at)-1]]
				}
			}
			out.Write(b)
		}
	default:
		for _, b := range parts {
			out.Write(b)
		}
	}
	return out.Bytes(), nil
}

// chunks cuts n queries with the given weights (nil: all equal) into at most
// k consecutive ranges of about equal weight, as [start, end) pairs.
func chunks(n int, weights []int64, k int) [][2]int {
	if n == 0 {
		return nil
	}
	k = max(1, min(k, n))
	w := func(i int) int64 {
		if weights == nil || i >= len(weights) {
			return 1
		}
		return max(weights[i], 1)
	}
	var total int64
	for i := range n {
		total += w(i)
	}
	var out [][2]int
	start := 0
	var acc int64
	for i := range n {
		acc += w(i)
		// Close the range once it holds its share of the weight, leaving at
		// least one query for each range still to come.
		target := total * int64(len(out)+1) / int64(k)
		left := n - i - 1
		if len(out) < k-1 && (acc >= target || left == k-1-len(out)) {
			out = append(out, [2]int{start, i + 1})
			start = i + 1
		}
	}
	return append(out, [2]int{start, n})
}
