package search

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pario/pario/tune/model"
)

// With no RPC cost, an instant client and a file that divides evenly into
// strips over the targets, Striping is the model's E(T).
func TestStripingIsTheModel(t *testing.T) {
	st := PaperStriping(0)
	st.RPCOverhead, st.ClientBandwidth = 0, math.MaxFloat64
	for _, tc := range []struct{ n, s, k int64 }{{1, mib, 1}, {4, 16 * mib, 3}, {40, mib, 1000}, {160, 256 * mib, 2}} {
		st.FileSize = tc.n * tc.s * tc.k
		got, err := st.Time(tc.n, tc.s, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := model.SystemTime(st.Model, float64(st.FileSize)/1e9, int(tc.n))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("n=%d s=%d M=%d: %v, model %v", tc.n, tc.s, st.FileSize, got, want)
		}
	}
}

func TestStripingShape(t *testing.T) {
	st := PaperStriping(10e9)
	T := func(n, s, tr int64) float64 {
		v, err := st.Time(n, s, tr)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// More targets than strips: the extra targets are idle, T stops changing.
	if a, b := T(40, 256*mib, 256*mib), T(160, 256*mib, 256*mib); a != b {
		t.Errorf("38 strips on 40 or 160 targets: %v vs %v", a, b)
	}
	// Small transfers cost RPCs; transfers beyond the strip only cost fill.
	if T(5, 128*mib, mib) <= T(5, 128*mib, 128*mib) {
		t.Error("1 MiB transfers are not slower than 128 MiB ones")
	}
	if T(5, 16*mib, 256*mib) <= T(5, 16*mib, 16*mib) {
		t.Error("transfers larger than the strip are not slower")
	}
	// Imbalance: 75 strips of 128 MiB (10 GB) on 74 targets leave one target
	// with two strips, slower than on 75.
	if T(74, 128*mib, 128*mib) <= T(75, 128*mib, 128*mib) {
		t.Error("uneven strips are not slower")
	}
}

func TestStripingErrors(t *testing.T) {
	good := PaperStriping(10e9)
	bad := []Striping{
		func() Striping { s := good; s.FileSize = 0; return s }(),
		func() Striping { s := good; s.RPCOverhead = -1; return s }(),
		func() Striping { s := good; s.ClientBandwidth = 0; return s }(),
		func() Striping { s := good; s.Model.Lambda = 1; return s }(),
	}
	for _, st := range bad {
		if _, err := st.Time(1, mib, mib); err == nil {
			t.Errorf("%+v accepted", st)
		}
	}
	if _, err := bad[3].Time(1, mib, mib); !errors.Is(err, model.ErrUnstable) {
		t.Errorf("unstable model: %v", err)
	}
	if _, err := good.Time(0, mib, mib); err == nil {
		t.Error("stripe count 0 accepted")
	}
	if _, err := good.Evaluate(context.Background(), Params{{StripeCount, 1}}); err == nil || !strings.Contains(err.Error(), "needs stripe-count, strip-size and transfer-size") {
		t.Errorf("missing parameters: %v", err)
	}
	if _, err := NewSimStriping(good, -1, 1, 0); err == nil {
		t.Error("negative experiments accepted")
	}
	if _, err := NewSimStriping(good, 0, 1, math.Inf(1)); err == nil {
		t.Error("infinite time accepted")
	}
}

// The simulated objective: deterministic for its seed, one simulation per
// distinct number of used targets, near the model, and safe for the
// concurrent evaluations of a parallel search.
func TestSimStriping(t *testing.T) {
	space, err := NewSpace(TableIVSequential()...)
	if err != nil {
		t.Fatal(err)
	}
	newSim := func(seed uint64) *SimStriping {
		s, err := NewSimStriping(PaperStriping(10e9), 400, seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c := newSim(1), newSim(1), newSim(2)
	ra, err := Run(context.Background(), space, a, Genetic{}, Options{Budget: 300, Seed: 5, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Run(context.Background(), space, b, Genetic{}, Options{Budget: 300, Seed: 5, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !sameTrace(ra, rb) {
		t.Error("the same simulator seed gave different values")
	}
	used := map[int64]bool{}
	for _, e := range ra.Trace {
		x := space.Params(e.Point)
		n, _ := x.Get(StripeCount)
		s, _ := x.Get(StripSize)
		used[min(n, (10e9+s-1)/s)] = true
	}
	if a.Simulations() != int64(len(used)) {
		t.Errorf("%d simulations for %d distinct numbers of used targets", a.Simulations(), len(used))
	}
	x := Params{{StripeCount, 5}, {StripSize, 128 * mib}, {TransferSize, 128 * mib}}
	va, _ := a.Evaluate(context.Background(), x)
	vc, _ := c.Evaluate(context.Background(), x)
	vm, _ := PaperStriping(10e9).Evaluate(context.Background(), x)
	if va == vc {
		t.Error("different simulator seeds gave the same value")
	}
	for _, v := range []float64{va, vc} {
		if math.Abs(v/vm-1) > 0.08 {
			t.Errorf("simulated %v, model %v", v, vm)
		}
	}
	if !strings.Contains(a.ID(), "seed=1") || a.ID() == c.ID() || a.ID() == PaperStriping(10e9).ID() {
		t.Errorf("IDs do not tell the objectives apart: %q, %q", a.ID(), c.ID())
	}
	// Prefetching by one sweep gives the values of separate runs.
	d := newSim(1)
	if err := d.Prefetch(context.Background(), 160); err != nil {
		t.Fatal(err)
	}
	for _, e := range ra.Trace {
		x := space.Params(e.Point)
		if v, _ := d.Evaluate(context.Background(), x); v != e.Value {
			t.Fatalf("%v: prefetched %v, simulated %v", x, v, e.Value)
		}
	}
	if d.Simulations() != 1 {
		t.Errorf("%d simulations after a prefetch", d.Simulations())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newSim(3).Evaluate(ctx, x); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled simulation: %v", err)
	}
}
