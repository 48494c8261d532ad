package hdf5

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func unlim() Dim         { return Dim{Unlimited: true} }
func fixed(n uint64) Dim { return Dim{Len: n} }

// The thesis' cases (section 5.2) and the rule's other branches, with the
// numbers worked out by hand from the C code.
func TestDefaultChunks(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name      string
		dims      []Dim
		elem      uint64
		def       uint64
		orig, fix []uint64
		origB     uint64 // bytes of one chunk under the original rule
	}{
		// The thesis' finding: only an unlimited dimension, NC_BYTE. One
		// byte per chunk, so 10 MiB are 10,485,760 chunks (0.01 MiB/s);
		// fixed, one chunk is the whole 4 MiB.
		{"unlimited only, NC_BYTE", []Dim{unlim()}, 1, 0, []uint64{1}, []uint64{4 * mib}, 1},
		{"unlimited only, NC_DOUBLE", []Dim{unlim()}, 8, 0, []uint64{1}, []uint64{512 << 10}, 8},
		{"unlimited only, custom default", []Dim{unlim()}, 4, 1 << 16, []uint64{1}, []uint64{1 << 14}, 4},
		// The element is larger than the default: one element, not 0.
		{"unlimited only, huge element", []Dim{unlim()}, 8 * mib, 0, []uint64{1}, []uint64{1}, 8 * mib},
		// A record dimension beside a fixed one: the fixed one gets the
		// default share, capped at its length. The fix changes nothing.
		{"record of 1000 floats", []Dim{unlim(), fixed(1000)}, 4, 0, []uint64{1, 1000}, []uint64{1, 1000}, 4000},
		// (4 MiB / 4e6 B) * 1e6 - 0.5 = 1048575.5: capped at 1e6.
		{"record of 1e6 floats", []Dim{unlim(), fixed(1e6)}, 4, 0, []uint64{1, 1e6}, []uint64{1, 1e6}, 4e6},
		// 1e7 doubles: 4 MiB / 8e7 B * 1e7 - .5 = 524287.5 -> 524287;
		// 1e7 % 524287 = 38547 <= 1e6, no overhang cut.
		{"record of 1e7 doubles", []Dim{unlim(), fixed(1e7)}, 8, 0, []uint64{1, 524287}, []uint64{1, 524287}, 524287 * 8},
		// Two unlimited dimensions: the thesis left them at 1 x 1.
		{"two unlimited", []Dim{unlim(), unlim()}, 4, 0, []uint64{1, 1}, []uint64{1, 1}, 4},
		// Fixed 1000 x 1000 doubles: sqrt(4 MiB / 8e6 B) * 1000 - .5 =
		// 723.08 -> 723; overhang cuts of 100: 1000%723=277 -> 623,
		// 1000%623=377 -> 523, 477 -> 423, 154 -> 323, 1000%323=31 stop.
		{"1000x1000 doubles", []Dim{fixed(1000), fixed(1000)}, 8, 0, []uint64{323, 323}, []uint64{323, 323}, 323 * 323 * 8},
		// A short dimension (10 * 10000 < 1e6) is kept whole; the long one
		// gets 4 MiB / 4e7 B * 1e6 - .5 = 104857.1 -> 104857.
		{"short beside long", []Dim{fixed(10), fixed(1e6)}, 4, 0, []uint64{10, 104857}, []uint64{10, 104857}, 10 * 104857 * 4},
		// A small fixed variable fits in one chunk.
		{"small fixed", []Dim{fixed(7)}, 2, 0, []uint64{7}, []uint64{7}, 14},
		// An 8 GiB default on 1e10 bytes: 2^33 - 1 (the -0.5 truncated),
		// halved to 2^32 - 1 (fits the limit); then the overhang:
		// 1e10 % (2^32-1) = 1410065410 > 1e9, cut by 1e9 to 3294967295,
		// whose remainder 115098115 is under 10%.
		{"halved below 4 GiB", []Dim{fixed(1e10)}, 1, 8 << 30, []uint64{3294967295}, []uint64{3294967295}, 3294967295},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct {
				rule ChunkRule
				want []uint64
			}{{RuleOriginal, tc.orig}, {RuleThesis, tc.fix}} {
				got, err := DefaultChunks(r.rule, tc.dims, tc.elem, tc.def)
				if err != nil {
					t.Fatalf("%v: %v", r.rule, err)
				}
				if !slices.Equal(got, r.want) {
					t.Errorf("%v: chunks %v, want %v", r.rule, got, r.want)
				}
			}
			orig, _ := DefaultChunks(RuleOriginal, tc.dims, tc.elem, tc.def)
			if b := ChunkBytes(orig, tc.elem); b != tc.origB {
				t.Errorf("original chunk bytes %d, want %d", b, tc.origB)
			}
		})
	}
}

// The thesis' experiment: 10 MiB of NC_BYTE in an unlimited-only variable.
func TestUnlimitedOnlyChunkCount(t *testing.T) {
	extent := []uint64{10 << 20}
	for _, tc := range []struct {
		rule ChunkRule
		want uint64
	}{{RuleOriginal, 10 << 20}, {RuleThesis, 3}} {
		c, err := DefaultChunks(tc.rule, []Dim{unlim()}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		n, err := ChunkCount(extent, c)
		if err != nil {
			t.Fatal(err)
		}
		if n != tc.want {
			t.Errorf("%v: %d chunks for 10 MiB, want %d", tc.rule, n, tc.want)
		}
	}
}

func TestDefaultChunksErrors(t *testing.T) {
	tests := []struct {
		name string
		rule ChunkRule
		dims []Dim
		elem uint64
	}{
		{"scalar", RuleOriginal, nil, 4},
		{"zero element", RuleOriginal, []Dim{fixed(3)}, 0},
		{"element over 4 GiB", RuleOriginal, []Dim{fixed(3)}, 1 << 33},
		{"fixed of length 0", RuleThesis, []Dim{fixed(0)}, 4},
		{"unlimited with a length", RuleOriginal, []Dim{{Len: 5, Unlimited: true}}, 4},
		{"unknown rule", ChunkRule(9), []Dim{fixed(3)}, 4},
	}
	for _, tc := range tests {
		if _, err := DefaultChunks(tc.rule, tc.dims, tc.elem, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := ChunkCount([]uint64{4}, []uint64{0}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero chunk: %v", err)
	}
	if _, err := ChunkCount([]uint64{4, 4}, []uint64{2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("rank mismatch: %v", err)
	}
}

func genDims(t *rapid.T) []Dim {
	n := rapid.IntRange(1, 4).Draw(t, "ndims")
	dims := make([]Dim, n)
	for i := range dims {
		if rapid.Bool().Draw(t, "unlimited") {
			dims[i] = unlim()
		} else {
			dims[i] = fixed(rapid.Uint64Range(1, 1<<30).Draw(t, "len"))
		}
	}
	return dims
}

// Every chunk length is in [1, len] (1 for an unlimited dimension under
// the original rule), the chunk fits check_chunksizes' limit, and the two
// rules differ only on the unlimited-only one-dimensional variable.
func TestPropertyDefaultChunks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dims := genDims(t)
		elem := rapid.SampledFrom([]uint64{1, 2, 4, 8, 16, 1000}).Draw(t, "elem")
		def := rapid.SampledFrom([]uint64{0, 1 << 10, 1 << 20, 64 << 20, 16 << 30}).Draw(t, "default")
		orig, err := DefaultChunks(RuleOriginal, dims, elem, def)
		if err != nil {
			t.Fatal(err)
		}
		fix, err := DefaultChunks(RuleThesis, dims, elem, def)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range dims {
			c := orig[i]
			if c < 1 || (d.Unlimited && c != 1) || (!d.Unlimited && c > d.Len) {
				t.Fatalf("dims %v: chunk %v out of range at %d", dims, orig, i)
			}
		}
		if chunkBytes(orig, elem) > maxChunkBytes && ChunkBytes(orig, 1) > 1 {
			t.Fatalf("dims %v elem %d: chunk %v is %g bytes, over the limit", dims, elem, orig, chunkBytes(orig, elem))
		}
		special := len(dims) == 1 && dims[0].Unlimited
		if !special && !slices.Equal(orig, fix) {
			t.Fatalf("dims %v: rules differ: %v vs %v", dims, orig, fix)
		}
		if special && fix[0]*elem > max(def, DefaultChunkSize*boolU(def == 0)) && fix[0] != 1 {
			t.Fatalf("thesis chunk %d x %d over the default %d", fix[0], elem, def)
		}
	})
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
