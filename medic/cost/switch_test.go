package cost

import (
	"math"
	"testing"
)

// The switch rule prices what is left of the send under way against the
// other choice from now: what is already sent is sunk, the other's encode
// is counted only for the part still to do, and it pays a new
// connection's round trips.
func TestSwitch(t *testing.T) {
	zstd := Estimate{Name: "zstd", G: 0.01}
	for _, tc := range []struct {
		name     string
		left     float64
		alt      Estimate
		l        Link
		want     bool
		cur, the float64 // predictions
	}{
		{"slow link, tiny metadata: switch", 500e3, Estimate{Name: "blast", X: 20e3, G: 4}, Link{B: 50e3},
			true, 10.01, 4.4},
		{"mid link: the send under way finishes first", 500e3, Estimate{Name: "blast", X: 20e3, G: 4}, Link{B: 1e6},
			false, 0.51, 4.02},
		{"most already sent: finishing is cheaper", 100e3, Estimate{Name: "blast", X: 20e3, G: 2}, Link{B: 50e3},
			false, 2.01, 2.4},
		{"an encode still to do counts", 500e3, Estimate{Name: "blast", X: 20e3, F: 6, G: 4}, Link{B: 50e3},
			false, 10.01, 10.4},
		{"a new connection's round trips count", 400e3, Estimate{Name: "blast", X: 0, G: 1}, Link{B: 1e6, RTT: 0.2, RoundTrip: 3.5},
			false, 0.61, 1.7},
		{"metadata larger than what is left never pays", 100e3, Estimate{Name: "m", X: 200e3, G: 0}, Link{B: 10e3},
			false, 10.01, 20},
		{"window-limited stream: the effective rate", 1e6, Estimate{Name: "blast", X: 10e3, G: 2}, Link{B: 100e6, RTT: 0.1, Window: 64e3},
			false, 1.6725, 2.0156},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, cur, alt := Switch(tc.left, zstd, tc.alt, tc.l, 0)
			if ok != tc.want || math.Abs(cur-tc.cur) > 1e-3 || math.Abs(alt-tc.the) > 1e-3 {
				t.Errorf("Switch = %v, %.4f s, %.4f s; want %v, %.4f s, %.4f s", ok, cur, alt, tc.want, tc.cur, tc.the)
			}
			// Never a switch the model prices as slower.
			if ok && alt >= cur {
				t.Errorf("switched to %.4f s from %.4f s", alt, cur)
			}
		})
	}
}

// WorthEncoding is Switch at the other's best case, and a bound on B from
// above is enough: where it holds at B it holds at every lower B.
func TestWorthEncoding(t *testing.T) {
	cur := Estimate{Name: "zstd"}
	for _, tc := range []struct {
		left, g, b float64
		want       bool
	}{
		{500e3, 4, 50e3, true},   // 10 s left against 4 s
		{500e3, 4, 200e3, false}, // 2.5 s left
		{500e3, 0, 10e6, true},   // nothing beats no time
		{0, 0, 50e3, false},      // nothing left: never
	} {
		if got := WorthEncoding(tc.left, cur, tc.g, Link{B: tc.b}); got != tc.want {
			t.Errorf("WorthEncoding(left %g, g %g, B %g) = %v, want %v", tc.left, tc.g, tc.b, got, tc.want)
		}
		if WorthEncoding(tc.left, cur, tc.g, Link{B: tc.b}) {
			for _, f := range []float64{0.5, 0.1, 0.01} {
				if !WorthEncoding(tc.left, cur, tc.g, Link{B: tc.b * f}) {
					t.Errorf("worth encoding at B %g but not at %g", tc.b, tc.b*f)
				}
			}
		}
	}
}

// Property: for any send under way and any other choice, Switch says yes
// exactly when the other's prediction is lower, and both predictions grow
// as the link slows.
func TestSwitchProperty(t *testing.T) {
	for i := 0; i < 2000; i++ {
		f := func(k int) float64 { return float64((i*7919+k*104729)%1000) + 1 }
		left, x, g, gc, b := f(1)*1e3, f(2)*100, f(3)/100, f(4)/1000, f(5)*1e3
		cur, alt := Estimate{G: gc}, Estimate{X: x, G: g}
		ok, c1, a1 := Switch(left, cur, alt, Link{B: b, RTT: 0.01, RoundTrip: 3.5}, 0)
		if ok != (a1 < c1) {
			t.Fatalf("Switch(%g, %v, %v, B %g) = %v with %g against %g", left, cur, alt, b, ok, c1, a1)
		}
		// A margin only ever holds a switch back.
		if okm, _, _ := Switch(left, cur, alt, Link{B: b, RTT: 0.01, RoundTrip: 3.5}, 0.1); okm && !ok {
			t.Fatalf("a switch with a margin that is not one without")
		}
		_, c2, a2 := Switch(left, cur, alt, Link{B: b / 2, RTT: 0.01, RoundTrip: 3.5}, 0)
		if c2 < c1 || a2 < a1 {
			t.Fatalf("a slower link predicted faster: %g -> %g, %g -> %g", c1, c2, a1, a2)
		}
	}
}

// The margin: a switch predicted to gain less than the margin's fraction
// of what the send under way still needs is not made (the sweep's
// 2.33 MB report at 50 kB/s: zstd predicted 11.56 s from its first
// acknowledgements, blast 10.47 s; blast took 13.7 s, zstd alone 10.5 s).
func TestSwitchMargin(t *testing.T) {
	zstd := Estimate{Name: "zstd", G: 0.05}
	blast := Estimate{Name: "blast", X: 21e3, G: 9.87}
	l := Link{B: 36.3e3, RTT: 0.003, RoundTrip: 3.5}
	left := 417.5e3
	if ok, cur, alt := Switch(left, zstd, blast, l, 0); !ok {
		t.Fatalf("without a margin: no switch (%.2f s against %.2f s)", alt, cur)
	}
	if ok, cur, alt := Switch(left, zstd, blast, l, 0.1); ok {
		t.Errorf("a 10%% margin: switched for %.2f s against %.2f s", alt, cur)
	}
	// Where blast wins by half, the margin does not hold it back.
	if ok, cur, alt := Switch(left, zstd, Estimate{Name: "blast", X: 21e3, G: 4}, l, 0.1); !ok {
		t.Errorf("a 10%% margin held back a switch to %.2f s from %.2f s", alt, cur)
	}
}

// EncodeEarly is WorthEncoding at a bound k times lower: it holds wherever
// WorthEncoding does, and up to k times above its threshold, not beyond.
func TestEncodeEarly(t *testing.T) {
	cur := Estimate{Name: "zstd"}
	// 500 kB left against a g of 4 s: worth encoding below 125 kB/s.
	for _, tc := range []struct {
		b, k float64
		want bool
	}{
		{100e3, 2, true},  // worth encoding anyway
		{200e3, 2, true},  // within 2x of the threshold
		{300e3, 2, false}, // beyond it
		{200e3, 1, false}, // k 1: WorthEncoding itself
		{200e3, 0, false}, // k below 1: WorthEncoding itself
		{450e3, 4, true},
	} {
		if got := EncodeEarly(500e3, cur, 4, Link{B: tc.b}, tc.k); got != tc.want {
			t.Errorf("EncodeEarly(B %g, k %g) = %v, want %v", tc.b, tc.k, got, tc.want)
		}
	}
	for i := 0; i < 1000; i++ {
		left, g, b, k := float64(i*997%1000000), float64(i%7), float64(1+i*7919%2000000), 1+float64(i%5)
		if WorthEncoding(left, cur, g, Link{B: b}) && !EncodeEarly(left, cur, g, Link{B: b}, k) {
			t.Fatalf("WorthEncoding at left %g, g %g, B %g, but not EncodeEarly with k %g", left, g, b, k)
		}
	}
}
