package cost

// A send --auto starts sending the likely winner at once and measures the
// link from its own first bytes; it switches to another choice only when
// equation 3, counting what is already sent, says the other finishes
// sooner. What is sent is sunk: the send under way is priced from now
// (the bytes it has left, its answer, its g), the other from now too (the
// part of its encode still to do, its metadata, a new connection's round
// trips, its g).

// Left is the seconds the send under way still needs: left bytes over l,
// a round trip for the answer, and its g.
func Left(left float64, cur Estimate, l Link) float64 {
	return left/l.Effective() + l.RTT + cur.G
}

// Fresh is the seconds alt needs from now: alt.F is the part of its
// encode still to do (0 once encoded), then x/B, l.RoundTrip round trips
// (a new connection, the offer, the answer) and g.
func Fresh(alt Estimate, l Link) float64 { return Time(0, alt, l) }

// Switch says whether abandoning the send under way (left bytes to go,
// cur's g) for alt finishes sooner by more than the fraction margin of
// what the send under way still needs, and the two predictions. The
// margin covers what the predictions are not sure of (B from a send's
// first acknowledgements, g from the receiver's earlier regenerations):
// a switch that gains less than it can lose is not made.
func Switch(left float64, cur, alt Estimate, l Link, margin float64) (ok bool, curT, altT float64) {
	curT, altT = Left(left, cur, l), Fresh(alt, l)
	return altT < curT*(1-margin), curT, altT
}

// WorthEncoding says whether alt, whose g is known but not its encode
// or metadata, could beat the send under way even at its best (encoded
// in no time into no bytes) over a link no faster than l: only then is
// it worth encoding alt beside the send. Where left > x, a slower link
// favours alt further, so a bound on B from above is enough.
func WorthEncoding(left float64, cur Estimate, altG float64, l Link) bool {
	ok, _, _ := Switch(left, cur, Estimate{G: altG}, l, 0)
	return ok
}

// EncodeEarly says whether to start encoding alt while the bound on B
// from above (l.B, from the missing acknowledgements) is still up to k
// times too high for WorthEncoding: the bound falls as the time without
// an acknowledgement grows, and an encode started early is done by the
// time the bound allows the switch, instead of starting then. It costs an
// encode for nothing only where B turns out within k of the threshold.
func EncodeEarly(left float64, cur Estimate, altG float64, l Link, k float64) bool {
	if k > 1 {
		l.B /= k
	}
	return WorthEncoding(left, cur, altG, l)
}
