package sim

import (
	"bytes"
	"fmt"
	"io"

	"github.com/pario/pario/tune/model"
)

// WriteText writes the result of a run of cfg as `pario tune simulate`
// prints it: the mean with its 99% interval, the experiments it took, and
// the model's values beside it.
func WriteText(w io.Writer, cfg Config, r Result) error {
	var b bytes.Buffer
	p := model.Params{Lambda: cfg.Lambda, Gamma: cfg.Gamma, V: cfg.V}
	size, n := cfg.FileSize, cfg.Stripes
	lo, hi := r.CI()
	if cfg.Groups > 1 {
		fmt.Fprintf(&b, "simulated: %d files of %g GB (%g GB in all), each on %d of %d targets chosen at random, %s\n",
			cfg.Groups, size/float64(cfg.Groups), size, n, cfg.Targets, p.Describe())
	} else {
		fmt.Fprintf(&b, "simulated: %g GB on %d targets, %s\n", size, n, p.Describe())
	}
	fmt.Fprintf(&b, "start: %s queues, job arriving at t = %g s, seed %d\n", cfg.Init, cfg.Time, cfg.Seed)
	fmt.Fprintf(&b, "mean E(T):     %.4f s\n", r.Mean)
	fmt.Fprintf(&b, "99%% CI:        [%.4f, %.4f] s (+- %.4f, %.2f%% of the mean)\n", lo, hi, r.CIHalfWidth99, 100*r.CIHalfWidth99/r.Mean)
	if r.Pilot > 0 {
		fmt.Fprintf(&b, "experiments:   %d (required %d, after a pilot of %d)", r.N, r.Required, r.Pilot)
	} else {
		fmt.Fprintf(&b, "experiments:   %d (fixed)", r.N)
	}
	if r.Converged {
		fmt.Fprintln(&b, ", precision goal met")
	} else {
		fmt.Fprintln(&b, ", precision goal NOT met: raise --experiments")
	}
	if r.HasModel {
		fmt.Fprintf(&b, "exact model:   %.4f s, relative error %+.3f%%", r.Model, 100*r.RelErr)
		if r.Contains(r.Model) {
			fmt.Fprintln(&b, " (inside the 99% CI)")
		} else {
			fmt.Fprintln(&b, " (outside the 99% CI)")
		}
		if pt, err := model.PaperSystemTime(p, size, n); err == nil && cfg.Groups <= 1 {
			fmt.Fprintf(&b, "paper formula: %.4f s, relative error %+.3f%%\n", pt, 100*(r.Mean-pt)/pt)
		}
	}
	if !r.HasModel && cfg.Groups > 1 {
		fmt.Fprintln(&b, "model:         none for several groups on fewer targets than they use (the paper's future work): the simulator is the model")
	}
	if r.BiasBound > 0 {
		fmt.Fprintf(&b, "empty start: the mean may be up to %.4f s below equilibrium\n", r.BiasBound)
	}
	fmt.Fprintf(&b, "events: %d in %s\n", r.Events, r.Elapsed.Round(1e6))
	_, err := w.Write(b.Bytes())
	return err
}
