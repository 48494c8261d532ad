package search

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

const mib = 1 << 20

func TestGrids(t *testing.T) {
	for _, tc := range []struct {
		dim  Dim
		want []int64
	}{
		{Dim{Name: "a", Kind: Int, Min: 1, Max: 5}, []int64{1, 2, 3, 4, 5}},
		{Dim{Name: "a", Kind: Int, Min: -2, Max: 5, Step: 3}, []int64{-2, 1, 4, 5}},
		{Dim{Name: "a", Kind: Int, Min: 7, Max: 7}, []int64{7}},
		{Dim{Name: "a", Kind: Pow2, Min: mib, Max: 256 * mib}, []int64{1 * mib, 2 * mib, 4 * mib, 8 * mib, 16 * mib, 32 * mib, 64 * mib, 128 * mib, 256 * mib}},
		{Dim{Name: "a", Kind: Pow2, Min: 1, Max: 12 << 10}, []int64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288}},
		{Dim{Name: "a", Kind: Pow2, Min: 3, Max: 20}, []int64{3, 4, 8, 16, 20}},
		{Dim{Name: "a", Kind: Pow2, Min: 1, Max: 1 << 62}, func() (g []int64) {
			for i := range 63 {
				g = append(g, 1<<i)
			}
			return g
		}()},
		{Dim{Name: "a", Kind: LogInt, Min: 1, Max: 1000, Steps: 4}, []int64{1, 10, 100, 1000}},
		{Dim{Name: "a", Kind: LogInt, Min: 1, Max: 4, Steps: 10}, []int64{1, 2, 3, 4}},
		{Dim{Name: "a", Kind: LogInt, Min: 5, Max: 5}, []int64{5}},
		{Dim{Name: "a", Kind: Pow2, Values: []int64{-3, 0, 9}}, []int64{-3, 0, 9}},
	} {
		s, err := NewSpace(tc.dim)
		if err != nil {
			t.Fatalf("%+v: %v", tc.dim, err)
		}
		if got := s.Dims()[0].Values; !slices.Equal(got, tc.want) {
			t.Errorf("%+v: grid %v, want %v", tc.dim, got, tc.want)
		}
		if s.Size() != int64(len(tc.want)) {
			t.Errorf("%+v: size %d", tc.dim, s.Size())
		}
	}
}

func TestTableIVSpaces(t *testing.T) {
	s, err := NewSpace(TableIVSequential()...)
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != 160*9*9 {
		t.Errorf("sequential space has %d points, want %d", s.Size(), 160*9*9)
	}
	p, err := NewSpace(TableIVParallel()...)
	if err != nil {
		t.Fatal(err)
	}
	if p.Size() != 160*9*9*15 {
		t.Errorf("parallel space has %d points, want %d", p.Size(), 160*9*9*15)
	}
	t.Logf("sequential:\n%v\nparallel:\n%v", s, p)
}

func TestSpaceErrors(t *testing.T) {
	big := Dim{Name: "big", Kind: Int, Min: 1, Max: 1 << 16}
	for _, tc := range []struct {
		dims []Dim
		want string // substring of the error
	}{
		{nil, "empty search space"},
		{[]Dim{{Name: "stripe-count", Min: 160, Max: 1}}, `dimension "stripe-count": inverted bounds: min 160 > max 1`},
		{[]Dim{{Name: "strip-size", Kind: Pow2, Min: 256 * mib, Max: mib}}, `dimension "strip-size": inverted bounds`},
		{[]Dim{{Name: "x", Values: []int64{}}}, `dimension "x": empty list of values`},
		{[]Dim{{Name: "x", Values: []int64{1, 3, 2}}}, `dimension "x": values must be strictly increasing`},
		{[]Dim{{Name: "x", Values: []int64{1, 1}}}, `dimension "x": values must be strictly increasing`},
		{[]Dim{{Name: "x", Kind: Pow2, Min: 0, Max: 8}}, `dimension "x": a pow2 dimension needs min >= 1`},
		{[]Dim{{Name: "x", Kind: LogInt, Min: 0, Max: 8, Steps: 3}}, `dimension "x": a logint dimension needs min >= 1`},
		{[]Dim{{Name: "x", Kind: LogInt, Min: 1, Max: 8, Steps: 1}}, `dimension "x": a logint dimension needs steps >= 2`},
		{[]Dim{{Name: "x", Kind: Int, Min: 0, Max: 8, Step: -1}}, `dimension "x": negative step`},
		{[]Dim{{Name: "x", Kind: Int, Min: -1 << 62, Max: 1 << 62}}, `dimension "x": `},
		{[]Dim{{Name: "x", Kind: Kind(9), Min: 0, Max: 8}}, `dimension "x": unknown kind 9`},
		{[]Dim{{Name: "", Min: 0, Max: 8}}, "dimension 0 has no name"},
		{[]Dim{{Name: "a b", Min: 0, Max: 8}}, `dimension "a b": name may not contain`},
		{[]Dim{{Name: "a", Min: 0, Max: 8}, {Name: "a", Min: 0, Max: 8}}, `dimension "a" appears twice`},
		{[]Dim{big, {Name: "b2", Max: 1 << 16}, {Name: "b3", Max: 1 << 16}, {Name: "b4", Max: 1 << 16}}, `dimension "b4": the space would have more than 2^62 points`},
	} {
		_, err := NewSpace(tc.dims...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSpace(%+v) = %v, want an error containing %q", tc.dims, err, tc.want)
		}
	}
	if _, err := NewSpace(); !errors.Is(err, ErrEmptySpace) {
		t.Errorf("NewSpace() = %v, want ErrEmptySpace", err)
	}
}

func TestIndexAtRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "dims")
		var dims []Dim
		for i := range n {
			lo := rapid.Int64Range(-5, 5).Draw(t, "min")
			dims = append(dims, Dim{Name: string(rune('a' + i)), Min: lo, Max: lo + rapid.Int64Range(0, 6).Draw(t, "width")})
		}
		s, err := NewSpace(dims...)
		if err != nil {
			t.Fatal(err)
		}
		idx := rapid.Int64Range(0, s.Size()-1).Draw(t, "idx")
		p := s.At(idx)
		if !s.Contains(p) || s.Index(p) != idx {
			t.Fatalf("At(%d) = %v, Index = %d", idx, p, s.Index(p))
		}
		q, err := s.PointOf(s.Params(p))
		if err != nil || !q.Equal(p) {
			t.Fatalf("PointOf(Params(%v)) = %v, %v", p, q, err)
		}
		// Parameters in another order name the same point.
		ps := s.Params(p)
		slices.Reverse(ps)
		if q, err := s.PointOf(ps); err != nil || !q.Equal(p) {
			t.Fatalf("PointOf(reversed) = %v, %v", q, err)
		}
	})
}

func TestPointOfAndNearest(t *testing.T) {
	s, err := NewSpace(TableIVSequential()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PointOf(Params{{"stripe-count", 4}, {"strip-size", 3 * mib}, {"transfer-size", mib}}); err == nil || !strings.Contains(err.Error(), `"strip-size": 3145728 is not on the grid`) {
		t.Errorf("off-grid value: %v", err)
	}
	if _, err := s.PointOf(Params{{"stripe-count", 4}}); err == nil {
		t.Error("too few parameters accepted")
	}
	if _, err := s.PointOf(Params{{"stripe-count", 4}, {"strip-size", mib}, {"bogus", mib}}); err == nil || !strings.Contains(err.Error(), `no value for dimension "transfer-size"`) {
		t.Errorf("wrong name: %v", err)
	}
	p, err := s.Nearest(Params{{"stripe-count", 5}, {"strip-size", 23 * mib}, {"transfer-size", 5 * mib}})
	if err != nil {
		t.Fatal(err)
	}
	want := Params{{"stripe-count", 5}, {"strip-size", 32 * mib}, {"transfer-size", 4 * mib}}
	if got := s.Params(p); !slices.Equal(got, want) {
		t.Errorf("Nearest = %v, want %v", got, want)
	}
	if _, err := s.Nearest(Params{{"stripes", 5}}); err == nil || !strings.Contains(err.Error(), `no dimension "stripes"`) {
		t.Errorf("Nearest with unknown name: %v", err)
	}
	if got := s.Params(p).String(); got != "stripe-count=5 strip-size=33554432 transfer-size=4194304" {
		t.Errorf("String = %q", got)
	}
	if s.Contains(Point{0, 0}) || s.Contains(Point{160, 0, 0}) || s.Contains(Point{0, -1, 0}) {
		t.Error("Contains accepts points outside the space")
	}
}
