package medic

import (
	"math"
	"testing"
	"time"

	"github.com/pario/pario/medic/cost"
)

// The link SendAuto decides with, from the acknowledgements of its first
// send: their rate once two frames' worth arrived, before that the known
// link or, lower, the bound the missing acknowledgement gives.
func TestLinkFromAcks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	const size = 1 << 20
	at := func(ts ...any) []autoAck {
		var out []autoAck
		for i := 0; i < len(ts); i += 2 {
			out = append(out, autoAck{at: ms(ts[i].(int)), done: int64(ts[i+1].(int)), size: size})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		acks    []autoAck
		link    cost.Link
		known   bool
		now     int // ms
		wantOK  bool
		wantB   float64
		wantSrc string
	}{
		{"no acknowledgement yet, just started", at(0, 0), cost.Link{}, false, 3, false, 0, "x"},
		{"no acknowledgement in 1 s: fewer than 32 KiB arrived", at(0, 0), cost.Link{}, false, 1000, true, 32768, "bounded by the send"},
		{"the bound less a round trip", at(0, 0), cost.Link{RTT: 0.2}, false, 1200, true, 32768, "bounded by the send"},
		{"two frames in 1.31 s: their rate", at(0, 0, 655, 32768, 1311, 65536), cost.Link{}, false, 1400, true, 65536 / 1.311, "measured from the send"},
		{"a known link while it is below the bound", at(0, 0), cost.Link{B: 1e6}, true, 10, true, 1e6, "x"},
		{"a known link above the bound: the bound", at(0, 0), cost.Link{B: 1e6}, true, 1000, true, 32768, "bounded by the send"},
		{"a resumed send counts from where it resumed", at(0, 500000, 100, 565536), cost.Link{}, false, 150, true, 655360, "measured from the send"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, src, ok := linkFromAcks(tc.acks, tc.link, tc.known, "x", ms(tc.now))
			if ok != tc.wantOK || ok && (math.Abs(l.B-tc.wantB) > 1 || src != tc.wantSrc) {
				t.Errorf("linkFromAcks = %.0f B/s (%s), %v; want %.0f (%s), %v", l.B, src, ok, tc.wantB, tc.wantSrc, tc.wantOK)
			}
		})
	}
}
