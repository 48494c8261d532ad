package template

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/rank"
)

// TestOverParioFiles: the templates work over pario client files as over
// local ones. FASTA records are cut from a pario file striped over two I/O
// servers (small strips, so records straddle them), and each rank, with a
// client of its own, writes its results through an ordered log into another
// pario file: every record read whole across the strips, every result there
// once, in rank order round by round.
func TestOverParioFiles(t *testing.T) {
	ctx := testCtx(t)
	l, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), DataServers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	setup, err := l.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	var in bytes.Buffer
	var recs []string
	for i := range 30 {
		r := fmt.Sprintf(">q%d\n%s\n", i, strings.Repeat("ACGT", 1+i*11%60))
		recs = append(recs, r)
		in.WriteString(r)
	}
	hints := map[string]string{"strip_size": "256"}
	f, err := setup.Create(ctx, "/in.fa", client.CreateOptions{Hints: hints})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(in.Bytes(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Create(ctx, "/out", client.CreateOptions{Hints: hints}); err != nil {
		t.Fatal(err)
	}

	fin := ann(t, "fin NEWSPAPER ro wo b main=FASTA")
	fout := ann(t, "fout LOG rc wo a main=0")
	const rounds = 8 // each rank takes this many records, in turn
	err = rank.RunLocal(ctx, nRanks, func(ctx context.Context, c *rank.Comm) error {
		cl, err := l.Client(ctx)
		if err != nil {
			return err
		}
		defer cl.Close()
		inf, err := cl.Open(ctx, "/in.fa")
		if err != nil {
			return err
		}
		outf, err := cl.Open(ctx, "/out")
		if err != nil {
			return err
		}
		g, err := NewGroup(ctx, c)
		if err != nil {
			return err
		}
		si, err := g.Open(ctx, fin, inf, Bounds{})
		if err != nil {
			return err
		}
		defer si.Close()
		so, err := g.Open(ctx, fout, outf, Bounds{})
		if err != nil {
			return err
		}
		defer so.Close()
		// Ordered appends need the same count on every rank: a rank
		// that runs out of records appends "-".
		for k := range rounds {
			res := []byte(fmt.Sprintf("%d %d -\n", c.Rank(), k))
			sg, err := si.Next(ctx)
			switch {
			case errors.Is(err, io.EOF):
			case err != nil:
				return err
			default:
				b := make([]byte, sg.Extent)
				if _, err := sg.ReadAt(b, 0); err != nil {
					return err
				}
				if string(b) != recs[sg.Index] {
					return fmt.Errorf("segment %d: %q, want %q", sg.Index, b, recs[sg.Index])
				}
				res = []byte(fmt.Sprintf("%d %d %d %d\n", c.Rank(), k, sg.Index, len(b)))
			}
			jitter(c.Rank(), 0)
			if _, err := so.Append(ctx, res); err != nil {
				return err
			}
		}
		return g.Close(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := setup.Open(ctx, "/out")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4096)
	n, _ := out.ReadAt(got, 0)
	got = got[:n]
	// Segments were handed out first come first served, so which rank got
	// which differs from run to run; every record is there once, and the
	// log's order is rank order round by round.
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != nRanks*rounds {
		t.Fatalf("%d results, want %d:\n%s", len(lines), nRanks*rounds, got)
	}
	seen := map[int]bool{}
	for j, line := range lines {
		var r, k, i, size int
		if line == fmt.Sprintf("%d %d -", j%nRanks, j/nRanks) {
			continue
		}
		if _, err := fmt.Sscanf(line, "%d %d %d %d", &r, &k, &i, &size); err != nil || r != j%nRanks || k != j/nRanks ||
			i < 0 || i >= len(recs) || size != len(recs[i]) || seen[i] {
			t.Fatalf("result %d: %q, want rank %d round %d, a record once:\n%s", j, line, j%nRanks, j/nRanks, got)
		}
		seen[i] = true
	}
	if len(seen) != len(recs) {
		t.Fatalf("%d records processed, want %d", len(seen), len(recs))
	}
}
