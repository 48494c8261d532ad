package mcmc

import (
	"context"
	"fmt"
	"time"
)

// The phases a rank's time is split into, for the thesis' I/O share
// (definition 2.1) and the emulated CPU share.
const (
	phaseCompute = iota
	phaseIO
)

// phase charges the time since the end of the last phase to phase p. A
// compute phase of a rank with a CPU share below 1 is stretched first:
// the rank sleeps (1/share - 1) times what it computed, as if the other
// ranks of its emulated node had the CPU meanwhile. That emulates a node
// with fewer CPUs than ranks (the thesis' process saturation number at one
// process per CPU); it does not emulate the real cores the emulated nodes
// share on this machine, nor caches or memory bandwidth.
func (w *worker) phase(ctx context.Context, p int) error {
	now := time.Now()
	d := now.Sub(w.mark)
	if p == phaseCompute {
		if extra := stretch(d, w.out.CPUShare); extra > 0 {
			t := time.NewTimer(extra)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("mcmc: rank %d: emulated CPU share: %w", w.rank, ctx.Err())
			}
			now = time.Now()
			w.st.Stretched += now.Sub(w.mark) - d
			d = now.Sub(w.mark)
		}
		w.st.Compute += d
	} else {
		w.st.IO += d
	}
	w.mark = now
	return nil
}

// stretch is how much longer compute time d takes with share of a CPU:
// d (1/share - 1), 0 for a share outside (0, 1).
func stretch(d time.Duration, share float64) time.Duration {
	if !(share > 0 && share < 1) || d <= 0 {
		return 0
	}
	return time.Duration(float64(d) * (1/share - 1))
}

// CPUShare is the share of a CPU each of ranks ranks gets on a node of
// cpus CPUs: 1 while there are enough, cpus/ranks beyond (0 if either is
// below 1: no emulation).
func CPUShare(cpus, ranks int) float64 {
	if cpus < 1 || ranks < 1 || ranks <= cpus {
		return 0
	}
	return float64(cpus) / float64(ranks)
}

// NodeOfRank is the emulated node of rank k of procs ranks on nodes nodes,
// placed in blocks as mpirun fills a node's slots before the next (ranks
// 0 and 1 on node 0 for 16 ranks on 8 nodes).
func NodeOfRank(k, procs, nodes int) int {
	if procs < 1 || nodes < 1 || k < 0 || k >= procs {
		return -1
	}
	return k * nodes / procs
}

// RanksOnNode counts the ranks NodeOfRank puts on node.
func RanksOnNode(node, procs, nodes int) int {
	n := 0
	for k := range procs {
		if NodeOfRank(k, procs, nodes) == node {
			n++
		}
	}
	return n
}

// work spends d as a chain's computation would (Output.ChainWork): asleep,
// so the emulated ranks do not take the real cores from each other.
func (w *worker) work(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcmc: rank %d: chain work: %w", w.rank, ctx.Err())
	}
}
