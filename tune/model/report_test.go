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

// TestFindOptimumRefusesHugeInputs: `pario tune model --max-n
// 9223372036854775807` ran for hours (the paper's formula is scanned over
// all of 1..maxN, deaf to Ctrl-C), and `--size 1e308` failed with "n = 0 is
// not positive" (every E(T) was +Inf). Both are errors naming the value.
func TestFindOptimumRefusesHugeInputs(t *testing.T) {
	paper := Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}
	cases := []struct {
		size float64
		maxN int
		want string
	}{
		{10, 9223372036854775807, "model: maxN = 9.223372036854776e+18 is too large (at most 1048576)"},
		{10, 1<<20 + 1, "model: maxN = 1.048577e+06 is too large (at most 1048576)"},
		{1e308, 160, "model: M = 1e+308 is too large: its write time M/V at V = 0.0625 GB/s overflows"},
	}
	for _, tc := range cases {
		for _, f := range []Formula{Exact, Paper} {
			_, err := FindOptimum(paper, tc.size, tc.maxN, f)
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalid) {
				t.Errorf("FindOptimum(size %g, maxN %d, %s) = %v, want %q", tc.size, tc.maxN, f, err, tc.want)
			}
		}
		if _, err := TimeCurve(paper, tc.size, tc.maxN, Paper); err == nil {
			t.Errorf("TimeCurve(size %g, maxN %d) accepted", tc.size, tc.maxN)
		}
	}
	if _, err := FindOptimum(paper, 10, 1<<20, Paper); err != nil {
		t.Errorf("maxN = MaxStripeCount: %v", err)
	}
}
