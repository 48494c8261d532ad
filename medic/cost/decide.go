package cost

import (
	"fmt"
	"math"
)

// Quadrant is where an output falls in the paper's figure 2 for one link:
// its axes are the reduction in data size and the post-processing time.
// With the thresholds at half the output (x <= D/2) and half the raw
// transfer time (f + g < D/(2B)), equation 3 (D - x > B (f + g)) decides
// quadrants 1 and 3 outright, as the paper says, and leaves 2 and 4 to the
// measured numbers.
type Quadrant int

const (
	// Q1: large reduction, little post-processing: the plugin always pays.
	Q1 Quadrant = 1 + iota
	// Q2: large reduction, much post-processing: it depends.
	Q2
	// Q3: small reduction, much post-processing: it never pays.
	Q3
	// Q4: small reduction, little post-processing: it depends.
	Q4
)

// Classify places e (for an output of D bytes over bandwidth B) in its
// quadrant. A bandwidth of 0 or less is taken as no link at all: then
// every post-processing time is small.
func Classify(D float64, e Estimate, B float64) Quadrant {
	large := e.X <= D/2
	little := B <= 0 || e.F+e.G < D/(2*B)
	switch {
	case large && little:
		return Q1
	case large:
		return Q2
	case little:
		return Q4
	}
	return Q3
}

func (q Quadrant) String() string {
	switch q {
	case Q1:
		return "quadrant 1 (large reduction, little post-processing: pays)"
	case Q2:
		return "quadrant 2 (large reduction, much post-processing: depends on the link)"
	case Q3:
		return "quadrant 3 (small reduction, much post-processing: never pays)"
	case Q4:
		return "quadrant 4 (small reduction, little post-processing: depends on the link)"
	}
	return fmt.Sprintf("quadrant %d", int(q))
}

// Short is the quadrant's number, as a plan's column shows it.
func (q Quadrant) Short() string { return fmt.Sprintf("Q%d", int(q)) }

// ScaleG carries a regeneration time measured on one machine to another
// by the ratio of their speeds now (any unit, the same for both): a
// receiver half as fast, or as loaded, takes twice as long. A speed that
// is unknown (0 or less) leaves g as it is.
func ScaleG(g, measuredOn, target float64) float64 {
	if measuredOn <= 0 || target <= 0 {
		return g
	}
	return g * measuredOn / target
}

// GFromHistory predicts the regeneration time of D output bytes from a
// receiver's record of earlier regenerations with the same plugin: it
// regenerated at rate bytes/s when its speed was then; now it is now.
// It returns false when there is no usable record.
func GFromHistory(D, rate, then, now float64) (float64, bool) {
	if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
		return 0, false
	}
	return ScaleG(D/rate, then, now), true
}

// Sizes of a socket buffer sized to the link: below MinSocketBuffer the
// kernel's own autotuning does as well; above MaxSocketBuffer the memory
// per connection is not worth it (and kernels cap it anyway).
const (
	MinSocketBuffer = 256 << 10
	MaxSocketBuffer = 64 << 20
)

// SocketBuffer is the bandwidth-delay product B x RTT that the paper
// sized its socket buffers to, within [MinSocketBuffer, MaxSocketBuffer].
// It is 0, leave the buffers alone, when B or RTT is unknown.
func SocketBuffer(B, RTT float64) int {
	if B <= 0 || RTT <= 0 || math.IsNaN(B*RTT) {
		return 0
	}
	bdp := B * RTT
	return int(math.Min(math.Max(bdp, MinSocketBuffer), MaxSocketBuffer))
}

// Decision is the choice among a plan's rows and why.
type Decision struct {
	Best Choice
	// Next is the runner-up (nil with one row): Best is cheaper by
	// Next.A - Best.A.
	Next *Choice
}

// Decide takes the cheapest row by the predicted time A: the model never
// chooses a row it prices as slower than another. Ties go to the row that
// comes first (Plan's order). ok is false when there are no rows.
func Decide(cs []Choice) (d Decision, ok bool) {
	if len(cs) == 0 {
		return d, false
	}
	bi := 0
	for i, c := range cs {
		if c.A < cs[bi].A {
			bi = i
		}
	}
	d.Best = cs[bi]
	for i := range cs {
		if i != bi && (d.Next == nil || cs[i].A < d.Next.A) {
			c := cs[i]
			d.Next = &c
		}
	}
	return d, true
}

// Why says in one line why d.Best was chosen, naming the terms of the
// model that made the difference against the runner-up.
func (d Decision) Why() string {
	b := d.Best
	if d.Next == nil {
		return fmt.Sprintf("%s is the only candidate", b.Name)
	}
	n := *d.Next
	return fmt.Sprintf("%s is predicted %.3f s, %.3f s less than %s (%.3f s): f+g %.3f s against %.3f s, transfer (x/B, round trips) %.3f s against %.3f s",
		b.Name, b.A, n.A-b.A, n.Name, n.A, b.F+b.G, n.F+n.G, b.A-b.F-b.G, n.A-n.F-n.G)
}

// Robust says whether the cheapest of es over l stays the cheapest over
// the same link with a bandwidth k times smaller and k times larger: then
// a rough measure of B (within a factor k) is enough to choose.
func Robust(T, D float64, es []Estimate, l Link, k float64) bool {
	d, ok := Decide(Plan(T, D, es, l))
	if !ok {
		return true
	}
	for _, f := range []float64{1 / k, k} {
		lk := l
		lk.B *= f
		dk, _ := Decide(Plan(T, D, es, lk))
		if dk.Best.Name != d.Best.Name {
			return false
		}
	}
	return true
}
