package search

import (
	"context"
	"fmt"
	"math"

	"github.com/pario/pario/tune/model"
)

// The dimensions of the paper's section I that Table IV's parallel space
// folds into "number of I/O processes": how many files the job writes and
// how many processes write each (its HMMER used 1024 per file, Table V).
const (
	Files        = "files"
	ProcsPerFile = "procs-per-file"
)

// TableIVFiles returns the sequential dimensions plus the number of files,
// 1-128, and processes per file, 1-12K (powers of two, and 12,288 as
// Table IV's bound), both on a log scale.
func TableIVFiles() []Dim {
	return append(TableIVSequential(),
		Dim{Name: Files, Kind: Pow2, Min: 1, Max: 128},
		Dim{Name: ProcsPerFile, Kind: Pow2, Min: 1, Max: 12 << 10})
}

// ParallelStriping extends Striping to a job of FileSize bytes written as
// F files of FileSize/F bytes, each by p processes at once (dimensions
// Files and ProcsPerFile besides Striping's), on a system of Targets
// targets. The paper gives no model for these; the assumptions, each a
// term of T, are:
//
//   - Files are placed on consecutive targets (as Lustre's allocator
//     spreads objects), so F files of n' used targets each load
//     r = ceil(F n' / Targets) files' busiest strips onto the busiest
//     target, and the job waits for min(F n', Targets) queues.
//   - Every process is a client of ClientBandwidth: the p processes of a
//     file each send FileSize/(F p) bytes, in parallel with the targets'
//     service, so the job takes the longer of the two.
//   - Processes sharing a strip pass its lock: a strip written in
//     transfers of t < s by p processes changes hands min(p, s/t) - 1
//     times, each costing an RPC.
//
// With F = p = 1 and a client faster than the targets it is Striping.
type ParallelStriping struct {
	Striping
	// Targets is the number of targets of the system (Table IV's 160).
	Targets int
}

// ID describes the objective and its settings, for a results database key.
func (ps ParallelStriping) ID() string {
	return fmt.Sprintf("striping-parallel/v1 lambda=%g gamma=%g V=%g size=%d rpc=%g client=%g targets=%d",
		ps.Model.Lambda, ps.Model.Gamma, ps.Model.V, ps.FileSize, ps.RPCOverhead, ps.ClientBandwidth, ps.Targets)
}

// Time returns T in seconds for stripe count n, strip size s, transfer
// size t (bytes), f files and p processes per file.
func (ps ParallelStriping) Time(n, s, t, f, p int64) (float64, error) {
	if err := ps.Validate(); err != nil {
		return 0, err
	}
	if n < 1 || s < 1 || t < 1 || f < 1 || p < 1 || ps.Targets < 1 {
		return 0, fmt.Errorf("search: parallel striping objective: stripe count %d, strip size %d, transfer size %d, files %d, processes per file %d and targets %d must be positive",
			n, s, t, f, p, ps.Targets)
	}
	file := (ps.FileSize + f - 1) / f
	strips := (file + s - 1) / s
	used := min(n, strips, int64(ps.Targets))
	busiest := (strips + used - 1) / used
	load := min(float64(busiest)*float64(s), float64(file))
	// Files per target at the busiest one, and queues the job waits for.
	perTarget := (f*used + int64(ps.Targets) - 1) / int64(ps.Targets)
	queues := min(f*used, int64(ps.Targets))
	w, err := model.MeanMaxWait(ps.Model, int(queues))
	if err != nil {
		return 0, err
	}
	piece := min(s, t)
	rpcs := float64(perTarget) * float64(busiest) * float64((s+piece-1)/piece)
	if t < s && p > 1 {
		rpcs += float64(perTarget) * float64(busiest) * float64(min(p, s/t)-1)
	}
	service := float64(perTarget) * load / (ps.Model.V * 1e9)
	client := float64(file) / float64(p) / ps.ClientBandwidth
	return w + math.Max(service, client) + ps.RPCOverhead*rpcs + float64(t)/ps.ClientBandwidth, nil
}

// Evaluate implements Objective on a space with the dimensions of
// TableIVFiles; Files and ProcsPerFile default to 1 when absent.
func (ps ParallelStriping) Evaluate(_ context.Context, x Params) (float64, error) {
	n, s, t, err := stripingParams(x)
	if err != nil {
		return 0, err
	}
	f, ok := x.Get(Files)
	if !ok {
		f = 1
	}
	p, ok := x.Get(ProcsPerFile)
	if !ok {
		p = 1
	}
	return ps.Time(n, s, t, f, p)
}
