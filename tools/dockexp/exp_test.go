package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/template/dock"
)

// records cuts an output file into its molecule records, sorted, so that
// outputs in any order compare equal when each molecule was analysed
// precisely once.
func records(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for off := 0; off < len(data); {
		start := off
		n := int(binary.LittleEndian.Uint32(data[off+1:]))
		off += 5
		for range 4*n + 1 {
			off += 4 + 5*int(binary.LittleEndian.Uint32(data[off:]))
		}
		out = append(out, string(data[start:off]))
	}
	slices.Sort(out)
	return out
}

// TestProgramsAgree: the newspaper, the composed newspaper and the block
// log give the sequential program's results, each molecule once.
func TestProgramsAgree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	const n = 9
	sizes, err := generate(in, dock.Config{Molecules: n, MeanBytes: 6000, MaxM: 30, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var mean float64
	for _, s := range sizes {
		mean += float64(s) / n
	}
	c := cost{Granularity: 100 * time.Microsecond, MeanBytes: mean, Work: 2}
	seqOut := filepath.Join(dir, "seq")
	if _, err := sequential(in, seqOut, c, false); err != nil {
		t.Fatal(err)
	}
	want := records(t, seqOut)
	if len(want) != n {
		t.Fatalf("sequential: %d records", len(want))
	}
	for _, tc := range []struct {
		name     string
		ann      string
		cm, cede int
	}{
		{"newspaper", newspaperAnn, 3, 0},
		{"composed", newspaperAnn, 2, 3},
		{"log block", logBlockAnn, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			if _, err := parallel(ctx, mustParse(tc.name, tc.ann), in, out, tc.cm, tc.cede, c, n); err != nil {
				t.Fatal(err)
			}
			if got := records(t, out); !slices.Equal(got, want) {
				t.Fatalf("%d records, not the sequential program's %d (or different)", len(got), len(want))
			}
		})
	}
}

// TestQuickRun: the whole experiment on a small input writes its CSVs and
// plots, with the seed's numbers beside ours.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment")
	}
	out := t.TempDir()
	cfg := config{Out: out}.quick()
	var b bytes.Buffer
	if err := run(context.Background(), cfg, &b); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dock-fig7.csv", "dock-fig10.csv", "dock-log.csv", "dock-simpler.csv", "dock-fig7.svg", "dock-fig10.svg"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	fig7, err := os.ReadFile(filepath.Join(out, "dock-fig7.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// A header, then the sequential row and four process counts per
	// granularity.
	if rows := strings.Count(string(fig7), "\n"); rows != 1+3*5 {
		t.Errorf("dock-fig7.csv has %d rows", rows)
	}
	for _, seed := range []string{"| 15 | 148 ", "| 2/8 | 1023 |", "1.25"} {
		if !strings.Contains(b.String(), seed) {
			t.Errorf("report lacks the seed's %q:\n%s", seed, b.String())
		}
	}
}
