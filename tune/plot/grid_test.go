package plot

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	gplot "gonum.org/v1/plot"

	"github.com/pario/pario/internal/heatmap"
)

func TestHeatMapGrid(t *testing.T) {
	a := heatmap.Map{Title: "a", Cols: []string{"64k", "1m"}, Rows: []string{"64k", "1m"}, Z: [][]float64{{100, 200}, {math.NaN(), 300}}}
	b := a
	b.Z = [][]float64{{150, 250}, {math.NaN(), 400}}
	lo, hi := heatmap.Range(a, b)
	if lo != 100 || hi != 400 {
		t.Errorf("Range = %v, %v, want 100, 400", lo, hi)
	}
	a.Lo, a.Hi, b.Lo, b.Hi = lo, hi, lo, hi
	pa, err := a.Plot()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.Plot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := SaveGrid(dir, "pair", [][]*gplot.Plot{{pa, pb}}, 0, 0)
	if err != nil || len(paths) != 2 {
		t.Fatalf("SaveGrid: %v, %v", paths, err)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() < 2000 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := SaveGrid(dir, "x", nil, 0, 0); err == nil {
		t.Error("SaveGrid of nothing: no error")
	}
	bad := a
	bad.Z = [][]float64{{1}}
	if _, err := bad.Plot(); err == nil {
		t.Error("ragged heat map: no error")
	}
	if _, err := SaveGrid(filepath.Join(dir, "missing", "dir"), "y", [][]*gplot.Plot{{pa}}, 0, 0); err == nil {
		t.Error("SaveGrid into a missing directory: no error")
	}
}
