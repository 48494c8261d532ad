package main

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pario/pario/medic/cost"
)

// The scaling the --paper figures rest on: the search spread over the
// processors, the regeneration over the post-processing ones, the link as
// the cost model has it.
func TestPaperModel(t *testing.T) {
	m := measured{D: 8e6, x: 20e3, search: 40, f: 0.5, g: 12}
	l := cost.Link{B: 4e6}
	for _, tc := range []struct {
		name      string
		got       phases
		want      phases
		wantTotal float64
	}{
		{"mpiBLAST on 20", m.mpiBLAST(20, l), phases{compute: 2, io: 2}, 4},
		{"ParaMEDIC on 16+4", m.paraMEDIC(16, 4, l), phases{compute: 40.5 / 16, post: 3, io: 0.005}, 40.5/16 + 3.005},
	} {
		if math.Abs(tc.got.compute-tc.want.compute) > 1e-9 || math.Abs(tc.got.post-tc.want.post) > 1e-9 ||
			math.Abs(tc.got.io-tc.want.io) > 1e-9 || math.Abs(tc.got.total()-tc.wantTotal) > 1e-9 {
			t.Errorf("%s: %+v (total %g), want %+v (total %g)", tc.name, tc.got, tc.got.total(), tc.want, tc.wantTotal)
		}
	}
	// A long link with a small window: one stream moves W/RTT.
	slow := cost.Link{B: 100e6, RTT: 0.1, Window: 256 << 10}
	if got, want := m.mpiBLAST(20, slow).io, 8e6/(256<<10/0.1); math.Abs(got-want) > 1e-9 {
		t.Errorf("window-limited I/O %g s, want %g", got, want)
	}
}

// The figures render from rows without BLAST.
func TestPaperRender(t *testing.T) {
	m := measured{queries: 10, D: 8e6, x: 20e3, search: 40, f: 0.5, g: 12}
	l := cost.Link{B: 4e6}
	var rows []row
	for i, n := range []int{16, 32, 80} {
		rows = append(rows, row{x: float64(i), label: "r", mpi: m.mpiBLAST(n+4, l), para: m.paraMEDIC(n, 4, l), m: m})
	}
	dir := t.TempDir()
	for name, render := range map[string]func(string, string, string, []row) error{"lines": renderLines, "bars": renderPhases} {
		path := filepath.Join(dir, name+".png")
		if err := render(path, "t", "x", rows); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if err := writeRows(filepath.Join(dir, "r.csv"), rows); err != nil {
		t.Fatal(err)
	}
}

func TestPaperRunsRoundTrip(t *testing.T) {
	runs := map[[2]int]measured{
		{10, 0}:  {queries: 10, qbytes: 5900, D: 850e3, x: 6900, search: 2.5, f: 0.13, g: 0.89},
		{50, 10}: {queries: 50, hits: 10, qbytes: 29400, D: 970e3, x: 21700, search: 7.93, f: 0.12, g: 0.79},
	}
	path := filepath.Join(t.TempDir(), "runs.csv")
	if err := writeRuns(path, runs); err != nil {
		t.Fatal(err)
	}
	got, err := readRuns(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, runs) {
		t.Fatalf("read back %+v, want %+v", got, runs)
	}
	if err := os.WriteFile(path, []byte("queries,x\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readRuns(path); err == nil {
		t.Fatal("a CSV with another header was read")
	}
}
