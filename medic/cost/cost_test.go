package cost

import (
	"math"
	"testing"
)

func TestCrossoverIsWhereTimesMeet(t *testing.T) {
	D := 3.28e6
	e := Estimate{Name: "blast", X: 6.7e3, F: 0.05, G: 1.3}
	bs := Crossover(D, e)
	l := Link{B: bs}
	if a, r := Time(0, e, l), Raw(0, D, l); math.Abs(a-r) > 1e-9 {
		t.Fatalf("at B*=%g: A=%g A'=%g", bs, a, r)
	}
	if Time(0, e, Link{B: bs / 2}) >= Raw(0, D, Link{B: bs / 2}) {
		t.Fatal("plugin should win below B*")
	}
	if Time(0, e, Link{B: bs * 2}) <= Raw(0, D, Link{B: bs * 2}) {
		t.Fatal("raw should win above B*")
	}
	// The brief's numbers: about 21 Mbit/s.
	if mbit := bs * 8 / 1e6; mbit < 15 || mbit > 25 {
		t.Fatalf("B* = %.1f Mbit/s", mbit)
	}
}

func TestCrossoverPairAndRTT(t *testing.T) {
	z := Estimate{Name: "zstd", X: 680e3, F: 0.02, G: 0.005}
	b := Estimate{Name: "blast", X: 6.7e3, F: 0.05, G: 1.3}
	bp := CrossoverPair(b, z)
	l := Link{B: bp}
	if math.Abs(Time(0, b, l)-Time(0, z, l)) > 1e-9 {
		t.Fatal("pair crossover is not where the two meet")
	}
	if Crossover(10, Estimate{X: 20}) != 0 || !math.IsInf(Crossover(10, Estimate{X: 1}), 1) {
		t.Fatal("edge cases")
	}
	lw := Link{B: 1e9, Window: 256 << 10}
	rtt := CrossoverRTT(3.28e6, b, lw)
	lw.RTT = rtt
	if math.Abs(lw.Effective()-Crossover(3.28e6, b)) > 1 {
		t.Fatalf("RTT* %g: effective %g", rtt, lw.Effective())
	}
}

func TestPlanSorts(t *testing.T) {
	p := Plan(0, 1e6, []Estimate{{Name: "zstd", X: 2e5, F: .01, G: .01}}, Link{B: 1e5})
	if len(p) != 2 || p[0].Name != "zstd" || p[1].Name != "raw" || p[0].Speedup <= 1 {
		t.Fatalf("%+v", p)
	}
}
