package search

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pario/pario/tune/model"
)

func TestCompare(t *testing.T) {
	mod := []float64{100, 100, 100, 100}
	tests := []struct {
		name   string
		sim    []float64
		half   []float64
		off    []int
		worst  int
		phrase string
	}{
		{"within the tolerance", []float64{101, 99, 100.5, 101.9}, []float64{0.1, 0.1, 0.1, 0.1}, nil, 4, "agrees"},
		{"outside the tolerance but inside the interval", []float64{104, 100, 100, 100}, []float64{5, 1, 1, 1}, nil, 1, "agrees"},
		{"outside both", []float64{100, 110, 100, 93}, []float64{1, 5, 1, 5}, []int{2, 4}, 2, "disagrees with the model at 2 of stripe counts 1..4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := compare(mod, tt.sim, tt.half, 500, 3)
			if len(a.Off) != len(tt.off) || a.OK() != (len(tt.off) == 0) {
				t.Fatalf("off %v, want %v", a.Off, tt.off)
			}
			for i := range a.Off {
				if a.Off[i] != tt.off[i] {
					t.Errorf("off %v, want %v", a.Off, tt.off)
				}
			}
			if a.Worst != tt.worst {
				t.Errorf("worst n=%d, want %d", a.Worst, tt.worst)
			}
			if s := a.String(); !strings.Contains(s, tt.phrase) || !strings.Contains(s, "500 experiments, seed 3") {
				t.Errorf("String() = %q, want %q", s, tt.phrase)
			}
		})
	}
}

// TestCheckModelAgrees: for the paper's system the simulator confirms the
// exact model at every stripe count, as the paper's framework requires
// before it searches the model.
func TestCheckModelAgrees(t *testing.T) {
	a, err := CheckModel(context.Background(), model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}, 10e9, 40, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !a.OK() || len(a.Model) != 40 || a.Experiments != CheckExperiments {
		t.Errorf("%s (off %v)", a, a.Off)
	}
	if _, err := CheckModel(context.Background(), model.Params{Lambda: 0.2, Gamma: 0.125, V: 0.0625}, 10e9, 4, 0, 1); err == nil {
		t.Error("unstable system: no error")
	}
}

// TestRecommendRefusesUntrustedModel: when the simulator disagrees with
// the model, a model search refuses with the numbers, or with
// --trust-model searches and warns.
func TestRecommendRefusesUntrustedModel(t *testing.T) {
	defer func(f func(context.Context, model.Params, int64, int, int, uint64) (Agreement, error)) {
		checkModel = f
	}(checkModel)
	checkModel = func(_ context.Context, _ model.Params, _ int64, maxN, experiments int, seed uint64) (Agreement, error) {
		mod, sim, half := make([]float64, maxN), make([]float64, maxN), make([]float64, maxN)
		for i := range mod {
			mod[i], sim[i], half[i] = 100, 100, 1
		}
		sim[2] = 130
		return compare(mod, sim, half, experiments, seed), nil
	}
	a := defaultArgs
	a.StripeCount, a.Methods, a.Budget = "1:4", "random", 20
	for _, trust := range []bool{false, true} {
		a.TrustModel = trust
		req, err := ParseRequest(a)
		if err != nil {
			t.Fatal(err)
		}
		req.Model, req.Seed, req.Store = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}, 1, &memStore{}
		rec, err := Recommend(context.Background(), req)
		if !trust {
			if err == nil || !strings.Contains(err.Error(), "disagrees with the model at 1 of stripe counts 1..4") ||
				!strings.Contains(err.Error(), "n=3: model 100.000 s, simulated 130.000 +- 1.000 s (+30.00%)") || !strings.Contains(err.Error(), "--objective sim") {
				t.Errorf("err = %v, want a refusal with the numbers", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteText(&out, rec, "DIR"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "warning: searching the model anyway (--trust-model)") || rec.Best == nil {
			t.Errorf("--trust-model report:\n%s", out.String())
		}
	}
}
