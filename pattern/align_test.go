package pattern

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestAlignUp(t *testing.T) {
	tests := []struct{ addr, align, want int64 }{
		{0, mib, 0},
		{1, mib, mib},
		{2048, mib, mib}, // a small NetCDF-4 header
		{mib, mib, mib},  // already aligned
		{mib + 1, mib, 2 * mib},
		{12345, 1, 12345}, // alignment 1 is HDF5's default: nothing moves
		{100, 64, 128},
	}
	for _, tc := range tests {
		got, err := AlignUp(tc.addr, tc.align)
		if err != nil || got != tc.want {
			t.Errorf("AlignUp(%d, %d) = %d, %v; want %d", tc.addr, tc.align, got, err, tc.want)
		}
	}
	for _, bad := range [][2]int64{{0, 0}, {5, -1}, {-1, 8}, {maxInt64, 2}} {
		if _, err := AlignUp(bad[0], bad[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("AlignUp(%d, %d): error %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

// The thesis' case and its neighbours: 1 MiB requests on 1 MiB strips
// straddle at every address but a multiple of the strip.
func TestAnalyzeAlignment(t *testing.T) {
	tests := []struct {
		name                     string
		addr, transfer, strip, n int64
		straddling, min, max     int64
		pieces                   int64
	}{
		{"aligned 1 MiB", 0, mib, mib, 100, 0, 1, 1, 100},
		{"aligned by HDF5 to 1 MiB", mib, mib, mib, 100, 0, 1, 1, 100},
		{"NetCDF-4 header 2 KiB", 2048, mib, mib, 100, 100, 2, 2, 200},
		{"4 MiB requests, unaligned", 2048, 4 * mib, mib, 10, 10, 5, 5, 50},
		{"4 MiB requests, aligned", 0, 4 * mib, mib, 10, 0, 4, 4, 40},
		// 256 KiB requests from 2 KiB: one in four crosses a boundary.
		{"256 KiB requests, unaligned", 2048, 256 << 10, mib, 8, 2, 1, 2, 10},
		{"256 KiB requests, aligned", 0, 256 << 10, mib, 8, 0, 1, 1, 8},
		// 768 KiB: offsets cycle through 0, 768K, 512K, 256K.
		{"768 KiB from 0", 0, 768 << 10, mib, 4, 2, 1, 2, 6},
		{"no requests", 7, mib, mib, 0, 0, 0, 0, 0},
		{"period longer than n", 3, 24, 1000, 5, 0, 1, 1, 5},
	}
	for _, tc := range tests {
		a, err := AnalyzeAlignment(tc.addr, tc.transfer, tc.strip, tc.n)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if a.Straddling != tc.straddling || a.StripsMin != tc.min || a.StripsMax != tc.max || a.Pieces != tc.pieces {
			t.Errorf("%s: straddling %d strips %d..%d pieces %d; want %d, %d..%d, %d", tc.name,
				a.Straddling, a.StripsMin, a.StripsMax, a.Pieces, tc.straddling, tc.min, tc.max, tc.pieces)
		}
		if a.Aligned() != (tc.straddling == 0) {
			t.Errorf("%s: Aligned() = %v", tc.name, a.Aligned())
		}
	}
	for _, bad := range [][4]int64{{-1, 8, 8, 1}, {0, 0, 8, 1}, {0, 8, 0, 1}, {0, 8, 8, -1}, {maxInt64 - 4, 8, 8, 1}} {
		if _, err := AnalyzeAlignment(bad[0], bad[1], bad[2], bad[3]); !errors.Is(err, ErrInvalid) {
			t.Errorf("AnalyzeAlignment%v: error %v, want ErrInvalid", bad, err)
		}
	}
}

// The periodic count equals walking every request.
func TestPropertyAlignmentBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		strip := rapid.Int64Range(1, 4096).Draw(t, "strip")
		transfer := rapid.Int64Range(1, 3*4096).Draw(t, "transfer")
		addr := rapid.Int64Range(0, 1<<20).Draw(t, "addr")
		n := rapid.Int64Range(0, 3000).Draw(t, "n")
		a, err := AnalyzeAlignment(addr, transfer, strip, n)
		if err != nil {
			t.Fatal(err)
		}
		need := (transfer + strip - 1) / strip
		var straddle, pieces, lo, hi int64
		lo = -1
		for k := range n {
			off := addr + k*transfer
			s := (off+transfer-1)/strip - off/strip + 1
			pieces += s
			if s > need {
				straddle++
			}
			if lo < 0 || s < lo {
				lo = s
			}
			hi = max(hi, s)
		}
		if n == 0 {
			lo = 0
		}
		if a.Straddling != straddle || a.Pieces != pieces || a.StripsMin != lo || a.StripsMax != hi {
			t.Fatalf("addr %d t %d strip %d n %d: got %+v, brute force straddle %d pieces %d strips %d..%d",
				addr, transfer, strip, n, a, straddle, pieces, lo, hi)
		}
		// Aligning the address to the strip removes every straddle when
		// the transfer is a multiple of the strip.
		if transfer%strip == 0 {
			al, _ := AlignUp(addr, strip)
			b, _ := AnalyzeAlignment(al, transfer, strip, n)
			if !b.Aligned() {
				t.Fatalf("aligned address %d still straddles: %+v", al, b)
			}
		}
	})
}

// The thesis' 1-OST pattern (table 4.5): 10 ranks, 1 MiB blocks and
// transfers, 10 servers with 1 MiB strips. Configured it is 1-OST; with
// NetCDF-4's unaligned header every request touches two servers.
func TestAnalyzeShiftedOneOST(t *testing.T) {
	d := mustDist(t, "simple_stripe:strip_size=1m", 10)
	p := IOR{Block: mib, Transfer: mib, Segments: 8, Tasks: 10}
	s, err := AnalyzeShifted(p, Config{Dist: d}, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Configured.Class(); got != "interleaved, 1-OST" {
		t.Errorf("configured class %q", got)
	}
	if got := s.Actual.Class(); got != "interleaved, 2-OST" {
		t.Errorf("actual class %q", got)
	}
	if s.Configured.Straddling != 0 || s.Actual.Straddling != s.Actual.Transfers {
		t.Errorf("straddling %d aligned, %d of %d shifted", s.Configured.Straddling, s.Actual.Straddling, s.Actual.Transfers)
	}
	if !s.Changed() {
		t.Error("Changed() = false")
	}
	if s.Actual.Configured != "interleaved, 1-OST" {
		t.Errorf("Report.Configured = %q", s.Actual.Configured)
	}
	if want := "Configured: interleaved, 1-OST at data start 0; the 2048-byte header shifts it to interleaved, 2-OST"; !strings.Contains(s.Actual.Text(), want) {
		t.Errorf("report text lacks %q:\n%s", want, s.Actual.Text())
	}
	txt := s.Text()
	for _, want := range []string{"configured interleaved, 1-OST; 0 of 80", "at +2048   interleaved, 2-OST; 80 of 80 requests straddle a strip (100%), 2.00 pieces"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
	// Aligned to the strip, the header moves the data a whole strip: the
	// class stays 1-OST (each rank's server shifts by one).
	s, err = AnalyzeShifted(p, Config{Dist: d}, mib)
	if err != nil {
		t.Fatal(err)
	}
	if s.Actual.Class() != "interleaved, 1-OST" || s.Actual.Straddling != 0 {
		t.Errorf("header of one strip: %s, %d straddling", s.Actual.Class(), s.Actual.Straddling)
	}
	if _, err := AnalyzeShifted(p, Config{Dist: d}, -1); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative header: %v", err)
	}
}

// A strip of 1 TiB with 3-byte transfers has offsets that repeat only
// every 2^40 requests; the count walked them (hours, and pario advise
// --strip-size 1t --transfer 3 with it). It is closed-form now: of the
// 2^40 offsets 3k mod 2^40 (each residue once), the two in the strip's
// last two bytes straddle.
func TestAnalyzeAlignmentLongPeriod(t *testing.T) {
	a, err := AnalyzeAlignment(0, 3, 1<<40, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if a.Straddling != 2 || a.Pieces != 1<<40+2 || a.StripsMin != 1 || a.StripsMax != 2 {
		t.Fatalf("got %+v; want 2 straddling, 2^40+2 pieces, 1..2 strips", a)
	}
	// The largest counts: every request but those starting a strip
	// straddles.
	a, err = AnalyzeAlignment(1, 1<<20, 1<<20, (maxInt64-1)>>20)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64((maxInt64 - 1) >> 20); a.Straddling != n || a.Pieces != 2*n || a.StripsMin != 2 {
		t.Fatalf("got %+v; want every one of %d requests straddling", a, n)
	}
}
