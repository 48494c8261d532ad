package pattern

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pario/pario/dist"
)

const mib = 1 << 20

func mustDist(t testing.TB, layout string, n int) dist.Distribution {
	t.Helper()
	l, err := dist.ParseLayout(layout)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Build(n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustAnalyze(t testing.TB, p IOR, c Config) *Report {
	t.Helper()
	r, err := Analyze(p, c)
	if err != nil {
		t.Fatalf("Analyze(%v): %v", p, err)
	}
	return r
}

// xost is the brief's rule: with N ranks, N targets and 1 MiB strips, a
// block of x MiB gives rank r the targets {(x*r + i) mod N : i < x}; with
// an unaligned data start, {(x*r + i) mod N : i <= x}.
func xost(n, x, count, r int) []int {
	var s []int
	for i := range count {
		s = append(s, (x*r+i)%n)
	}
	slices.Sort(s)
	return slices.Compact(s)
}

func TestXOST(t *testing.T) {
	d := mustDist(t, "simple_stripe:strip_size=1m", 10)
	for _, x := range []int{1, 2, 3, 5, 10} {
		for _, xfer := range []int64{mib, int64(x) * mib} {
			for _, unaligned := range []bool{false, true} {
				p := IOR{Block: int64(x) * mib, Transfer: xfer, Segments: 4, Tasks: 10}
				want := x
				if unaligned {
					p.DataStart = 4096 // a container header before the data
					want = min(x+1, 10)
				}
				r := mustAnalyze(t, p, Config{Dist: d})
				if r.X != want || r.MinX != want {
					t.Errorf("%v: %d..%d-OST, want %d-OST", p, r.MinX, r.X, want)
				}
				if r.AllToAll != (want == 10) {
					t.Errorf("%v: AllToAll = %v", p, r.AllToAll)
				}
				if r.Access != Interleaved {
					t.Errorf("%v: access %v", p, r.Access)
				}
				for rank, rr := range r.Ranks {
					if w := xost(10, x, x+1, rank); unaligned && !slices.Equal(rr.Servers, w) {
						t.Errorf("%v: rank %d talks to %v, want %v", p, rank, rr.Servers, w)
					}
					if w := xost(10, x, x, rank); !unaligned && !slices.Equal(rr.Servers, w) {
						t.Errorf("%v: rank %d talks to %v, want %v", p, rank, rr.Servers, w)
					}
					if rr.Regions != 4 {
						t.Errorf("%v: rank %d regions %d", p, rank, rr.Regions)
					}
				}
				total := 0
				for _, s := range r.PerServer {
					total += len(s.Clients)
					if !unaligned && len(s.Clients) != x {
						t.Errorf("%v: server %d has clients %v, want %d", p, s.Server, s.Clients, x)
					}
				}
				if total != 10*want {
					t.Errorf("%v: %d client-server pairs, want %d", p, total, 10*want)
				}
				// Straddling: a transfer of k strips is k pieces aligned,
				// k+1 unaligned; it straddles when it has more than one.
				k := xfer / mib
				pieces := k
				if unaligned {
					pieces++
				}
				wantStraddle := int64(0)
				if pieces > 1 {
					wantStraddle = r.Transfers
				}
				if r.Transfers != p.AggregateSize()/xfer || r.Straddling != wantStraddle ||
					r.Pieces != pieces*r.Transfers || r.MaxPieces != pieces {
					t.Errorf("%v: transfers %d straddling %d pieces %d max %d", p, r.Transfers, r.Straddling, r.Pieces, r.MaxPieces)
				}
				if iox := float64(min(pieces, 10)) * 10; math.Abs(r.DeltaIOX-iox) > 1e-9 || r.MaxDeltaIOX != iox {
					t.Errorf("%v: delta_iox %v max %v", p, r.DeltaIOX, r.MaxDeltaIOX)
				}
				wantClass := "interleaved, " + map[bool]string{false: "", true: "all-to-all (10 servers)"}[want == 10]
				if want < 10 {
					wantClass += string(rune('0'+want)) + "-OST"
				}
				if r.Class() != wantClass {
					t.Errorf("%v: class %q, want %q", p, r.Class(), wantClass)
				}
			}
		}
	}
}

func TestDisjointAllToAll(t *testing.T) {
	d := mustDist(t, "simple_stripe:strip_size=1m", 10)
	p := IOR{Block: 100 * mib, Transfer: 4 * mib, Segments: 1, Tasks: 10}
	r := mustAnalyze(t, p, Config{Dist: d})
	if r.Access != Disjoint || !r.AllToAll || r.X != 10 || r.Class() != "disjoint, all-to-all (10 servers)" {
		t.Errorf("class %q access %v", r.Class(), r.Access)
	}
	for _, rr := range r.Ranks {
		if rr.Regions != 1 {
			t.Errorf("rank %d: %d regions", rr.Rank, rr.Regions)
		}
	}
	// 4 MiB calls over 1 MiB strips: 4 servers each, within one 10 MiB stripe
	// except the calls crossing a stripe boundary.
	if r.DeltaIOX != 40 || r.MaxDeltaIOZ != 2 {
		t.Errorf("delta_iox %v delta_ioz max %d", r.DeltaIOX, r.MaxDeltaIOZ)
	}
	// One call of 20 MiB spans 2 stripes and all servers.
	p = IOR{Block: 20 * mib, Transfer: 20 * mib, Segments: 1, Tasks: 1}
	r = mustAnalyze(t, p, Config{Dist: d})
	if r.DeltaIOX != 100 || r.DeltaIOZ != 2 || r.MaxDeltaIOZ != 2 || r.Pieces != 20 || r.Straddling != 1 {
		t.Errorf("20 MiB call: iox %v ioz %v pieces %d straddling %d", r.DeltaIOX, r.DeltaIOZ, r.Pieces, r.Straddling)
	}
}

func TestDeltaIOZUnaligned(t *testing.T) {
	d := mustDist(t, "simple_stripe:strip_size=1m", 2) // 2 MiB stripes
	// One 2 MiB call starting at 1 MiB spans stripes 0 and 1.
	p := IOR{Block: 2 * mib, Transfer: 2 * mib, Segments: 1, Tasks: 1, DataStart: mib}
	r := mustAnalyze(t, p, Config{Dist: d})
	if r.DeltaIOZ != 2 || r.Pieces != 2 {
		t.Errorf("ioz %v pieces %d", r.DeltaIOZ, r.Pieces)
	}
	// Strided calls whose extents share a stripe count it once.
	p = IOR{Block: 8, Transfer: 32, Segments: 4, Tasks: 2, Strided: true}
	r = mustAnalyze(t, p, Config{Dist: mustDist(t, "simple_stripe:strip_size=64", 2)})
	if r.DeltaIOZ != 1 || r.MaxDeltaIOZ != 1 {
		t.Errorf("strided small: ioz %v", r.DeltaIOZ)
	}
	// A single datafile is one endless stripe.
	r = mustAnalyze(t, IOR{Block: 64 * mib, Transfer: 64 * mib, Segments: 1, Tasks: 1}, Config{Dist: mustDist(t, "basic", 4)})
	if r.DeltaIOZ != 1 || r.Servers != 1 || r.X != 1 || r.AllToAll || r.Class() != "disjoint, 1-OST" {
		t.Errorf("basic: ioz %v servers %d class %q", r.DeltaIOZ, r.Servers, r.Class())
	}
}

func TestStridedThesisOneOST(t *testing.T) {
	// Seed 002's own benchmark, scaled down: 1 MiB blocks, calls of 16
	// blocks, 10 ranks over 10 servers with 1 MiB strips stay 1-OST.
	d := mustDist(t, "simple_stripe:strip_size=1m", 10)
	p := IOR{Block: mib, Transfer: 16 * mib, Segments: 64, Tasks: 10, Strided: true}
	r := mustAnalyze(t, p, Config{Dist: d, LinkRate: 117e6})
	if r.X != 1 || r.MinX != 1 || r.Straddling != 0 || r.Pieces != 16*r.Transfers || r.MaxPieces != 16 {
		t.Errorf("x %d straddling %d pieces %d", r.X, r.Straddling, r.Pieces)
	}
	if r.DeltaIOX != 10 || r.DeltaIOZ != 16 {
		t.Errorf("iox %v ioz %v", r.DeltaIOX, r.DeltaIOZ)
	}
	if r.Bound.Max != 1170e6 {
		t.Errorf("bound %v", r.Bound.Max)
	}
}

func TestBound(t *testing.T) {
	d := mustDist(t, "simple_stripe:strip_size=1m", 10)
	p := IOR{Block: mib, Transfer: mib, Segments: 20, Tasks: 10}
	// The thesis' testbed: 10 clients x 117 MB/s per GbE link.
	r := mustAnalyze(t, p, Config{Dist: d, LinkRate: 117e6, DiskRate: 200e6})
	b := r.Bound
	if b == nil || b.Max != 1170e6 || b.Bottleneck != "client links" || b.ServerLimit != 2000e6 || b.Imbalance != 1 {
		t.Fatalf("bound %+v", b)
	}
	if txt := r.Text(); !strings.Contains(txt, "1170.0 MB/s") || !strings.Contains(txt, "limited by client links") {
		t.Errorf("text:\n%s", txt)
	}
	// Slow disks, with a server link cap below the disk rate.
	r = mustAnalyze(t, p, Config{Dist: d, LinkRate: 117e6, DiskRate: 200e6, ServerLinkRate: 50e6})
	if b := r.Bound; b.Max != 500e6 || b.Bottleneck != "servers" {
		t.Errorf("bound %+v", b)
	}
	// Network cap.
	r = mustAnalyze(t, p, Config{Dist: d, LinkRate: 117e6, NetworkCap: 1e9})
	if b := r.Bound; b.Max != 1e9 || b.Bottleneck != "network" || b.ServerLimit != 0 {
		t.Errorf("bound %+v", b)
	}
	// Imbalance: one rank, 3 MiB over 2 servers: server 0 gets 2 MiB.
	d2 := mustDist(t, "simple_stripe:strip_size=1m", 2)
	r = mustAnalyze(t, IOR{Block: 3 * mib, Transfer: mib, Segments: 1, Tasks: 1}, Config{Dist: d2, DiskRate: 100e6})
	if b := r.Bound; math.Abs(b.Max-150e6) > 1 || math.Abs(b.Imbalance-4.0/3) > 1e-12 || b.ClientLimit != 0 || b.UsedServers != 2 {
		t.Errorf("imbalanced bound %+v", b)
	}
	// Two ranks per client share its link.
	r = mustAnalyze(t, IOR{Block: mib, Transfer: mib, Segments: 2, Tasks: 4}, Config{Dist: d, LinkRate: 100e6, RanksPerClient: 2})
	if b := r.Bound; b.Clients != 2 || b.Max != 200e6 {
		t.Errorf("shared links bound %+v", b)
	}
	// No rates, no bound.
	if r := mustAnalyze(t, p, Config{Dist: d}); r.Bound != nil || strings.Contains(r.Text(), "Theoretical") {
		t.Errorf("bound without rates: %+v", r.Bound)
	}
}

func TestAnalyzeFilePerProcPlacement(t *testing.T) {
	d := mustDist(t, "basic", 1)
	p := IOR{Block: mib, Transfer: 256 << 10, Segments: 4, Tasks: 4, FilePerProc: true}
	// Without placement every file's datafile 0 is server 0.
	r := mustAnalyze(t, p, Config{Dist: d})
	if r.Servers != 1 || len(r.PerServer[0].Clients) != 4 || r.Access != Disjoint {
		t.Errorf("servers %d clients %v", r.Servers, r.PerServer[0].Clients)
	}
	// Files dealt round robin over 4 servers: 1-OST, 1 client each.
	r = mustAnalyze(t, p, Config{Dist: d, Servers: 4, Placement: func(f, df int) int { return (f + df) % 4 }})
	if r.X != 1 || r.Servers != 4 || r.DeltaIOX != 25 {
		t.Errorf("x %d servers %d iox %v", r.X, r.Servers, r.DeltaIOX)
	}
	for s, sr := range r.PerServer {
		if !slices.Equal(sr.Clients, []int{s}) || sr.Bytes != 4*mib {
			t.Errorf("server %d: %+v", s, sr)
		}
	}
	// Placement outside the servers.
	_, err := Analyze(p, Config{Dist: d, Servers: 2, Placement: func(f, _ int) int { return f }})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("bad placement: %v", err)
	}
	// Servers given larger than used: delta_iox uses it.
	r = mustAnalyze(t, p, Config{Dist: d, Servers: 8, Placement: func(f, _ int) int { return f }})
	if r.DeltaIOX != 12.5 || len(r.PerServer) != 8 || r.PerServer[7].Bytes != 0 {
		t.Errorf("iox %v", r.DeltaIOX)
	}
}

func TestAnalyzeReorderAndRandom(t *testing.T) {
	d := mustDist(t, "simple_stripe:strip_size=1m", 10)
	p := IOR{Block: 2 * mib, Transfer: mib, Segments: 3, Tasks: 10, Reorder: true, TaskOffset: 1}
	w := mustAnalyze(t, p, Config{Dist: d, Phase: Write})
	rd := mustAnalyze(t, p, Config{Dist: d, Phase: Read})
	for r := range 10 {
		if rd.Ranks[r].Target != (r+1)%10 || !slices.Equal(rd.Ranks[r].Servers, w.Ranks[(r+1)%10].Servers) {
			t.Errorf("rank %d read: %+v", r, rd.Ranks[r])
		}
	}
	// Random in a shared file: ranks get uneven shares and talk to many
	// servers, yet every byte is moved once.
	p = IOR{Block: 4 * mib, Transfer: mib, Segments: 2, Tasks: 10, Random: true, Seed: 3}
	r := mustAnalyze(t, p, Config{Dist: d})
	var sum int64
	for _, rr := range r.Ranks {
		if rr.Transfers != p.Count(rr.Rank, Write) {
			t.Errorf("rank %d: %d transfers, Count %d", rr.Rank, rr.Transfers, p.Count(rr.Rank, Write))
		}
		sum += rr.Bytes
	}
	if sum != p.AggregateSize() || r.Bytes != sum || r.Access != Interleaved {
		t.Errorf("bytes %d, want %d; access %v", sum, p.AggregateSize(), r.Access)
	}
	var srv int64
	for _, s := range r.PerServer {
		srv += s.Bytes
	}
	if srv != sum {
		t.Errorf("server bytes %d", srv)
	}
	// Random with a file per process: same region, shuffled: disjoint.
	p.FilePerProc = true
	if r := mustAnalyze(t, p, Config{Dist: d}); r.Access != Disjoint {
		t.Errorf("random fpp access %v", r.Access)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	d := mustDist(t, "simple_stripe", 4)
	ok := IOR{Block: 64, Transfer: 8, Segments: 1, Tasks: 2}
	for name, f := range map[string]func() error{
		"invalid pattern": func() error { _, err := Analyze(IOR{}, Config{Dist: d}); return err },
		"no dist":         func() error { _, err := Analyze(ok, Config{}); return err },
		"bad phase":       func() error { _, err := Analyze(ok, Config{Dist: d, Phase: 7}); return err },
		"negative rate":   func() error { _, err := Analyze(ok, Config{Dist: d, LinkRate: -1}); return err },
		"negative rpc":    func() error { _, err := Analyze(ok, Config{Dist: d, RanksPerClient: -1}); return err },
		"negative srv":    func() error { _, err := Analyze(ok, Config{Dist: d, Servers: -1}); return err },
		"too large":       func() error { _, err := Analyze(ok, Config{Dist: d, MaxTransfers: 15}); return err },
		"too many blocks": func() error {
			p := IOR{Block: 8, Transfer: 64, Segments: 16, Tasks: 2, Strided: true}
			_, err := Analyze(p, Config{Dist: d, MaxTransfers: 16})
			return err
		},
	} {
		if err := f(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Analyze(ok, Config{Dist: d, MaxTransfers: 16}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
}

func TestStripeWidth(t *testing.T) {
	for layout, want := range map[string]int64{
		"simple_stripe:strip_size=1m":                 10 * mib,
		"simple_stripe:strip_size=1m,num_datafiles=1": 0,
		"basic": 0,
		"twod_stripe:num_groups=2,strip_size=65536,group_strip_factor=4": 10 * 65536 * 4,
		"varstrip:strips=0:100;1:200;2:300":                              600,
	} {
		if got := StripeWidth(mustDist(t, layout, 10)); got != want {
			t.Errorf("%s: %d, want %d", layout, got, want)
		}
	}
}

func TestTextRendering(t *testing.T) {
	d := mustDist(t, "simple_stripe:strip_size=1m", 10)
	p := IOR{Block: mib, Transfer: mib, Segments: 4, Tasks: 10, DataStart: 4096, Reorder: true, TaskOffset: 1, RankShift: 10}
	r := mustAnalyze(t, p, Config{Dist: d, Phase: Read, LinkRate: 117e6, DiskRate: 100e6})
	txt := r.Text()
	for _, want := range []string{
		"Pattern:    -N 10 -b 1m -t 1m -s 4 -C -Q 1 (shift 10) data-start=4096 (shared file, read phase)",
		"Layout:     simple_stripe:strip_size=1048576 on 10 datafiles, 10 servers",
		"Class:      interleaved, 2-OST",
		"Straddling: 40 of 40 transfers (100.0%)",
		"delta_iox:  20.0% mean",
		"Warning:    -C has no effect",
		"rank  target  #servers  servers",
		"server  #clients  ranks",
		"limited by servers",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
	if strings.Count(txt, "\n") < 30 {
		t.Errorf("text too short:\n%s", txt)
	}
	var sb strings.Builder
	if err := r.WriteText(&sb); err != nil || sb.String() != txt {
		t.Errorf("WriteText: %v", err)
	}
	if s := Access(0).String(); s != "Access(0)" {
		t.Error(s)
	}
	r.X, r.MinX, r.AllToAll = 3, 2, false
	if c := r.Class(); c != "interleaved, 3-OST (ranks touch 2 to 3 servers)" {
		t.Error(c)
	}
}
