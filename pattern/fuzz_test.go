package pattern

import (
	"errors"
	"testing"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/units"
)

// FuzzIOR feeds arbitrary parameters to Validate; whatever validates and is
// small enough to walk must tile its files exactly and analyse cleanly.
func FuzzIOR(f *testing.F) {
	f.Add(int64(16), int64(8), int64(2), 3, uint8(0), 1, 0, int64(0), int64(0), int64(8))
	f.Add(int64(64), int64(8), int64(2), 4, uint8(flagFPP|flagRandom), 1, 0, int64(42), int64(0), int64(16))
	f.Add(int64(32), int64(8), int64(2), 3, uint8(flagRandom), 0, 0, int64(7), int64(4096), int64(8))
	f.Add(int64(16), int64(32), int64(4), 2, uint8(flagStrided), 0, 0, int64(0), int64(3), int64(16))
	f.Add(int64(24), int64(8), int64(3), 5, uint8(flagReorder), 4, 1, int64(0), int64(0), int64(24))
	f.Add(int64(24), int64(8), int64(3), 6, uint8(flagReorder|flagFPP), 1, 3, int64(0), int64(1), int64(8))
	f.Add(int64(16), int64(24), int64(1), 1, uint8(0), 0, 0, int64(0), int64(0), int64(8))
	f.Add(int64(1)<<62, int64(8), int64(4), 4, uint8(0), 0, 0, int64(0), int64(0), int64(8))
	f.Fuzz(func(t *testing.T, block, transfer, segments int64, tasks int, flags uint8, q, shift int, seed, dataStart, strip int64) {
		p := IOR{
			Block: block, Transfer: transfer, Segments: segments, Tasks: tasks,
			FilePerProc: flags&flagFPP != 0, Reorder: flags&flagReorder != 0, Random: flags&flagRandom != 0,
			Strided: flags&flagStrided != 0, TaskOffset: q, RankShift: shift, Seed: seed, DataStart: dataStart,
		}
		err := p.Validate()
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if p.AggregateSize()/p.Transfer > 1<<12 || p.Segments*int64(p.Tasks) > 1<<12 || p.Tasks > 64 {
			return // too big to walk quickly
		}
		for _, ph := range []Phase{Write, WriteCheck, Read} {
			checkTransfers(t, p, ph)
		}
		if strip < AccessSize || strip > 1<<40 {
			return
		}
		d, err := dist.New(dist.SimpleStripe, "strip_size="+units.FormatSize(strip), 3)
		if err != nil {
			return
		}
		r, err := Analyze(p, Config{Dist: d, LinkRate: 1, DiskRate: 1})
		if err != nil {
			t.Fatalf("Analyze: %v", err)
		}
		if r.Bytes != p.AggregateSize() || r.X < r.MinX || r.X > 3 || r.Transfers*p.Transfer != r.Bytes {
			t.Fatalf("report %+v", r)
		}
		_ = r.Text()
	})
}

const (
	flagFPP = 1 << iota
	flagReorder
	flagRandom
	flagStrided
)

// FuzzAlignment: AlignUp and AnalyzeAlignment on any numbers either fail
// with ErrInvalid or give a consistent answer (a brute-force walk where
// it is short), quickly.
func FuzzAlignment(f *testing.F) {
	f.Add(int64(2048), int64(1<<20), int64(1<<20), int64(10))
	f.Add(int64(0), int64(3), int64(1<<40), int64(1<<40))
	f.Add(int64(1), int64(maxInt64), int64(1), int64(1))
	f.Add(int64(maxInt64), int64(1), int64(maxInt64), int64(0))
	f.Add(int64(-1), int64(0), int64(-5), int64(-1))
	f.Fuzz(func(t *testing.T, addr, transfer, strip, n int64) {
		if al, err := AlignUp(addr, strip); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("AlignUp(%d, %d): %v does not match ErrInvalid", addr, strip, err)
			}
		} else if al < addr || al%strip != 0 || al-addr >= strip {
			t.Fatalf("AlignUp(%d, %d) = %d", addr, strip, al)
		}
		a, err := AnalyzeAlignment(addr, transfer, strip, n)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("AnalyzeAlignment(%d, %d, %d, %d): %v does not match ErrInvalid", addr, transfer, strip, n, err)
			}
			return
		}
		need := (transfer-1)/strip + 1
		if a.Straddling < 0 || a.Straddling > n || a.Pieces != n*need+a.Straddling {
			t.Fatalf("AnalyzeAlignment(%d, %d, %d, %d) = %+v", addr, transfer, strip, n, a)
		}
		if n > 2000 {
			return
		}
		var straddle int64
		for k := range n {
			off := (addr + k*transfer) % strip
			if (off+transfer-1)/strip+1 > need {
				straddle++
			}
		}
		if straddle != a.Straddling {
			t.Fatalf("AnalyzeAlignment(%d, %d, %d, %d): %d straddling, a walk counts %d", addr, transfer, strip, n, a.Straddling, straddle)
		}
	})
}
