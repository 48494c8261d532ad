// Package cost is ParaMEDIC's cost model (pure arithmetic, no I/O).
//
// With a plugin, the output arrives after
//
//	A  = T + f(x) + x/B + g(x)
//
// and without one after
//
//	A' = T + D/B
//
// where T is the application's run time, D the output's size, x the
// metadata's size, f the time to make the metadata at the compute site,
// g the time to regenerate the output at the storage site, and B the
// link's bandwidth. The plugin pays when D - x > B (f + g), that is below
// the crossover bandwidth B* = (D - x) / (f + g).
//
// A link also costs a few round trips per transfer (handshake, offer,
// result) and, for one stream with a window W, limits the rate to W/RTT:
// Link folds both in, so that the model predicts what a real single
// stream over a long link does.
package cost

import (
	"math"
	"sort"
)

// Estimate is one way of moving the output: a plugin with its measured
// metadata size and times. Raw transfer is the estimate with X = D and F
// = G = 0 (or the measured sealing cost when the raw bytes are encrypted).
type Estimate struct {
	Name string
	X    float64 // metadata bytes
	F    float64 // seconds to encode at the compute site
	G    float64 // seconds to regenerate at the storage site
}

// Link is the network between the sites.
type Link struct {
	B         float64 // bandwidth, bytes/s
	RTT       float64 // round trip, seconds
	Window    float64 // bytes in flight for one stream (0: unlimited)
	RoundTrip float64 // round trips per transfer besides the data (handshake, offer, result)
}

// Effective is the rate one stream gets: min(B, Window/RTT).
func (l Link) Effective() float64 {
	b := l.B
	if l.Window > 0 && l.RTT > 0 {
		b = math.Min(b, l.Window/l.RTT)
	}
	return b
}

// Time predicts the seconds to move the output with e over l, after an
// application that ran T seconds: T + f + x/B + g (+ round trips).
func Time(T float64, e Estimate, l Link) float64 {
	return T + e.F + e.X/l.Effective() + e.G + l.RoundTrip*l.RTT
}

// Raw is the paper's A' = T + D/B (+ round trips).
func Raw(T, D float64, l Link) float64 {
	return T + D/l.Effective() + l.RoundTrip*l.RTT
}

// Crossover is B* = (D - x)/(f + g): the plugin pays at bandwidths below
// it. It is +Inf when f + g = 0 and x < D, and 0 when x >= D (never pays).
func Crossover(D float64, e Estimate) float64 {
	if e.X >= D {
		return 0
	}
	if e.F+e.G <= 0 {
		return math.Inf(1)
	}
	return (D - e.X) / (e.F + e.G)
}

// CrossoverPair is the bandwidth below which a beats b (a having the
// smaller metadata): (x_b - x_a) / ((f_a+g_a) - (f_b+g_b)). It is +Inf if
// a is also faster to compute, 0 if a never wins.
func CrossoverPair(a, b Estimate) float64 {
	dx := b.X - a.X
	dc := (a.F + a.G) - (b.F + b.G)
	switch {
	case dx <= 0 && dc >= 0:
		return 0
	case dx >= 0 && dc <= 0:
		return math.Inf(1)
	}
	return dx / dc
}

// CrossoverRTT is the round trip above which e beats raw transfer over a
// windowed link of bandwidth B: where Window/RTT falls to B*. It is 0 if
// e already wins at B (or with no window), +Inf if it never does.
func CrossoverRTT(D float64, e Estimate, l Link) float64 {
	bs := Crossover(D, e)
	if bs == 0 || l.Window <= 0 {
		return math.Inf(1)
	}
	if bs >= l.B {
		return 0
	}
	return l.Window / bs
}

// Choice is one row of a plan.
type Choice struct {
	Estimate
	A       float64 // predicted seconds
	Speedup float64 // raw's A' / A
}

// Plan predicts every estimate over l and sorts them, fastest first. raw
// is always included as "raw" with X = D unless the estimates hold one.
func Plan(T, D float64, es []Estimate, l Link) []Choice {
	hasRaw := false
	for _, e := range es {
		hasRaw = hasRaw || e.Name == "raw"
	}
	if !hasRaw {
		es = append(es, Estimate{Name: "raw", X: D})
	}
	raw := Raw(T, D, l)
	for _, e := range es {
		if e.Name == "raw" {
			raw = Time(T, e, l)
		}
	}
	out := make([]Choice, 0, len(es))
	for _, e := range es {
		a := Time(T, e, l)
		out = append(out, Choice{Estimate: e, A: a, Speedup: raw / a})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].A < out[j].A })
	return out
}
