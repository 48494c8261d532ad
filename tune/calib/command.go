package calib

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pario/pario/bench/backend"
)

// What `pario tune calibrate` does beyond declaring its flags: checking
// them (ParseGrid, ParseDefaults) and printing the report (WriteText), so
// that both are tested in process (command_test.go).

// GridArgs are the --run flags as given.
type GridArgs struct {
	Strips, Transfers []string // --strip-sizes, --transfer-sizes
	Servers           []int    // --servers
	Size              string   // --size
	Ranks             int      // --ranks
	Repetitions       int      // --repetitions
}

// ParseGrid checks the --run flags and builds the grid. Every error is a
// usage error and names the flag; a grid without a point (every transfer
// size above every strip size) is one too.
func ParseGrid(a GridArgs) (Grid, error) {
	g := Grid{Servers: a.Servers, Ranks: a.Ranks, Repetitions: a.Repetitions}
	var err error
	if g.Strips, err = parseSizes("strip-sizes", a.Strips); err != nil {
		return g, err
	}
	if g.Transfers, err = parseSizes("transfer-sizes", a.Transfers); err != nil {
		return g, err
	}
	if g.Size, err = backend.ParseSize(a.Size); err != nil || g.Size <= 0 {
		return g, fmt.Errorf("--size %q: want a positive size (e.g. 64m)", a.Size)
	}
	if a.Ranks < 1 || a.Repetitions < 1 {
		return g, fmt.Errorf("--ranks and --repetitions must be >= 1")
	}
	if g.Size%int64(a.Ranks) != 0 {
		return g, fmt.Errorf("--size %s is not a multiple of --ranks %d", a.Size, a.Ranks)
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

func parseSizes(flag string, vals []string) ([]int64, error) {
	var out []int64
	for _, v := range vals {
		n, err := backend.ParseSize(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--%s %q: want positive sizes, e.g. 64k,1m", flag, v)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: empty", flag)
	}
	return out, nil
}

// ParseDefaults checks --strip-size and --targets, the layout of results
// files that do not say; an empty strip is unknown. Errors are usage
// errors.
func ParseDefaults(strip string, targets int) (Layout, error) {
	def := Layout{Targets: targets}
	if strip != "" {
		s, err := backend.ParseSize(strip)
		if err != nil || s <= 0 {
			return def, fmt.Errorf("--strip-size %q: want a positive size", strip)
		}
		def.Strip = s
	}
	return def, nil
}

// WriteText writes the calibration report: the fitted parameters, a row
// per point (measured against simulated), the paper's errors and the
// command that uses the parameters. source says where the points came
// from.
func WriteText(w io.Writer, r Report, source string) error {
	var b bytes.Buffer
	p := r.Params
	fmt.Fprintf(&b, "calibrate: %d points from %s\n", len(r.Points), source)
	fmt.Fprintf(&b, "fitted: V = %.1f MiB/s (%.4g GB/s) per target\n", p.V/MiB, p.V/1e9)
	if r.OverheadUsed {
		fmt.Fprintf(&b, "        overhead c = %.1f us per request (service-fit error2 %.4g, %.4g without it)\n", p.Overhead*1e6, r.ServiceError2, r.NoOverheadErr2)
	} else {
		fmt.Fprintf(&b, "        overhead c = 0 (not needed: service-fit error2 %.4g)\n", r.ServiceError2)
	}
	fmt.Fprintf(&b, "        gamma = %.6g/s, lambda = %.6g/s (rho = %.4g), measured mean waiting time %.3f ms\n",
		p.Gamma, p.Lambda, p.Rho(), r.MeanWait*1e3)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "n\tstrip\ttransfer\tsize\treps\tmeasured (s)\tservice (s)\tsimulated (s)\tmeasured MiB/s\tsimulated MiB/s\tdiff\t")
	for _, c := range r.Points {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%.5f\t%.5f\t%.5f\t%.1f\t%.1f\t%+.1f%%\t\n", c.Targets, FormatSize(c.Strip),
			FormatSize(c.Transfer), FormatSize(c.Size), len(c.Times), c.MeanTime(), c.Service, c.Sim,
			c.MeasuredMiB, c.SimMiB, 100*(c.SimMiB-c.MeasuredMiB)/c.MeasuredMiB)
	}
	tw.Flush()
	fmt.Fprintf(&b, "error1 = %.5f  error2 = %.5f  (bandwidths, the paper's definition; simulator, %d experiments per point, seed %d)\n",
		r.Bandwidth.Error1, r.Bandwidth.Error2, r.Experiments, r.Seed)
	fmt.Fprintf(&b, "on times: error1 = %.5f  error2 = %.5f; model without simulation: error1 = %.5f  error2 = %.5f\n",
		r.Time.Error1, r.Time.Error2, r.ModelVsMeasE.Error1, r.ModelVsMeasE.Error2)
	fmt.Fprintf(&b, "use: pario tune model --lambda %.6g --gamma %.6g --v %.6g ...\n", p.Lambda, p.Gamma, p.V/1e9)
	_, err := w.Write(b.Bytes())
	return err
}
