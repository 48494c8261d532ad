package mcmc

import (
	"context"
	"testing"
	"time"

	"github.com/pario/pario/mfg"
)

func TestStretch(t *testing.T) {
	tests := []struct {
		d     time.Duration
		share float64
		want  time.Duration
	}{
		{time.Second, 0.5, time.Second},
		{time.Second, 0.25, 3 * time.Second},
		{time.Second, 1, 0},
		{time.Second, 0, 0},
		{time.Second, 1.5, 0},
		{-time.Second, 0.5, 0},
	}
	for _, tt := range tests {
		if got := stretch(tt.d, tt.share); got != tt.want {
			t.Errorf("stretch(%v, %v) = %v, want %v", tt.d, tt.share, got, tt.want)
		}
	}
}

func TestNodes(t *testing.T) {
	// 16 ranks on 8 nodes of 2 CPUs: two per node, in blocks, a whole CPU
	// each; 32 ranks: half a CPU each.
	for k, want := range []int{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7} {
		if got := NodeOfRank(k, 16, 8); got != want {
			t.Errorf("rank %d of 16 on 8 nodes: node %d, want %d", k, got, want)
		}
	}
	for _, tt := range []struct {
		procs, nodes, node, ranks int
		share                     float64
	}{
		{16, 8, 3, 2, 0},
		{32, 8, 7, 4, 0.5},
		{8, 8, 0, 1, 0},
		{64, 2, 1, 32, 2.0 / 32},
		{3, 2, 0, 2, 0},
		{3, 2, 1, 1, 0},
	} {
		n := RanksOnNode(tt.node, tt.procs, tt.nodes)
		if n != tt.ranks {
			t.Errorf("%d ranks on %d nodes: node %d has %d, want %d", tt.procs, tt.nodes, tt.node, n, tt.ranks)
		}
		if got := CPUShare(2, n); got != tt.share {
			t.Errorf("%d ranks on a 2-CPU node: share %v, want %v", n, got, tt.share)
		}
	}
	for _, bad := range [][3]int{{-1, 4, 2}, {4, 4, 2}, {0, 0, 2}, {0, 4, 0}} {
		if got := NodeOfRank(bad[0], bad[1], bad[2]); got != -1 {
			t.Errorf("NodeOfRank%v = %d, want -1", bad, got)
		}
	}
}

// slowWriter takes a fixed time per list write.
type slowWriter struct {
	rankWriter
	d time.Duration
}

func (w slowWriter) WriteList(ctx context.Context, exts []mfg.Extent, p []byte) error {
	time.Sleep(w.d)
	return w.rankWriter.WriteList(ctx, exts, p)
}

// TestPhases: the time in list writes is I/O, and a CPU share of 1/4
// stretches a rank's compute phases to 4 times what it computed.
func TestPhases(t *testing.T) {
	p := Params{Runs: 4, Chains: 2, Procs: 2, Taxa: 16, Gens: 10, SampleFreq: 1, SwapFreq: 1, Seed: 3, Format: MB31}
	const d = 5 * time.Millisecond
	f := newMemFile()
	st := run(t, p, func(k int) Output {
		return Output{Mode: IOMFG, Lambda: 1, File: slowWriter{rankWriter{f, k}, d}, CPUShare: 0.25}
	})
	for k, s := range st {
		if s.IO < time.Duration(s.Writes)*d {
			t.Errorf("rank %d: I/O %v for %d writes of %v", k, s.IO, s.Writes, d)
		}
		if s.Compute <= 0 || s.Stretched <= 0 {
			t.Fatalf("rank %d: compute %v, stretched %v", k, s.Compute, s.Stretched)
		}
		// Compute = own + stretched, stretched >= 3 x own (timers only
		// ever sleep longer).
		if own := s.Compute - s.Stretched; s.Stretched < 3*own {
			t.Errorf("rank %d: computed %v, stretched by %v, want >= %v", k, own, s.Stretched, 3*own)
		}
	}
	plain := run(t, p, func(k int) Output { return Output{Mode: IONone, Lambda: 1} })
	for k, s := range plain {
		if s.Stretched != 0 {
			t.Errorf("rank %d without a CPU share stretched %v", k, s.Stretched)
		}
	}
}

// TestChainWork: a rank spends ChainWork per chain it holds per
// generation, in its compute phase, and the ranks with more chains longer.
func TestChainWork(t *testing.T) {
	// 3 runs x 2 chains on 4 ranks: ranks 0 and 1 hold 2 chains, 2 and 3 one.
	p := Params{Runs: 3, Chains: 2, Procs: 4, Taxa: 16, Gens: 10, SampleFreq: 2, SwapFreq: 1, Seed: 3, Format: MB31}
	const w = 2 * time.Millisecond
	st := run(t, p, func(k int) Output { return Output{Mode: IONone, Lambda: 1, ChainWork: w} })
	for k, s := range st {
		chains := 1
		if k < 2 {
			chains = 2
		}
		if want := time.Duration(chains) * time.Duration(p.Gens) * w; s.Compute < want {
			t.Errorf("rank %d (%d chains): compute %v, want >= %v", k, chains, s.Compute, want)
		}
	}
}
