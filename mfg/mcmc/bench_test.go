package mcmc

import (
	"context"
	"fmt"
	"testing"

	"github.com/pario/pario/mfg"
)

// soloComm is one rank of size ranks whose collectives return at once:
// enough to time one rank's side of an MFG run (which meets the others
// only at the barrier).
type soloComm struct{ rank, size int }

func (c soloComm) Rank() int                                             { return c.rank }
func (c soloComm) Size() int                                             { return c.size }
func (c soloComm) Barrier(context.Context) error                         { return nil }
func (c soloComm) Gather(context.Context, int, []byte) ([][]byte, error) { return nil, nil }
func (c soloComm) Broadcast(_ context.Context, _ int, b []byte) ([]byte, error) {
	return b, nil
}

type discard struct{}

func (discard) WriteList(context.Context, []mfg.Extent, []byte) error { return nil }

// BenchmarkComplete1Generation is one process's cost of a Complete-1
// generation (one run per process, runs = processes) as the runs grow: flat,
// since a process looks only at its own runs and writes its own lines, with
// no gather to rank 0. Compare ns/gen across the sub-benchmarks.
func BenchmarkComplete1Generation(b *testing.B) {
	const gens = 200
	for _, runs := range []int{8, 64, 512, 4096} {
		p := Params{Runs: runs, Chains: 4, Procs: runs, Taxa: 16, Gens: gens, SampleFreq: 1, SwapFreq: 1, Seed: 1, Format: MB31}
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			out := Output{Mode: IOMFG, Lambda: 1, File: discard{}}
			for b.Loop() {
				if _, err := Run(context.Background(), soloComm{runs / 2, runs}, p, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/gens, "ns/gen")
		})
	}
}

// TestComplete1WorkFlat: the work of one process in a Complete-1 run —
// writes, extents and bytes — is the same for 8 and 4096 runs.
func TestComplete1WorkFlat(t *testing.T) {
	var first Stats
	for i, runs := range []int{8, 4096} {
		p := Params{Runs: runs, Chains: 4, Procs: runs, Taxa: 16, Gens: 50, SampleFreq: 1, SwapFreq: 1, Seed: 1, Format: MB31}
		st, err := Run(context.Background(), soloComm{runs / 2, runs}, p, Output{Mode: IOMFG, Lambda: 1, File: discard{}})
		if err != nil {
			t.Fatal(err)
		}
		st.Moves = 0
		st.Compute, st.IO = 0, 0 // times, not work
		if i == 0 {
			first = st
		} else if st != first {
			t.Errorf("one process's work at %d runs %+v, at 8 runs %+v", runs, st, first)
		}
	}
}
