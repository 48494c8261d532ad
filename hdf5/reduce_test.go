package hdf5

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Each reduction on lengths that break it, and on lengths that do not.
func TestReduceMax(t *testing.T) {
	const (
		two31 = uint64(1) << 31
		two32 = uint64(1) << 32
	)
	tests := []struct {
		name    string
		lengths []uint64
		// want for MPI_INT, MPI_UNSIGNED, 64-bit
		i32, u32, u64 uint64
	}{
		{"small", []uint64{10, 700, 3}, 700, 700, 700},
		{"2^31-1 is still fine", []uint64{two31 - 1, 1}, two31 - 1, two31 - 1, two31 - 1},
		// 2^31 as int32 is -2^31: the maximum goes to the rank with 5.
		{"2^31 loses to 5 in MPI_INT", []uint64{two31, 5}, 5, two31, two31},
		// Alone, the negative int is sign-extended into the 64-bit length.
		{"2^31 alone sign-extends", []uint64{two31}, 0xFFFFFFFF80000000, two31, two31},
		{"3e9 in MPI_INT", []uint64{3e9, 2e9}, 2e9, 3e9, 3e9},
		// MPI_UNSIGNED wraps at 2^32: 2^32+5 reduces as 5.
		{"2^32+5 loses to 10 in MPI_UNSIGNED", []uint64{two32 + 5, 10}, 10, 10, two32 + 5},
		{"2^32 alone is 0 in MPI_UNSIGNED", []uint64{two32}, 0, 0, two32},
		{"2^40", []uint64{1 << 40, 1 << 20}, 1 << 20, 1 << 20, 1 << 40},
	}
	for _, tc := range tests {
		for _, r := range []struct {
			red  Reduction
			want uint64
		}{{ReduceInt32, tc.i32}, {ReduceUint32, tc.u32}, {ReduceUint64, tc.u64}} {
			got, err := ReduceMax(r.red, tc.lengths)
			if err != nil {
				t.Fatalf("%s %v: %v", tc.name, r.red, err)
			}
			if got != r.want {
				t.Errorf("%s: %v gives %d (%#x), want %d", tc.name, r.red, got, got, r.want)
			}
		}
	}
}

func TestReduceMaxErrors(t *testing.T) {
	if _, err := ReduceMax(ReduceUint64, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("no lengths: %v", err)
	}
	if _, err := ReduceMax(Reduction(0), []uint64{1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown reduction: %v", err)
	}
}

// Below its limit every reduction is the true maximum; the 64-bit one
// always is; at or past the limit a counterexample exists (the table
// above), so the limit is tight.
func TestPropertyReduceBelowLimit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		red := rapid.SampledFrom([]Reduction{ReduceInt32, ReduceUint32, ReduceUint64}).Draw(t, "reduction")
		hi := uint64(1<<64 - 1)
		if lim := ReduceLimit(red); lim != 0 {
			hi = lim - 1
		}
		ls := rapid.SliceOfN(rapid.Uint64Range(0, hi), 1, 16).Draw(t, "lengths")
		got, err := ReduceMax(red, ls)
		if err != nil {
			t.Fatal(err)
		}
		if want := slices.Max(ls); got != want {
			t.Fatalf("%v over %v: %d, want %d", red, ls, got, want)
		}
	})
}
