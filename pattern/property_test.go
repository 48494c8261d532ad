package pattern

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pario/pario/dist"
	"pgregory.net/rapid"
)

// genIOR draws small valid patterns of every kind.
func genIOR(t *rapid.T) IOR {
	tasks := rapid.IntRange(1, 6).Draw(t, "tasks")
	strided := rapid.Bool().Draw(t, "strided")
	random := !strided && rapid.Bool().Draw(t, "random")
	fpp := rapid.Bool().Draw(t, "fpp")
	var p IOR
	p.Tasks = tasks
	p.FilePerProc = fpp
	p.Segments = rapid.Int64Range(1, 5).Draw(t, "segments")
	if strided {
		p.Strided = true
		p.Block = AccessSize * rapid.Int64Range(1, 8).Draw(t, "blockWords")
		words := p.Block / AccessSize * p.Segments
		var divs []int64
		for d := int64(1); d <= words; d++ {
			if words%d == 0 {
				divs = append(divs, d)
			}
		}
		p.Transfer = AccessSize * rapid.SampledFrom(divs).Draw(t, "transferWords")
	} else {
		per := rapid.Int64Range(1, 8).Draw(t, "transfersPerBlock")
		if random && per == 1 {
			per = 2
		}
		p.Transfer = AccessSize * rapid.Int64Range(1, 4).Draw(t, "transferWords")
		p.Block = p.Transfer * per
	}
	p.Random = random
	p.Seed = rapid.Int64Range(-5, 1<<40).Draw(t, "seed")
	p.DataStart = rapid.Int64Range(0, 100).Draw(t, "dataStart")
	if !(random && !fpp) {
		p.Reorder = rapid.Bool().Draw(t, "reorder")
		p.TaskOffset = rapid.IntRange(0, 2*tasks).Draw(t, "taskOffset")
		p.RankShift = rapid.IntRange(0, tasks).Draw(t, "rankShift")
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("generated invalid %+v: %v", p, err)
	}
	return p
}

// coverage checks that exts (sorted in place) tile [start, end) exactly.
func coverage(exts []Extent, start, end int64) error {
	slices.SortFunc(exts, cmpExtent)
	at := start
	for _, e := range exts {
		if e.Offset != at || e.Length <= 0 {
			return fmt.Errorf("extent %+v, expected one at %d", e, at)
		}
		at = e.End()
	}
	if at != end {
		return fmt.Errorf("covered up to %d, want %d", at, end)
	}
	return nil
}

func checkTransfers(t interface{ Fatalf(string, ...any) }, p IOR, ph Phase) {
	byFile := make([][]Extent, p.Files())
	var total int64
	for rank := range p.Tasks {
		owner := p.TargetRank(rank, ph)
		var n int64
		for tr := range p.Transfers(rank, ph) {
			if tr.Seq != n || tr.Rank != owner || tr.Length != p.Transfer {
				t.Fatalf("%v %v rank %d: transfer %+v (call %d, owner %d)", p, ph, rank, tr, n, owner)
			}
			wantFile := 0
			if p.FilePerProc {
				wantFile = owner
			}
			if tr.File != wantFile {
				t.Fatalf("%v: file %d, want %d", p, tr.File, wantFile)
			}
			var sum int64
			for i, e := range tr.Pieces() {
				if i == 0 && e.Offset != tr.Offset {
					t.Fatalf("%v: first extent %+v, offset %d", p, e, tr.Offset)
				}
				if seg := (e.Offset - p.DataStart) / (p.Block * int64(p.Tasks)); i == 0 && !p.FilePerProc && seg != tr.Segment {
					t.Fatalf("%v: segment %d, offset in segment %d", p, tr.Segment, seg)
				}
				sum += e.Length
			}
			if sum != tr.Length || (tr.Extents != nil && len(tr.Extents) < 2) {
				t.Fatalf("%v: transfer %+v", p, tr)
			}
			byFile[tr.File] = append(byFile[tr.File], tr.Pieces()...)
			n++
		}
		if c := p.Count(rank, ph); c != n {
			t.Fatalf("%v: Count(%d) = %d, yielded %d", p, rank, c, n)
		}
		total += n
	}
	if total*p.Transfer != p.AggregateSize() {
		t.Fatalf("%v: %d transfers, aggregate %d", p, total, p.AggregateSize())
	}
	for f, exts := range byFile {
		if err := coverage(exts, p.DataStart, p.FileSize()); err != nil {
			t.Fatalf("%v %v file %d: %v", p, ph, f, err)
		}
	}
}

// Every byte of every file is moved exactly once per phase, whatever the
// mode: for a shared file all ranks together cover [DataStart,
// DataStart+aggregate); with a file per process the rank targeting a file
// covers it.
func TestPropertyCoverage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genIOR(t)
		for _, ph := range []Phase{Write, WriteCheck, Read} {
			checkTransfers(t, p, ph)
		}
	})
}

// TargetRank is a permutation of the ranks in every phase.
func TestPropertyReorderPermutation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 64).Draw(t, "tasks")
		p := IOR{Block: 8, Transfer: 8, Segments: 1, Tasks: n, Reorder: true,
			TaskOffset: rapid.IntRange(0, n-1).Draw(t, "q"), RankShift: rapid.IntRange(0, n).Draw(t, "shift")}
		for _, ph := range []Phase{Write, WriteCheck, Read} {
			seen := make([]bool, n)
			for r := range n {
				tr := p.TargetRank(r, ph)
				if seen[tr] {
					t.Fatalf("%v %v: %d targeted twice", p, ph, tr)
				}
				seen[tr] = true
			}
		}
		if got, want := p.TargetRank(0, Read), (p.TaskOffset*max(p.RankShift, 1))%n; got != want {
			t.Fatalf("TargetRank(0) = %d, want %d", got, want)
		}
	})
}

// Strided mode with a transfer dividing the block is IOR's pattern.
func TestPropertyStridedDegenerates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genIOR(t)
		if p.Random {
			return
		}
		p.Strided = false
		if p.Validate() != nil {
			return // t does not divide b
		}
		q := p
		q.Strided = true
		for r := range p.Tasks {
			a := p.AppendTransfers(nil, r, Read)
			b := q.AppendTransfers(nil, r, Read)
			if len(a) != len(b) {
				t.Fatalf("lengths %d %d", len(a), len(b))
			}
			for i := range a {
				if a[i].Offset != b[i].Offset || a[i].Segment != b[i].Segment || b[i].Extents != nil {
					t.Fatalf("%v rank %d call %d: %+v vs %+v", p, r, i, a[i], b[i])
				}
			}
		}
	})
}

// Analyze agrees with a direct computation through dist.Split.
func TestPropertyAnalyzeConsistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genIOR(t)
		ndf := rapid.IntRange(1, 5).Draw(t, "datafiles")
		strip := AccessSize * rapid.Int64Range(1, 6).Draw(t, "stripWords")
		d, err := dist.New(dist.SimpleStripe, fmt.Sprintf("strip_size=%d", strip), ndf)
		if err != nil {
			t.Fatal(err)
		}
		ph := rapid.SampledFrom([]Phase{Write, WriteCheck, Read}).Draw(t, "phase")
		r, err := Analyze(p, Config{Dist: d, Phase: ph, LinkRate: 1e6, DiskRate: 2e6})
		if err != nil {
			t.Fatal(err)
		}
		var straddling, pieces int64
		srvBytes := make([]int64, ndf)
		x := 0
		for rank := range p.Tasks {
			set := map[int]bool{}
			for tr := range p.Transfers(rank, ph) {
				var n int
				for _, e := range tr.Pieces() {
					ps := dist.Split(d, e.Offset, e.Length)
					n += len(ps)
					for _, pc := range ps {
						set[pc.Datafile] = true
						srvBytes[pc.Datafile] += pc.Length
					}
				}
				if n > len(tr.Pieces()) {
					straddling++
				}
				pieces += int64(n)
			}
			got := r.Ranks[rank].Servers
			if len(got) != len(set) {
				t.Fatalf("rank %d: servers %v, want %v", rank, got, set)
			}
			for _, s := range got {
				if !set[s] {
					t.Fatalf("rank %d: servers %v, want %v", rank, got, set)
				}
			}
			x = max(x, len(set))
		}
		if r.Straddling != straddling || r.Pieces != pieces || r.X != x || r.Bytes != p.AggregateSize() {
			t.Fatalf("report straddling %d pieces %d x %d bytes %d; want %d %d %d %d",
				r.Straddling, r.Pieces, r.X, r.Bytes, straddling, pieces, x, p.AggregateSize())
		}
		for s, b := range srvBytes {
			if r.PerServer[s].Bytes != b {
				t.Fatalf("server %d: %d bytes, want %d", s, r.PerServer[s].Bytes, b)
			}
		}
		if r.Bound == nil || r.Bound.Max <= 0 || r.Bound.Max > float64(p.Tasks)*1e6+1e-6 {
			t.Fatalf("bound %+v", r.Bound)
		}
		if r.DeltaIOX <= 0 || r.DeltaIOX > 100 || r.DeltaIOZ < 1 {
			t.Fatalf("iox %v ioz %v", r.DeltaIOX, r.DeltaIOZ)
		}
	})
}
