package dock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/pario/pario/template/seg"
	"pgregory.net/rapid"
)

func gen(t interface{ Fatal(...any) }, cfg Config) ([]byte, []int64) {
	var b bytes.Buffer
	sizes, err := Generate(&b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), sizes
}

// TestGeneratedParsesIntoMolecules: over seeds and sizes, BSize (and BLen
// over the length-prefixed form) cuts the generated file into exactly
// the molecules generated, and each parses whole.
func TestGeneratedParsesIntoMolecules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			Molecules: rapid.IntRange(0, 12).Draw(t, "molecules"),
			MeanBytes: rapid.Int64Range(0, 3000).Draw(t, "mean"),
			MaxM:      rapid.IntRange(1, MaxM).Draw(t, "maxM"),
			Seed:      rapid.Uint64().Draw(t, "seed"),
			LenPrefix: rapid.Bool().Draw(t, "prefix"),
		}
		data, sizes := gen(t, cfg)
		fn, skip := BSize, int64(0)
		if cfg.LenPrefix {
			fn, skip = BLen, intSize
		}
		segs, err := seg.All(fn, bytes.NewReader(data), 0, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		// A part whose end is not known (the template's Bounds{}) ends
		// where the file does.
		if open, err := seg.All(fn, bytes.NewReader(data), 0, math.MaxInt64); err != nil || len(open) != len(segs) {
			t.Fatalf("unbounded part: %d segments, %v; bounded: %d", len(open), err, len(segs))
		}
		if len(segs) != len(sizes) {
			t.Fatalf("%d segments, generated %d molecules", len(segs), len(sizes))
		}
		for i, s := range segs {
			if s.Extent != sizes[i] {
				t.Fatalf("segment %d: extent %d, generated %d", i, s.Extent, sizes[i])
			}
			rec := data[s.Base+skip : s.Base+s.Extent]
			mol, err := Parse(rec)
			if err != nil {
				t.Fatalf("segment %d: %v", i, err)
			}
			if len(mol.Atoms) != 4*mol.N+1 {
				t.Fatalf("segment %d: %d atoms for N = %d", i, len(mol.Atoms), mol.N)
			}
			// The chains CEDESize finds are the molecule's, and the
			// trailing E is left out.
			chains, err := seg.All(CEDESize, bytes.NewReader(rec), intSize, int64(len(rec)))
			if err != nil {
				t.Fatalf("segment %d: chains: %v", i, err)
			}
			if len(chains) != mol.N {
				t.Fatalf("segment %d: %d chains, N = %d", i, len(chains), mol.N)
			}
		}
		if again, _ := gen(t, cfg); !bytes.Equal(again, data) {
			t.Fatal("the same config generated a different file")
		}
	})
}

func TestSeedSize(t *testing.T) {
	data, sizes := gen(t, Seed())
	if len(sizes) != 50 {
		t.Fatalf("%d molecules", len(sizes))
	}
	// The seed: about 350 KB a molecule, about 17 MB.
	if mb := float64(len(data)) / 1e6; mb < 15 || mb > 19.5 {
		t.Fatalf("%.1f MB, the seed's is about 17", mb)
	}
}

func le(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func atom(m int) []byte { return append(le(int32(m)), make([]byte, m*elemSize)...) }

func TestSegmentationErrors(t *testing.T) {
	// N = 0: one trailing E of 2 elements, 4 + 4 + 10 bytes.
	good := append(le(0), atom(2)...)
	for _, tc := range []struct {
		name   string
		fn     seg.Func
		data   []byte
		pmax   int64 // 0: len(data)
		want   int64
		format bool
	}{
		{"BSize one B", BSize, good, 0, 18, false},
		{"BSize at the end", BSize, nil, 0, -1, false},
		{"BSize N negative", BSize, le(-1), 0, 0, true},
		{"BSize N huge", BSize, le(MaxN + 1), 0, 0, true},
		{"BSize truncated N", BSize, []byte{1, 0}, 0, 0, true},
		{"BSize M too big", BSize, le(0, MaxM+1), 0, 0, true},
		{"BSize atom past the part", BSize, good, 17, 0, true},
		{"BSize truncated atoms", BSize, le(1, 0, 0), 0, 0, true},
		{"BLen", BLen, append(le(3), 1, 2, 3), 0, 7, false},
		{"BLen zero length", BLen, le(0), 0, 0, true},
		{"BLen past the end", BLen, append(le(9), 1), 0, 0, true},
		{"CEDESize trailing E", CEDESize, atom(2), 0, -1, false},
		{"CEDESize chain", CEDESize, bytes.Join([][]byte{atom(1), atom(0), atom(3), atom(1), atom(2)}, nil), 0, 4*4 + 5*5, false},
		{"CEDESize short chain", CEDESize, bytes.Join([][]byte{atom(1), atom(0)}, nil), 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pmax := tc.pmax
			if pmax == 0 {
				pmax = int64(len(tc.data))
			}
			got, err := tc.fn(bytes.NewReader(tc.data), 0, pmax, 0)
			if tc.format {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("got %d, %v; want an ErrFormat", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	for _, name := range []string{"BSize", "BLen", "CEDESize"} {
		if _, err := seg.Lookup(name); err != nil {
			t.Error(err)
		}
	}
}

// TestProcess: the output atom is well formed, depends only on the input
// and the work, and output sizes vary.
func TestProcess(t *testing.T) {
	data, _ := gen(t, Config{Molecules: 3, MeanBytes: 2000, MaxM: 20, Seed: 1})
	segs, err := seg.All(BSize, bytes.NewReader(data), 0, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	sizes := map[int]bool{}
	for _, s := range segs {
		mol, err := Parse(data[s.Base : s.Base+s.Extent])
		if err != nil {
			t.Fatal(err)
		}
		out := OutHeader(nil, mol.N)
		for _, a := range mol.Atoms {
			out = Process(out, a, 3)
		}
		if again := OutHeader(nil, mol.N); !bytes.Equal(out, func() []byte {
			for _, a := range mol.Atoms {
				again = Process(again, a, 3)
			}
			return again
		}()) {
			t.Fatal("Process is not deterministic")
		}
		sizes[len(out)] = true
		all = append(all, out...)
	}
	mols, atoms, err := Stats(all)
	if err != nil || mols != 3 {
		t.Fatalf("Stats: %d molecules, %d atoms, %v", mols, atoms, err)
	}
	if len(sizes) < 2 {
		t.Fatal("every output record has the same size")
	}
}

// FuzzBSize: on any bytes, BSize never panics, and an extent it returns
// stays inside the part and parses as exactly one molecule.
func FuzzBSize(f *testing.F) {
	f.Add(append(le(0), atom(2)...), int64(0))
	f.Add(le(1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0), int64(0))
	f.Add(le(-5), int64(0))
	data, _ := gen(f, Config{Molecules: 2, MeanBytes: 300, MaxM: 4, Seed: 9})
	f.Add(data, int64(0))
	f.Fuzz(func(t *testing.T, data []byte, cur int64) {
		if cur < 0 || cur > int64(len(data)) {
			cur = 0
		}
		n, err := BSize(bytes.NewReader(data), 0, int64(len(data)), cur)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error not ErrFormat: %v", err)
			}
			return
		}
		if n == -1 {
			if cur != int64(len(data)) {
				t.Fatalf("-1 at %d of %d bytes", cur, len(data))
			}
			return
		}
		if n <= 0 || cur+n > int64(len(data)) {
			t.Fatalf("extent %d at %d leaves %d bytes", n, cur, len(data))
		}
		if _, err := Parse(data[cur : cur+n]); err != nil {
			t.Fatalf("BSize's segment does not parse: %v", err)
		}
		for _, fn := range []seg.Func{BLen, CEDESize} {
			fn(bytes.NewReader(data), 0, int64(len(data)), cur)
		}
	})
}
