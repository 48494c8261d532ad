package search

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/pario/pario/tune/model"
	"github.com/pario/pario/tune/sim"
)

// Striping is an analytic objective over the Table IV sequential space
// (dimensions StripeCount, StripSize, TransferSize): the expected time, in
// seconds, to write one file of FileSize bytes. It extends the queueing
// model of package tune/model, which treats a file as n equal blocks on n
// targets, with the effects of the strip and transfer sizes:
//
//   - The file is cut into k = ceil(M/s) strips dealt round robin over the
//     n targets, so only n' = min(n, k) targets hold data and the busiest
//     holds b = ceil(k/n') strips, L = min(b*s, M) bytes: large strips
//     leave targets idle or unevenly loaded.
//   - The file waits for the slowest of its n' targets: E(max W) over n'
//     equilibrium queues (model.MeanMaxWait), plus L/V of service.
//   - A transfer never crosses a strip boundary on the wire: each strip is
//     written in pieces of min(s, t) bytes, every piece an RPC that costs the
//     busiest target RPCOverhead seconds: b*ceil(s/min(s, t)) of them.
//   - The client fills a transfer buffer before the first RPC leaves:
//     t/ClientBandwidth seconds of start-up.
//
// So T(n, s, t) = E(max W over n') + L/V + c*b*ceil(s/min(s, t)) + t/B. Its
// minimum is interior in all three dimensions and the dimensions interact
// (the imbalance makes T ragged in n for large strips), which is what the
// search methods are measured on. It is deterministic and fast (no
// allocation beyond the call).
type Striping struct {
	// Model holds lambda and gamma (1/s) and V, the write speed of one
	// target in GB/s (10^9 bytes per second).
	Model model.Params
	// FileSize is M, in bytes.
	FileSize int64
	// RPCOverhead is the fixed cost of one RPC at a target, in seconds.
	RPCOverhead float64
	// ClientBandwidth is the client's buffer fill rate, in bytes per second.
	ClientBandwidth float64
}

// The paper's Table I (Kraken): a seek time of 0.004 s, which Striping
// charges per RPC, and a transfer speed of 10 Gbit/s, the client's rate.
const (
	PaperSeek     = 0.004
	PaperTransfer = 10e9 / 8 // bytes per second
)

// PaperStriping is the Striping objective with the paper's values for a
// file of size bytes: lambda = 0.1/s, gamma = 0.125/s and V = 0.0625 GB/s,
// which reproduce its Table III, and its Table I's seek time per RPC and
// transfer speed for the client.
func PaperStriping(size int64) Striping {
	return Striping{
		Model:           model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625},
		FileSize:        size,
		RPCOverhead:     PaperSeek,
		ClientBandwidth: PaperTransfer,
	}
}

// Describe says which costs the objective adds to the model, and where
// their values come from when they are the paper's.
func (st Striping) Describe() string {
	rpc := fmt.Sprintf("%g s per RPC", st.RPCOverhead)
	if st.RPCOverhead == PaperSeek {
		rpc += " (Table I's seek time)"
	}
	client := fmt.Sprintf("client at %g GB/s", st.ClientBandwidth/1e9)
	if st.ClientBandwidth == PaperTransfer {
		client += " (Table I's 10 Gbit/s)"
	}
	return "strips round robin, " + rpc + ", " + client
}

// ID describes the objective and its settings, for a results database key.
func (st Striping) ID() string {
	return fmt.Sprintf("striping/v1 lambda=%g gamma=%g V=%g size=%d rpc=%g client=%g",
		st.Model.Lambda, st.Model.Gamma, st.Model.V, st.FileSize, st.RPCOverhead, st.ClientBandwidth)
}

// Validate checks the settings.
func (st Striping) Validate() error {
	if err := st.Model.Validate(); err != nil {
		return fmt.Errorf("search: striping objective: %w", err)
	}
	switch {
	case st.FileSize < 1:
		return fmt.Errorf("search: striping objective: file size %d is not positive", st.FileSize)
	case !(st.RPCOverhead >= 0) || math.IsInf(st.RPCOverhead, 0):
		return fmt.Errorf("search: striping objective: RPC overhead %v is negative or not finite", st.RPCOverhead)
	case !(st.ClientBandwidth > 0) || math.IsInf(st.ClientBandwidth, 0):
		return fmt.Errorf("search: striping objective: client bandwidth %v is not positive and finite", st.ClientBandwidth)
	}
	return nil
}

// Time returns T(n, s, t) in seconds for stripe count n, strip size s and
// transfer size t (bytes).
func (st Striping) Time(n, s, t int64) (float64, error) {
	return st.time(n, s, t, func(n int) (float64, error) { return model.MeanMaxWait(st.Model, n) })
}

// time computes T with wait(n') for E(max W) over n' targets.
func (st Striping) time(n, s, t int64, wait func(int) (float64, error)) (float64, error) {
	if err := st.Validate(); err != nil {
		return 0, err
	}
	if n < 1 || s < 1 || t < 1 {
		return 0, fmt.Errorf("search: striping objective: stripe count %d, strip size %d and transfer size %d must be positive", n, s, t)
	}
	strips := (st.FileSize + s - 1) / s
	used := min(n, strips)
	busiest := (strips + used - 1) / used
	load := min(float64(busiest)*float64(s), float64(st.FileSize))
	w, err := wait(int(used))
	if err != nil {
		return 0, err
	}
	piece := min(s, t)
	rpcs := float64(busiest) * float64((s+piece-1)/piece)
	return w + load/(st.Model.V*1e9) + st.RPCOverhead*rpcs + float64(t)/st.ClientBandwidth, nil
}

func stripingParams(x Params) (n, s, t int64, err error) {
	n, ok1 := x.Get(StripeCount)
	s, ok2 := x.Get(StripSize)
	t, ok3 := x.Get(TransferSize)
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, 0, fmt.Errorf("search: striping objective needs %s, %s and %s, got %v", StripeCount, StripSize, TransferSize, x)
	}
	return n, s, t, nil
}

// Evaluate implements Objective on a space with the StripeCount, StripSize
// and TransferSize dimensions (other dimensions are ignored).
func (st Striping) Evaluate(_ context.Context, x Params) (float64, error) {
	n, s, t, err := stripingParams(x)
	if err != nil {
		return 0, err
	}
	return st.Time(n, s, t)
}

// SimStriping is the Striping objective with the waiting time simulated
// by package tune/sim instead of taken from the model's closed form: the
// mean over Experiments experiments of the largest work found queued at n'
// targets (Stationary start, job arriving at Time). Everything else in T is
// deterministic, and the simulated part depends only on n', so it is
// simulated once per n' and remembered; the simulator's common random
// numbers (the background traffic of queue j in experiment k does not
// depend on n') make T smooth in n' for a fixed Seed. It is deterministic
// for its settings and safe for concurrent use. Make one with
// NewSimStriping.
type SimStriping struct {
	Striping
	Experiments int
	Seed        uint64
	Time        float64

	mu    sync.Mutex
	waits map[int]*simWait
	runs  atomic.Int64
}

type simWait struct {
	mu   sync.Mutex
	done bool
	v    float64
}

// NewSimStriping returns a simulated Striping objective. Experiments and
// time default to 2000 and 20 s when zero.
func NewSimStriping(st Striping, experiments int, seed uint64, time float64) (*SimStriping, error) {
	if experiments == 0 {
		experiments = 2000
	}
	if time == 0 {
		time = 20
	}
	if err := st.Validate(); err != nil {
		return nil, err
	}
	switch {
	case experiments < 1:
		return nil, fmt.Errorf("search: simulated striping objective: %d experiments", experiments)
	case !(time > 0) || math.IsInf(time, 0):
		return nil, fmt.Errorf("search: simulated striping objective: arrival time %v is not positive and finite", time)
	}
	return &SimStriping{Striping: st, Experiments: experiments, Seed: seed, Time: time, waits: map[int]*simWait{}}, nil
}

// ID describes the objective and its settings, for a results database key.
func (ss *SimStriping) ID() string {
	return fmt.Sprintf("striping-sim/v1 lambda=%g gamma=%g V=%g size=%d rpc=%g client=%g experiments=%d seed=%d time=%g",
		ss.Model.Lambda, ss.Model.Gamma, ss.Model.V, ss.FileSize, ss.RPCOverhead, ss.ClientBandwidth, ss.Experiments, ss.Seed, ss.Time)
}

// Simulations is how many simulator runs the objective has made (one per
// distinct n', or one per Prefetch).
func (ss *SimStriping) Simulations() int64 { return ss.runs.Load() }

// Evaluate implements Objective like Striping.Evaluate.
func (ss *SimStriping) Evaluate(ctx context.Context, x Params) (float64, error) {
	n, s, t, err := stripingParams(x)
	if err != nil {
		return 0, err
	}
	return ss.time(n, s, t, func(n int) (float64, error) { return ss.wait(ctx, n) })
}

// Prefetch simulates the waiting time for every n' = 1..maxN in one pass
// (sim.Sweep, which gives exactly the values of separate runs at a fraction
// of the cost): worth it before evaluating much of the space, as an
// exhaustive search does.
func (ss *SimStriping) Prefetch(ctx context.Context, maxN int) error {
	if maxN < 1 {
		return fmt.Errorf("search: simulated striping objective: prefetch up to %d targets", maxN)
	}
	r, err := sim.Sweep(ctx, ss.simConfig(maxN))
	if err != nil {
		return err
	}
	ss.runs.Add(1)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i, v := range r.Mean {
		if ss.waits[i+1] == nil {
			ss.waits[i+1] = &simWait{}
		}
		w := ss.waits[i+1]
		w.mu.Lock()
		if !w.done {
			w.v, w.done = v, true
		}
		w.mu.Unlock()
	}
	return nil
}

func (ss *SimStriping) simConfig(n int) sim.Config {
	return sim.Config{
		Lambda: ss.Model.Lambda, Gamma: ss.Model.Gamma, V: ss.Model.V,
		FileSize: 0, Stripes: n, Time: ss.Time, Experiments: ss.Experiments, Seed: ss.Seed,
	}
}

func (ss *SimStriping) wait(ctx context.Context, n int) (float64, error) {
	ss.mu.Lock()
	w := ss.waits[n]
	if w == nil {
		w = &simWait{}
		ss.waits[n] = w
	}
	ss.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return w.v, nil
	}
	r, err := sim.Run(ctx, ss.simConfig(n))
	if err != nil {
		return 0, err
	}
	ss.runs.Add(1)
	w.v, w.done = r.Mean, true
	return w.v, nil
}
