package heatmap

import (
	"math"
	"strings"
	"testing"
)

func TestRangeAndPlot(t *testing.T) {
	a := Map{Title: "a", Cols: []string{"64k", "1m"}, Rows: []string{"64k", "1m"}, Z: [][]float64{{100, 200}, {math.NaN(), 300}}}
	b := a
	b.Z = [][]float64{{150, 250}, {math.NaN(), math.Inf(1)}}
	if lo, hi := Range(a, b); lo != 100 || hi != 300 {
		t.Errorf("Range = %v, %v, want 100, 300 (NaN and Inf left out)", lo, hi)
	}
	if lo, hi := Range(); lo != 0 || hi != 1 {
		t.Errorf("Range of nothing = %v, %v, want 0, 1", lo, hi)
	}
	a.Lo, a.Hi = 100, 300
	p, err := a.Plot()
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Min != -0.5 || p.X.Max != 1.5 || p.Title.Text != "a" {
		t.Errorf("axes %v..%v, title %q", p.X.Min, p.X.Max, p.Title.Text)
	}
	// Values whose span overflows a float64 are an error, not gonum's
	// panic ("palette: specified value == NaN").
	huge := Map{Title: "huge", Cols: []string{"a", "b"}, Rows: []string{"x"}, Z: [][]float64{{-1e308, 1e308}}}
	huge.Lo, huge.Hi = Range(huge)
	if _, err := huge.Plot(); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("Plot of values from -1e308 to 1e308: %v, want an error", err)
	}
	for _, bad := range []Map{
		{Cols: []string{"a"}, Rows: []string{"x", "y"}, Z: [][]float64{{1}}},
		{Cols: []string{"a", "b"}, Rows: []string{"x"}, Z: [][]float64{{1}}},
		{},
	} {
		if _, err := bad.Plot(); err == nil {
			t.Errorf("Plot of %+v: no error", bad)
		}
	}
}
