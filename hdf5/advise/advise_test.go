package advise

import (
	"errors"
	"flag"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pario/pario/internal/golden"
	"github.com/pario/pario/units"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const mib = 1 << 20

// The thesis' scenarios: its 1-OST pattern through unpatched NetCDF-4, the
// unlimited-only variable, a chunked HDF5 program with fill on, and a
// disjoint HDF5 program on 64 KiB strips.
var scenarios = map[string]Access{
	"netcdf4-1ost": {API: NetCDF4, Dims: []uint64{10240, mib}, Type: "byte", Ranks: 10, Pattern: Interleaved,
		Block: mib, Transfer: mib, Alignment: 1, StripSize: mib, StripeCount: 10},
	"hdf5-1ost-aligned": {API: HDF5, Dims: []uint64{10240, mib}, Type: "byte", Ranks: 10, Pattern: Interleaved,
		Block: mib, Transfer: mib, Alignment: mib, StripSize: mib, StripeCount: 10},
	"netcdf4-unlimited-only": {API: NetCDF4, Dims: []uint64{10 * mib}, Unlimited: true, Type: "byte", Ranks: 1,
		Transfer: mib, Alignment: 1, StripSize: mib, StripeCount: 1},
	"hdf5-chunked-fill": {API: HDF5, Dims: []uint64{4096, 1024}, Type: "double", Ranks: 4, Layout: Chunked,
		Chunk: []uint64{16, 1024}, Collective: false, Fill: true, Transfer: 128 << 10, Alignment: 1,
		StripSize: 64 << 10, StripeCount: 4, Servers: 8},
	"hdf5-disjoint-64k": {API: HDF5, Dims: []uint64{1 << 27}, Type: "float", Ranks: 8, Transfer: mib,
		Collective: true, Alignment: 1, StripSize: 64 << 10, StripeCount: 4, Servers: 8},
	"netcdf4-records-past-2^31": {API: NetCDF4, Dims: []uint64{3 << 30}, Unlimited: true, Type: "byte", Ranks: 4,
		Pattern: Interleaved, Block: 4 * mib, Transfer: 4 * mib, Alignment: 1, Chunk: []uint64{4 * mib},
		StripSize: 4 * mib, StripeCount: 4},
}

func TestAdviseGolden(t *testing.T) {
	for name, a := range scenarios {
		t.Run(name, func(t *testing.T) {
			ad, err := Advise(a)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), []byte(ad.Text()), *update)
		})
	}
}

// The findings, asserted on the values rather than the text.
func TestAdviseFindings(t *testing.T) {
	ad, err := Advise(scenarios["netcdf4-1ost"])
	if err != nil {
		t.Fatal(err)
	}
	if ad.Now.Actual.Class() != "interleaved, 2-OST" || ad.Then.Actual.Class() != "interleaved, 1-OST" {
		t.Errorf("classes now %q, advised %q", ad.Now.Actual.Class(), ad.Then.Actual.Class())
	}
	if it := ad.Items[0]; it.Topic != "alignment" || !it.Change || !strings.Contains(it.Advice, "nc_set_alignment(0, 1048576)") {
		t.Errorf("alignment item %+v", it)
	}
	// HDF5 with the alignment set: nothing to change about it.
	ad, err = Advise(scenarios["hdf5-1ost-aligned"])
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range ad.Items {
		if it.Change {
			t.Errorf("aligned HDF5 1-OST: %s should be kept: %+v", it.Topic, it)
		}
	}
	ad, err = Advise(scenarios["netcdf4-unlimited-only"])
	if err != nil {
		t.Fatal(err)
	}
	chunk := item(t, ad, "chunk shape")
	if !strings.Contains(chunk.Now, "default 1 (1 B per chunk, 10485760 chunks)") || !strings.Contains(chunk.Now, "thesis' rule gives 4194304 (3 chunks)") {
		t.Errorf("chunk item now %q", chunk.Now)
	}
	ad, err = Advise(scenarios["netcdf4-records-past-2^31"])
	if err != nil {
		t.Fatal(err)
	}
	if red := item(t, ad, "dimension length"); !red.Change || !strings.Contains(red.Effect, "MPI_UNSIGNED_LONG_LONG 3221225472") {
		t.Errorf("reduction item %+v", red)
	}
	ad, err = Advise(scenarios["hdf5-chunked-fill"])
	if err != nil {
		t.Fatal(err)
	}
	if f := item(t, ad, "fill values"); !f.Change {
		t.Errorf("fill item %+v", f)
	}
	if m := item(t, ad, "I/O mode"); !m.Change || !strings.HasPrefix(m.Advice, "collective") {
		t.Errorf("mode item %+v", m)
	}
}

func item(t *testing.T, ad *Advice, topic string) Item {
	t.Helper()
	for _, it := range ad.Items {
		if it.Topic == topic {
			return it
		}
	}
	t.Fatalf("no %s item in %+v", topic, ad.Items)
	return Item{}
}

func TestAdviseErrors(t *testing.T) {
	ok := scenarios["hdf5-1ost-aligned"]
	tests := []struct {
		name   string
		change func(a *Access)
		want   string
	}{
		{"chunk larger than the dataset", func(a *Access) { a.Layout = Chunked; a.Chunk = []uint64{20000, 1} }, "chunk 20000x1 is larger than the dataset 10240x1048576 in dimension 0"},
		{"alignment 0", func(a *Access) { a.Alignment = 0 }, "--alignment must be at least 1"},
		{"chunk rank", func(a *Access) { a.Chunk = []uint64{4} }, "chunk 4 has 1 dimensions, the dataset 10240x1048576 has 2"},
		{"chunk on contiguous", func(a *Access) { a.Layout = Contiguous; a.Chunk = []uint64{1, 1} }, "needs a chunked layout"},
		{"HDF5 chunked without shape", func(a *Access) { a.Layout = Chunked }, "HDF5 needs a chunk shape"},
		{"unlimited contiguous", func(a *Access) { a.Unlimited = true; a.Layout = Contiguous }, "unlimited dimension needs a chunked layout"},
		{"unknown api", func(a *Access) { a.API = "pnetcdf" }, `api "pnetcdf"`},
		{"unknown type", func(a *Access) { a.Type = "complex" }, `element type "complex"`},
		{"uneven split", func(a *Access) { a.Pattern = Disjoint; a.Block = 0; a.Ranks = 3 }, "do not split evenly over 3 ranks"},
		{"transfer not dividing", func(a *Access) { a.Transfer = 3 << 19 }, "does not divide"},
		{"stripe count over servers", func(a *Access) { a.Servers = 4 }, "--stripe-count 10 is more than the 4 servers (--servers)"},
		{"zero strip", func(a *Access) { a.StripSize = 0 }, "--strip-size must be positive"},
		{"no dims", func(a *Access) { a.Dims = nil }, "no dimensions"},
		{"too large", func(a *Access) { a.Dims = []uint64{1 << 40, 1 << 40} }, "too large: advise takes datasets under 4 EiB (2^62 bytes)"},
		// The flags are named (they said "ranks must be positive").
		{"no ranks", func(a *Access) { a.Ranks = 0 }, "--ranks must be positive, got 0"},
		{"no stripes", func(a *Access) { a.StripeCount = -5 }, "--stripe-count must be positive, got -5"},
		{"negative servers", func(a *Access) { a.Servers = -5 }, "--servers must not be negative, got -5"},
		{"block with disjoint", func(a *Access) { a.Pattern = Disjoint }, "--block is the turn size"},
		{"alignment past int64", func(a *Access) { a.Alignment = math.MaxInt64 }, "--alignment 9223372036854775807: the dataset's 10737418240 bytes, aligned to it after a header of 2048, would end past the largest file offset"},
		{"header past int64", func(a *Access) { a.Header = math.MaxInt64 }, "--header 9223372036854775807: the dataset's 10737418240 bytes after it would end past the largest file offset"},
		{"transfers past the analysis", func(a *Access) { a.Type, a.Transfer = "byte", 1 }, "--transfer 1: 671088640 transfers to follow, more than the analysis takes"},
		{"header aligned to the strip past int64", func(a *Access) { a.API, a.Header = NetCDF4, math.MaxInt64-10<<30-5 }, "--header 9223372026117357562: the dataset's 10737418240 bytes, aligned to the strip (1048576 bytes), would end past"},
	}
	for _, tc := range tests {
		a := ok
		a.Dims = append([]uint64(nil), ok.Dims...)
		tc.change(&a)
		_, err := Advise(a)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestParseDims(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // FormatDims, or "" for an error
	}{
		{"1024x1024", "1024x1024"},
		{"10,20,30", "10x20x30"},
		{" 7 ", "7"},
		{"", ""}, {"x", ""}, {"1*x2", ""}, {"1,,2", ""}, {"1x 2", "1x2"}, {"10x", ""}, {"x10", ""}, {"10xx2", ""}, {"0x4", ""}, {"-1", ""}, {"1.5", ""},
		{"18446744073709551616", ""},
	} {
		d, err := ParseDims("--dims", tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("ParseDims(%q) = %v, want an error", tc.in, d)
		case tc.want != "" && (err != nil || FormatDims(d) != tc.want):
			t.Errorf("ParseDims(%q) = %v, %v; want %s", tc.in, d, err, tc.want)
		case err != nil && !strings.HasPrefix(err.Error(), "--dims: "):
			t.Errorf("ParseDims(%q): error %q does not name the flag", tc.in, err)
		}
	}
}

func FuzzParseDims(f *testing.F) {
	for _, s := range []string{"1024x1024", "1,2,3", "x", "0", "99999999999999999999x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDims("--dims", s)
		if err != nil {
			return
		}
		back, err := ParseDims("--dims", FormatDims(d))
		if err != nil || FormatDims(back) != FormatDims(d) {
			t.Fatalf("%q -> %v -> %q does not parse back: %v", s, d, FormatDims(d), err)
		}
		for _, n := range d {
			if n == 0 {
				t.Fatalf("%q gave a zero length", s)
			}
		}
	})
}

// Any valid description gets advice without error; with the advice taken
// no request touches more datafiles than its size needs, and a count that
// divides the ranks with the strip of one turn gives 1-OST.
func TestPropertyAdvise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ranks := rapid.IntRange(1, 8).Draw(t, "ranks")
		turn := int64(rapid.IntRange(1, 16).Draw(t, "turn64k")) << 16
		turns := rapid.IntRange(1, 8).Draw(t, "turns")
		a := Access{
			API:         rapid.SampledFrom([]API{HDF5, NetCDF4}).Draw(t, "api"),
			Dims:        []uint64{uint64(ranks * turns), uint64(turn)},
			Type:        "byte",
			Ranks:       ranks,
			Pattern:     Interleaved,
			Block:       turn,
			Transfer:    turn,
			Alignment:   1,
			Header:      rapid.Int64Range(0, 1<<20).Draw(t, "header"),
			StripSize:   int64(rapid.IntRange(1, 32).Draw(t, "strip64k")) << 16,
			StripeCount: rapid.IntRange(1, 8).Draw(t, "count"),
			Fill:        rapid.Bool().Draw(t, "fill"),
			Collective:  rapid.Bool().Draw(t, "collective"),
		}
		a.Servers = a.StripeCount + rapid.IntRange(0, 4).Draw(t, "spare")
		ad, err := Advise(a)
		if err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
		then := ad.Then.Actual
		if then.Straddling != 0 && ad.IOR.Transfer <= mustStrip(t, ad) {
			t.Fatalf("%+v: advised layout %s still splits %d requests", a, ad.Layout, then.Straddling)
		}
		if mustStrip(t, ad) == turn && a.Ranks%ad.Layout.Datafiles == 0 && then.X != 1 {
			t.Fatalf("%+v: advised %s gives %s, want 1-OST", a, ad.Layout, then.Class())
		}
		if ad.Text() == "" {
			t.Fatal("empty text")
		}
	})
}

func mustStrip(t *rapid.T, ad *Advice) int64 {
	v, ok := strings.CutPrefix(ad.Layout.Params, "strip_size=")
	if !ok {
		t.Fatalf("layout %s has no strip_size", ad.Layout)
	}
	n, err := units.ParseSize(v)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFromStored(t *testing.T) {
	base := func() Access {
		return Access{Ranks: 2, Transfer: 256 << 10, StripSize: mib, StripeCount: 2}
	}
	nc := Stored{Path: "f.nc", Name: "data", NetCDF4: true, Dims: []uint64{2 * mib}, Unlimited: []bool{false},
		ElemSize: 1, Class: "integer", Layout: "contiguous", Addr: 33556480, FillTime: "never", FillValue: "default"}
	a := base()
	if err := FromStored(&a, nc); err != nil {
		t.Fatal(err)
	}
	ad, err := Advise(a)
	if err != nil {
		t.Fatal(err)
	}
	if it := ad.Items[0]; !it.Change || !strings.Contains(it.Now, "data at byte 33556480 (read from the file)") || !strings.Contains(it.Advice, "nc_set_alignment") {
		t.Errorf("alignment item %+v", it)
	}
	// An aligned HDF5 file: nothing to change about the alignment.
	h := nc
	h.NetCDF4, h.Addr, h.Layout, h.Chunk, h.Unlimited, h.FillTime = false, 2*mib, "chunked", []uint64{mib}, []bool{true}, "alloc"
	a = base()
	if err := FromStored(&a, h); err != nil {
		t.Fatal(err)
	}
	if a.API != HDF5 || !a.Unlimited || a.Layout != Chunked || !a.Fill {
		t.Errorf("access from an HDF5 file: %+v", a)
	}
	ad, err = Advise(a)
	if err != nil {
		t.Fatal(err)
	}
	if it := ad.Items[0]; it.Change {
		t.Errorf("aligned file: alignment item %+v", it)
	}
	for _, tc := range []struct {
		edit func(*Stored)
		want string
	}{
		{func(s *Stored) { s.Dims, s.Unlimited = nil, nil }, "is a scalar"},
		{func(s *Stored) { s.Dims, s.Unlimited = []uint64{4, 4}, []bool{false, true} }, "dimension 1 is unlimited"},
		{func(s *Stored) { s.ElemSize = 16 }, `f.nc: dataset "data" has integer elements of 16 bytes (advise knows 1, 2, 4 and 8)`},
		{func(s *Stored) { s.Layout = "compact" }, "compact layout"},
		{func(s *Stored) { s.Dims, s.Unlimited = []uint64{0}, []bool{true} }, "no records written yet"},
		{func(s *Stored) { s.FillTime = "sometimes" }, `f.nc: dataset "data": fill time "sometimes"`},
		{func(s *Stored) { s.FillValue = "" }, `f.nc: dataset "data": fill value state ""`},
	} {
		s := nc
		tc.edit(&s)
		a := base()
		if err := FromStored(&a, s); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

// Elements smaller than IOR's 8-byte word: transfers and turns are any
// whole number of elements (IOR's access-size rule refused a 4-byte
// transfer of bytes and a 20-byte dataset of shorts); part of an element
// is refused in the element's words.
func TestAdviseSmallElements(t *testing.T) {
	for _, a := range []Access{
		{Dims: []uint64{mib}, Type: "byte", Ranks: 1, Transfer: 4, Alignment: 1, StripSize: 64 << 10, StripeCount: 1},
		{Dims: []uint64{10}, Type: "short", Ranks: 1, Transfer: 20, Alignment: 1, StripSize: mib, StripeCount: 1},
		{Dims: []uint64{30}, Type: "short", Ranks: 3, Pattern: Interleaved, Block: 2, Transfer: 2, Alignment: 1, StripSize: mib, StripeCount: 1},
	} {
		ad, err := Advise(a)
		if err != nil {
			t.Errorf("Advise(%s of %s, transfer %d): %v", FormatDims(a.Dims), a.Type, a.Transfer, err)
			continue
		}
		if ad.IOR.Transfer != a.Transfer {
			t.Errorf("Advise(%s of %s): IOR transfer %d, want %d", FormatDims(a.Dims), a.Type, ad.IOR.Transfer, a.Transfer)
		}
	}
	for _, tc := range []struct {
		a    Access
		want string
	}{
		{Access{Dims: []uint64{1024}, Type: "double", Ranks: 1, Transfer: 4, Alignment: 1, StripSize: mib, StripeCount: 1},
			"transfer size 4 (--transfer) is not a whole number of double elements (8 bytes each)"},
		{Access{Dims: []uint64{3}, Type: "double", Ranks: 2, Transfer: 4, Alignment: 1, StripSize: mib, StripeCount: 1},
			"the dataset's 3 elements (24 bytes) do not split evenly over 2 ranks"},
		{Access{Dims: []uint64{1024}, Type: "int", Ranks: 2, Pattern: Interleaved, Block: 6, Transfer: 2, Alignment: 1, StripSize: mib, StripeCount: 1},
			"a turn of 6 bytes (--block) is not a whole number of int elements (4 bytes each)"},
	} {
		if _, err := Advise(tc.a); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "access size") {
			t.Errorf("Advise(%s of %s): %v, want an error containing %q", FormatDims(tc.a.Dims), tc.a.Type, err, tc.want)
		}
	}
}

// A transfer that does not divide a rank's turn names --transfer, says
// when it was not given (the default), and suggests one that divides.
func TestAdviseTransferNotDividing(t *testing.T) {
	small := Access{Dims: []uint64{16}, Type: "double", Ranks: 1, Transfer: mib, TransferDefault: true, Alignment: 1, StripSize: mib, StripeCount: 1}
	for _, tc := range []struct {
		edit func(*Access)
		want string
	}{
		{func(*Access) {}, "--transfer (default 1m) does not divide the 128 bytes each rank writes per turn: try --transfer 128"},
		{func(a *Access) { a.TransferDefault = false }, "--transfer 1m does not divide the 128 bytes each rank writes per turn: try --transfer 128"},
		{func(a *Access) { a.TransferDefault, a.Transfer = false, 96 }, "--transfer 96 does not divide the 128 bytes each rank writes per turn: try --transfer 64"},
		{func(a *Access) { a.Dims, a.Ranks, a.TransferDefault, a.Transfer = []uint64{mib}, 2, false, 768<<10 }, "--transfer 768k does not divide the 4194304 bytes each rank writes per turn: try --transfer 512k"},
		{func(a *Access) { a.Pattern = Interleaved }, "the dataset's 128 bytes are not a whole number of turns of 1 rank x --block (default: the transfer size, 1m)"},
		{func(a *Access) { a.Pattern, a.Block, a.Ranks = Interleaved, 96, 3 }, "the dataset's 128 bytes are not a whole number of turns of 3 ranks x --block 96"},
	} {
		a := small
		tc.edit(&a)
		if _, err := Advise(a); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Advise(%+v): %v, want an error containing %q", a, err, tc.want)
		}
	}
}

// divisorUpTo's transfer divides the turn, is whole elements and is the
// largest such up to the size asked for.
func TestDivisorUpTo(t *testing.T) {
	for _, tc := range []struct{ block, want, elem, got int64 }{
		{128, mib, 8, 128},
		{128, 96, 8, 64},
		{4 * mib, 768 << 10, 8, 512 << 10},
		{1000003, mib, 1, 1000003},
		{1000003, 1000, 1, 1}, // a prime: only single bytes divide it
		{3 * 1000003, 1000, 3, 3},
		{24, 20, 4, 12},
	} {
		if got := divisorUpTo(tc.block, tc.want, tc.elem); got != tc.got {
			t.Errorf("divisorUpTo(%d, %d, %d) = %d, want %d", tc.block, tc.want, tc.elem, got, tc.got)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		elem := rapid.SampledFrom([]int64{1, 2, 4, 8}).Draw(t, "elem")
		block := elem * rapid.Int64Range(1, 1<<20).Draw(t, "words")
		want := elem * rapid.Int64Range(1, 1<<21).Draw(t, "wantWords")
		got := divisorUpTo(block, want, elem)
		if got <= 0 || block%got != 0 || got%elem != 0 || got > want {
			t.Fatalf("divisorUpTo(%d, %d, %d) = %d", block, want, elem, got)
		}
		// Within the search's reach it is the largest.
		if block/elem <= 1<<16 {
			for d := got + elem; d <= min(want, block); d += elem {
				if block%d == 0 {
					t.Fatalf("divisorUpTo(%d, %d, %d) = %d, but %d divides too", block, want, elem, got, d)
				}
			}
		}
	})
}

// Fill values are on when HDF5 writes them at allocation: fill time
// ALLOC, or IFSET (HDF5's and NetCDF-4's default) with a user-defined
// value, which NetCDF-4 sets for every variable; IFSET with the library's
// default value writes nothing (HDF5's fill value behaviour table). Before,
// only ALLOC counted: a NetCDF-4 file with fill on read as off.
func TestFromStoredFill(t *testing.T) {
	for _, tc := range []struct {
		time, value string
		on          bool
	}{
		{"ifset", "user", true}, // NetCDF-4's variables, fill not turned off
		{"ifset", "default", false},
		{"ifset", "undefined", false},
		{"alloc", "user", true},
		{"alloc", "default", true}, // the library's zeros
		{"never", "user", false},   // nc_def_var_fill(NC_NOFILL), IOR -O noFill
		{"never", "default", false},
	} {
		a := Access{Ranks: 2, Transfer: 256 << 10, StripSize: mib, StripeCount: 2}
		s := Stored{Path: "f.nc", Name: "data", NetCDF4: true, Dims: []uint64{2 * mib}, Unlimited: []bool{false},
			ElemSize: 1, Class: "integer", Layout: "contiguous", Addr: 8390656, FillTime: tc.time, FillValue: tc.value}
		if err := FromStored(&a, s); err != nil {
			t.Fatal(err)
		}
		if a.Fill != tc.on {
			t.Errorf("fill time %s, fill value %s: Fill %v, want %v", tc.time, tc.value, a.Fill, tc.on)
		}
		ad, err := Advise(a)
		if err != nil {
			t.Fatal(err)
		}
		want := "off ("
		if tc.on {
			want = "on ("
		}
		if it := item(t, ad, "fill values"); it.Change != tc.on || !strings.HasPrefix(it.Now, want) || !strings.Contains(it.Now, "read from the file: fill time "+tc.time) {
			t.Errorf("fill time %s, fill value %s: fill item %+v", tc.time, tc.value, it)
		}
	}
}

// A stored dataset's element type comes from its class and size; what
// is no fixed-size number is refused naming the dataset and the class.
// Before, only the size was looked at: a NetCDF-4 string variable
// (8-byte pointers) was advised as doubles.
func TestFromStoredTypes(t *testing.T) {
	base := Stored{Path: "f.nc", Name: "v", NetCDF4: true, Dims: []uint64{1024}, Unlimited: []bool{false},
		Layout: "contiguous", Addr: 4096, FillTime: "never", FillValue: "default"}
	for _, tc := range []struct {
		class string
		size  uint64
		typ   string
	}{
		{"integer", 1, "byte"}, {"integer", 2, "short"}, {"integer", 4, "int"}, {"integer", 8, "int64"},
		{"float", 4, "float"}, {"float", 8, "double"},
		{"enum", 1, "byte"}, {"enum", 4, "int"},
		{"string", 1, "char"}, // NetCDF char
	} {
		s := base
		s.Class, s.ElemSize = tc.class, tc.size
		a := Access{Ranks: 1, Transfer: 1024, StripSize: mib, StripeCount: 1}
		if err := FromStored(&a, s); err != nil || a.Type != tc.typ {
			t.Errorf("%s of %d bytes: type %q, %v; want %s", tc.class, tc.size, a.Type, err, tc.typ)
		}
	}
	for _, tc := range []struct {
		class  string
		size   uint64
		varStr bool
		want   string
	}{
		{"string", 8, true, `f.nc: dataset "v" has a variable-length string type`},
		{"vlen", 16, false, `f.nc: dataset "v" has a variable-length (vlen) type`},
		{"compound", 8, false, `f.nc: dataset "v" has a compound type`},
		{"opaque", 8, false, `f.nc: dataset "v" has an opaque type`},
		{"reference", 8, false, `f.nc: dataset "v" has a reference type`},
		{"array", 8, false, `f.nc: dataset "v" has an array type`},
		{"bitfield", 1, false, `f.nc: dataset "v" has a bitfield type`},
		{"time", 8, false, `f.nc: dataset "v" has a time type`},
		{"unknown", 8, false, `f.nc: dataset "v" has an unknown type`},
		{"", 8, false, `f.nc: dataset "v" has an unknown type`},
		{"string", 8, false, `f.nc: dataset "v" has a string type of 8 bytes`},
		{"float", 2, false, `f.nc: dataset "v" has float elements of 2 bytes (advise knows 4 and 8)`},
	} {
		s := base
		s.Class, s.ElemSize, s.VarString = tc.class, tc.size, tc.varStr
		a := Access{Ranks: 1, Transfer: 1024, StripSize: mib, StripeCount: 1}
		if err := FromStored(&a, s); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s of %d bytes (variable-length string %v): %v, want an error containing %q", tc.class, tc.size, tc.varStr, err, tc.want)
		}
	}
}

// A large strip with small transfers: the alignment item's share of
// straddling requests walked one period of the offsets within a strip,
// 2^40 requests for a 1 TiB strip and 3-byte transfers (pario advise
// --strip-size 1t --transfer 3 ran for hours, deaf to SIGTERM).
func TestAdviseLongStripPeriod(t *testing.T) {
	ad, err := Advise(Access{Dims: []uint64{3072}, Type: "byte", Ranks: 1, Transfer: 3, Alignment: 1, StripSize: 1 << 40, StripeCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if it := item(t, ad, "alignment"); !strings.Contains(it.Effect, "0% of requests touch one strip more") {
		t.Errorf("alignment effect %q", it.Effect)
	}
}
