package periodic

import (
	"math"
	"math/rand/v2"
	"sort"
)

// GenConfig describes a synthetic iterative MPI program.
type GenConfig struct {
	Ranks int     // P, >= 1
	Iters int     // K iterations
	Step  float64 // seconds per iteration (default 1.0)
	// Noise is the standard deviation of each event's timestamp jitter in
	// seconds; the iteration length varies by Noise*4 too.
	Noise float64
	// Irregular is the probability per iteration and rank of an extra,
	// unplanned event (a checkpoint write or a probe).
	Irregular float64
	Seed      uint64
}

// slot is one planned event of a rank's iteration.
type slot struct {
	off       float64 // seconds into the iteration
	kind      string
	peer      func(r, p int) int64
	tag, size int64
}

// Generate produces the trace of a 1-D halo-exchange stencil code: per
// iteration each rank computes, sends to and receives from both
// neighbours, joins an allreduce of the residual and, every fourth
// iteration, a barrier-synchronised broadcast. Events are merged across
// ranks in time order. The result is deterministic for a given config.
func Generate(c GenConfig) []Event {
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	step := c.Step
	if step == 0 {
		step = 1.0
	}
	none := func(int, int) int64 { return -1 }
	left := func(r, p int) int64 { return int64((r + p - 1) % p) }
	right := func(r, p int) int64 { return int64((r + 1) % p) }
	root := func(int, int) int64 { return 0 }
	plan := []slot{
		{0.02, "compute", none, -1, 0},
		{0.55, "send", left, 10, 65536},
		{0.56, "send", right, 11, 65536},
		{0.60, "recv", right, 10, 65536},
		{0.61, "recv", left, 11, 65536},
		{0.80, "allreduce", none, -1, 8},
	}
	extra := []slot{
		{0.90, "barrier", none, -1, 0},
		{0.93, "bcast", root, -1, 4096},
	}
	type rec struct {
		t    float64
		r, s int
		ev   Event
	}
	var recs []rec
	t0 := 0.10
	for k := 0; k < c.Iters; k++ {
		for r := 0; r < c.Ranks; r++ {
			skew := 0.003 * float64(r) // ranks drift apart a little
			ps := plan
			if k%4 == 3 {
				ps = append(append([]slot(nil), plan...), extra...)
			}
			for si, s := range ps {
				t := t0 + s.off*step + skew + rng.NormFloat64()*c.Noise
				recs = append(recs, rec{t, r, si, Event{Rank: int64(r), Kind: s.kind, Peer: s.peer(r, c.Ranks), Tag: s.tag, Size: s.size}})
			}
			if c.Irregular > 0 && rng.Float64() < c.Irregular {
				ev := Event{Rank: int64(r), Kind: "io", Peer: -1, Tag: int64(k), Size: 1 << 20}
				if rng.IntN(2) == 0 {
					ev = Event{Rank: int64(r), Kind: "probe", Peer: right(r, c.Ranks), Tag: 99, Size: 0}
				}
				recs = append(recs, rec{t0 + rng.Float64()*step, r, 100, ev})
			}
		}
		t0 += step * (1 + math.Abs(rng.NormFloat64())*c.Noise*4)
	}
	for i := range recs {
		recs[i].ev.Time = int64(math.Round(math.Max(recs[i].t, 0) * 100))
	}
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		if a.ev.Time != b.ev.Time {
			return a.ev.Time < b.ev.Time
		}
		if a.r != b.r {
			return a.r < b.r
		}
		return a.s < b.s
	})
	evs := make([]Event, len(recs))
	for i, r := range recs {
		evs[i] = r.ev
	}
	return evs
}
