package blast

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
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

// pairwise is a pairwise (-outfmt 0) report cut at its queries.
type pairwise struct {
	header  []byte   // up to the first "Query=" line
	queries [][]byte // one per query, each from its "Query=" line
	footer  []byte   // the database statistics and search parameters
}

// splitPairwise cuts a pairwise report into header, queries and footer.
func splitPairwise(b []byte) (pairwise, error) {
	var p pairwise
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
