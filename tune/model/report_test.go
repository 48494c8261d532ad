package model

import (
	"bytes"
	"errors"
	"flag"
	"github.com/pario/pario/internal/golden"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/report")

// TestOptimumWriteTextGolden is `pario tune model`'s report for the
// paper's parameters: Table III's 10 GB and 1000 GB cases by the paper's
// formula and the exact one, and a range cut short by MaxN.
func TestOptimumWriteTextGolden(t *testing.T) {
	paper := Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}
	cases := []struct {
		name string
		size float64
		maxN int
		f    Formula
		n    int
	}{
		{"10g-paper", 10, 160, Paper, 4},
		{"10g-exact", 10, 160, Exact, 5},
		{"1000g-paper", 1000, 500, Paper, 399},
		{"3g-max2", 3, 2, Exact, 2},
	}
	for _, tc := range cases {
		o, err := FindOptimum(paper, tc.size, tc.maxN, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if o.N != tc.n {
			t.Errorf("%s: N = %d, want %d", tc.name, o.N, tc.n)
		}
		var b bytes.Buffer
		if err := o.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "report", tc.name+".txt")
		golden.Check(t, path, b.Bytes(), *update)
	}
}

func TestFindOptimumErrors(t *testing.T) {
	for _, tc := range []struct {
		p    Params
		size float64
		want error
	}{
		{Params{Lambda: 0.2, Gamma: 0.125, V: 0.0625}, 10, ErrUnstable},
		{Params{Lambda: 0.1, Gamma: 0.125, V: 0}, 10, ErrInvalid},
		{Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}, -3, ErrInvalid},
	} {
		if _, err := FindOptimum(tc.p, tc.size, 160, Exact); !errors.Is(err, tc.want) {
			t.Errorf("FindOptimum(%+v, %v): %v, want %v", tc.p, tc.size, err, tc.want)
		}
	}
}
