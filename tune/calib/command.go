package calib

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pario/pario/units"
)

// What `pario tune calibrate` does beyond declaring its flags: checking
// them (ParseGrid, ParseDefaults) and printing the report (WriteText), so
// that both are tested in process (command_test.go).

// GridArgs are the --run flags as parsed (the sizes by units flags).
type GridArgs struct {
	Strips, Transfers []int64 // --strip-sizes, --transfer-sizes
	Servers           []int   // --servers
	Size              int64   // --size
	Ranks             int     // --ranks
	Repetitions       int     // --repetitions
}

// ParseGrid checks the --run flags and builds the grid. Every error is a
// usage error and names the flag; a grid without a point (every transfer
// size above every strip size) is one too.
func ParseGrid(a GridArgs) (Grid, error) {
	g := Grid{Servers: a.Servers, Ranks: a.Ranks, Repetitions: a.Repetitions, Size: a.Size}
	var err error
	if g.Strips, err = checkSizes("strip-sizes", a.Strips); err != nil {
		return g, err
	}
	if g.Transfers, err = checkSizes("transfer-sizes", a.Transfers); err != nil {
		return g, err
	}
	if a.Size <= 0 {
		return g, fmt.Errorf("--size %d: want a positive size (e.g. 64m)", a.Size)
	}
	if a.Ranks < 1 || a.Repetitions < 1 {
		return g, fmt.Errorf("--ranks and --repetitions must be >= 1")
	}
	if g.Size%int64(a.Ranks) != 0 {
		return g, fmt.Errorf("--size %s is not a multiple of --ranks %d", units.FormatSize(a.Size), a.Ranks)
	}
	for _, n := range a.Servers {
		if n < 1 {
			return g, fmt.Errorf("--servers %d: want >= 1", n)
		}
	}
	if len(g.Runs("")) == 0 {
		return g, errors.New("no grid point with transfer size <= strip size")
	}
	return g, nil
}

// checkSizes refuses an empty list or a size below 1; the flags cannot
// produce either, but a caller filling GridArgs by hand can.
func checkSizes(flag string, vals []int64) ([]int64, error) {
	if len(vals) == 0 {
		return nil, fmt.Errorf("--%s: empty", flag)
	}
	for _, n := range vals {
		if n <= 0 {
			return nil, fmt.Errorf("--%s %d: want positive sizes, e.g. 64k,1m", flag, n)
		}
	}
	return slices.Clone(vals), nil
}

// ParseDefaults checks --strip-size and --targets, the layout of results
// files that do not say; a zero strip is unknown. Errors are usage
// errors.
func ParseDefaults(strip int64, targets int) (Layout, error) {
	if strip < 0 {
		return Layout{}, fmt.Errorf("--strip-size %d: want a positive size", strip)
	}
	return Layout{Strip: strip, Targets: targets}, nil
}

// WriteText writes the calibration report: the fitted parameters, a row
// per point (measured against simulated), the paper's errors and the
// command that uses the parameters. source says where the points came
// from.
func WriteText(w io.Writer, r Report, source string) error {
	var b strings.Builder
	p := r.Params
	fmt.Fprintf(&b, "calibrate: %d points from %s\n", len(r.Points), source)
	describeWarmup(&b, r.Points)
	fmt.Fprintf(&b, "fitted: V = %.1f MiB/s (%.4g GB/s) per target\n", p.V/MiB, p.V/1e9)
	if r.OverheadUsed {
		fmt.Fprintf(&b, "        overhead c = %.1f us per request (service-fit error2 %.4g, %.4g without it)\n", p.Overhead*1e6, r.ServiceError2, r.NoOverheadErr2)
	} else {
		fmt.Fprintf(&b, "        overhead c = 0 (not needed: service-fit error2 %.4g)\n", r.ServiceError2)
	}
	fmt.Fprintf(&b, "        gamma = %.6g/s, lambda = %.6g/s (rho = %.4g), measured mean waiting time %.3f ms\n",
		p.Gamma, p.Lambda, p.Rho(), r.MeanWait*1e3)
	if r.Confidence != nil {
		r.Confidence.describe(&b, r.OverheadUsed)
	}
	describeVByTargets(&b, r.VByTargets)
	// resid is the fitted model's error (model against measured, what the
	// fit minimised), in % and in standard errors of the measured mean;
	// diff is the simulator's.
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "n\tstrip\ttransfer\tsize\treps\tmeasured (s)\tservice (s)\tsimulated (s)\tmeasured MiB/s\tmodel MiB/s\tresid\tresid/SE\tsimulated MiB/s\tdiff\t")
	for _, c := range r.Points {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%.5f\t%.5f\t%.5f\t%.1f\t%.1f\t%+.1f%%\t%s\t%.1f\t%+.1f%%\t\n", c.Targets, units.FormatSize(c.Strip),
			units.FormatSize(c.Transfer), units.FormatSize(c.Size), len(c.Times), c.MeanTime(), c.Service, c.Sim,
			c.MeasuredMiB, c.ModelMiB, 100*c.Residual, formatZ(c.Z), c.SimMiB, 100*(c.SimMiB-c.MeasuredMiB)/c.MeasuredMiB)
	}
	tw.Flush()
	if !math.IsNaN(r.R2) {
		fmt.Fprintf(&b, "R^2 = %.3f (the model's share of the variance of the measured bandwidths between points)\n", r.R2)
	}
	fmt.Fprintf(&b, "error1 = %.5f  error2 = %.5f  (bandwidths, the paper's definition; simulator, %d experiments per point, seed %d)\n",
		r.Bandwidth.Error1, r.Bandwidth.Error2, r.Experiments, r.Seed)
	fmt.Fprintf(&b, "on times: error1 = %.5f  error2 = %.5f; model without simulation: error1 = %.5f  error2 = %.5f\n",
		r.Time.Error1, r.Time.Error2, r.ModelVsMeasE.Error1, r.ModelVsMeasE.Error2)
	fmt.Fprintf(&b, "use: pario tune model --lambda %.6g --gamma %.6g --v %.6g ...\n", p.Lambda, p.Gamma, p.V/1e9)
	for _, warn := range r.Warnings() {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
