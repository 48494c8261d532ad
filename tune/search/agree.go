package search

import (
	"context"
	"fmt"
	"math"

	"github.com/pario/pario/tune/model"
	"github.com/pario/pario/tune/sim"
)

// The paper's framework trusts the model only once the simulator has
// confirmed it ("If result from the model and the simulation match, we can
// start the auto-tuning process"). CheckModel is that step for
// `tune search --objective model`.

// AgreementTolerance is the relative difference between the model's E(T)
// and the simulator's mean that counts as agreement even outside the 99%
// confidence interval: with 160 stripe counts a few intervals miss by
// chance, and a 2% difference does not move the optimum by more than the
// flatness of E(T) near it.
const AgreementTolerance = 0.02

// CheckExperiments is the simulator's experiments per stripe count in
// the check: a second or two for 160 counts.
const CheckExperiments = 1000

// Agreement compares the model's E(T) with the simulator's for every
// stripe count 1..len(Model).
type Agreement struct {
	Experiments int
	Seed        uint64
	// Model, Sim and HalfWidth (of Sim's 99% interval) in seconds,
	// indexed by n-1.
	Model, Sim, HalfWidth []float64
	// Off lists the stripe counts where the two disagree: |Sim - Model|
	// above both AgreementTolerance x Model and HalfWidth.
	Off []int
	// Worst is the n with the largest relative difference, WorstErr that
	// difference, (Sim - Model) / Model.
	Worst    int
	WorstErr float64
}

// OK reports whether the model and the simulator agree at every count.
func (a Agreement) OK() bool { return len(a.Off) == 0 }

// checkModel is CheckModel, replaced in tests to make the model fail.
var checkModel = CheckModel

// CheckModel simulates the write of a file of size bytes on 1..maxN
// targets under p (one pass, sim.Sweep, stationary queues) and compares
// each mean with the model's exact E(T).
func CheckModel(ctx context.Context, p model.Params, size int64, maxN, experiments int, seed uint64) (Agreement, error) {
	if experiments < 1 {
		experiments = CheckExperiments
	}
	r, err := sim.Sweep(ctx, sim.Config{
		Lambda: p.Lambda, Gamma: p.Gamma, V: p.V, FileSize: float64(size) / 1e9,
		Stripes: maxN, Time: 20, Experiments: experiments, Seed: seed,
	})
	if err != nil {
		return Agreement{}, fmt.Errorf("search: model check: %w", err)
	}
	return compare(r.Model, r.Mean, r.CIHalfWidth99, experiments, seed), nil
}

// compare builds the Agreement of model and simulated means.
func compare(mod, mean, half []float64, experiments int, seed uint64) Agreement {
	a := Agreement{Experiments: experiments, Seed: seed, Model: mod, Sim: mean, HalfWidth: half}
	for i := range mod {
		d := mean[i] - mod[i]
		rel := d / mod[i]
		if a.Worst == 0 || math.Abs(rel) > math.Abs(a.WorstErr) {
			a.Worst, a.WorstErr = i+1, rel
		}
		if math.Abs(d) > AgreementTolerance*mod[i] && math.Abs(d) > half[i] {
			a.Off = append(a.Off, i+1)
		}
	}
	return a
}

// String is the report's line for a.
func (a Agreement) String() string {
	n := a.Worst
	if n == 0 {
		return "model check: nothing compared"
	}
	worst := fmt.Sprintf("n=%d: model %.3f s, simulated %.3f +- %.3f s (%+.2f%%)", n, a.Model[n-1], a.Sim[n-1], a.HalfWidth[n-1], 100*a.WorstErr)
	if a.OK() {
		return fmt.Sprintf("model check: the simulator (%d experiments, seed %d) agrees with the model at stripe counts 1..%d (within %g%% or its 99%% CI); largest difference %s",
			a.Experiments, a.Seed, len(a.Model), 100*AgreementTolerance, worst)
	}
	return fmt.Sprintf("model check: the simulator (%d experiments, seed %d) disagrees with the model at %d of stripe counts 1..%d (by more than %g%% and its 99%% CI); largest difference %s",
		a.Experiments, a.Seed, len(a.Off), len(a.Model), 100*AgreementTolerance, worst)
}
