package mcmc

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/mfg"
)

// distWriter counts the bytes each rank's writes put on each datafile of
// a distribution.
type distWriter struct {
	d    dist.Distribution
	mu   *sync.Mutex
	per  map[[2]int]int64 // (rank, datafile) -> bytes
	rank int
}

func (w distWriter) WriteList(_ context.Context, exts []mfg.Extent, p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range exts {
		for lo := e.Off; lo < e.End(); {
			df, _ := w.d.ToPhysical(lo)
			n := min(w.d.ContiguousLength(lo), e.End()-lo)
			w.per[[2]int{w.rank, df}] += n
			lo += n
		}
	}
	return nil
}

// Varstrip with mfg.Strips keeps every rank's bytes on its own server
// over 100 generations, with lambda 1 and 4, for pi_1; with fewer runs
// than processes (figure 7.5) each run's bytes stay on one server.
func TestVarstripKeepsRanksOnTheirServers(t *testing.T) {
	for _, tc := range []struct {
		runs, chains, procs, servers int
		lambda                       int64
	}{
		{8, 4, 8, 8, 1},
		{8, 4, 8, 8, 4},
		{16, 2, 4, 4, 1},
		{16, 2, 8, 4, 3}, // two ranks per server
		{2, 4, 8, 8, 1},  // figure 7.5: run groups
		{4, 4, 8, 8, 2},
	} {
		p := Params{Runs: tc.runs, Chains: tc.chains, Procs: tc.procs, Taxa: 16, Gens: 100, SampleFreq: 1, SwapFreq: 1, Seed: 11, Format: MB31}
		t.Run(fmt.Sprintf("%v on %d servers, lambda %d", p.Config(), tc.servers, tc.lambda), func(t *testing.T) {
			m := mustMap(t, p)
			serverOf := mfg.RoundRobin(p.Procs, tc.servers)
			strips, placement, err := mfg.Strips(m, p.Config(), serverOf)
			if err != nil {
				t.Fatal(err)
			}
			d, err := dist.New(dist.Varstrip, "strips="+strips, len(placement))
			if err != nil {
				t.Fatal(err)
			}
			per := map[[2]int]int64{}
			var mu sync.Mutex
			stats := run(t, p, func(k int) Output {
				return Output{Mode: IOMFG, Lambda: tc.lambda, File: distWriter{d, &mu, per, k}}
			})
			var total int64
			for key, n := range per {
				total += n
				k, df := key[0], key[1]
				server := placement[df]
				if p.Config().Pi1() && server != serverOf[k] {
					t.Errorf("rank %d put %d B on server %d, its own is %d", k, n, server, serverOf[k])
				}
			}
			if total != m.Size() {
				t.Errorf("%d B written, file of %d", total, m.Size())
			}
			if !p.Config().Pi1() {
				// Run groups: a run's bytes on the server of its first
				// writer, whichever rank of its group holds it later.
				moves := int64(0)
				for _, st := range stats {
					moves += st.Moves
				}
				if moves == 0 {
					t.Error("no cold chain moved: the case does not test run groups")
				}
				first := p.Config().Initial()
				for key := range per {
					lo, hi := p.Config().RunsOf(key[0])
					for r := lo; r < hi; r++ {
						if placement[key[1]] != serverOf[first[r]] {
							t.Errorf("rank %d wrote run %d's bytes on server %d, the run's is %d", key[0], r, placement[key[1]], serverOf[first[r]])
						}
					}
				}
			}
		})
	}
}

// simple_stripe, for contrast: over 100 generations a rank's lines reach
// every server.
func TestSimpleStripeSpreadsRanks(t *testing.T) {
	p := Params{Runs: 8, Chains: 4, Procs: 8, Taxa: 16, Gens: 100, SampleFreq: 1, SwapFreq: 1, Seed: 11, Format: MB31}
	d, err := dist.New(dist.SimpleStripe, "strip_size=4096", 8)
	if err != nil {
		t.Fatal(err)
	}
	per := map[[2]int]int64{}
	var mu sync.Mutex
	run(t, p, func(k int) Output { return Output{Mode: IOMFG, Lambda: 1, File: distWriter{d, &mu, per, k}} })
	for k := range p.Procs {
		servers := 0
		for df := range 8 {
			if per[[2]int{k, df}] > 0 {
				servers++
			}
		}
		if servers < 4 {
			t.Errorf("rank %d wrote to %d servers under simple_stripe, want most of 8", k, servers)
		}
	}
}
