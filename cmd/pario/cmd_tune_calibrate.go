package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/tune/calib"
	"github.com/pario/pario/units"
)

func newTuneCalibrateCommand() *cobra.Command {
	var (
		doRun         bool
		results       []string
		strips, xfers []int64
		servers       []int
		size          int64
		ranks, reps   int
		keep          string
		defStrip      int64
		defTargets    int
		gamma         float64
		overhead      string
		experiments   int
		seed          uint64
		plotDir       string
		quiet         bool
		keepWarmup    bool
		rounds        int
	)
	cmd := &cobra.Command{
		Use:   "calibrate (--run | --results FILE [FILE...])",
		Short: "Fit the simulator's V, lambda, gamma and per-request overhead to benchmark results",
		Long: `Calibrate the simulator as the paper's section IV does: measure the write time
of one file over a grid of strip size x transfer size (transfer <= strip) on
one target (then several), fit the simulator's parameters to it, and compare
measured with simulated bandwidths by the paper's errors,

  error1 = sum(test - sim) / sum(test)
  error2 = sum((test - sim)^2) / sum(test^2)   (test, sim: MiB/s per point).

Model of a point (file of M bytes, n targets, strip S, transfer t): every
transfer is cut at strip boundaries into requests, strips dealt round robin;
target j gets B_j bytes in R_j requests, and T = E(max_j W_j) +
max_j (B_j/V + R_j c), W the M/M/1 waiting time (lambda, gamma). V and c are
fitted to each point's fastest repetition (Nelder-Mead on error2; c is kept
only if it lowers that error2 by 10% or more, --overhead on|off forces it);
gamma is the requests served per second of service; lambda makes the model's
mean waiting time equal the measured one (the time beyond the service part).
The first repetition of each run is set aside as warm-up (--keep-warmup fits
it too); the report gives each point's residual (model against measured), a
95% interval for every parameter (bootstrap over repetitions, --bootstrap
rounds) and warnings where the fit does not explain the data.

Input, one of:
  --run             run pario bench on an embedded cluster per grid point
                    (--strip-sizes x --transfer-sizes on each of --servers,
                    a --size file, -N --ranks, -i --repetitions, -w -e)
  --results F...    IOR or pario bench JSON results (-O summaryFormat=JSON;
                    pario's name their layout; for IOR's put it in the file
                    name, e.g. ior-strip1m-ost1.json, or give --strip-size and
                    --targets), or CSV files "strip,transfer,servers,size,seconds"

  pario tune calibrate --run --plot docs
  pario tune calibrate --run --servers 1,2,4 --keep-results runs/
  pario tune calibrate --results runs/*.json

--plot DIR writes DIR/calibration.png and .svg: measured and simulated
bandwidth heat maps (strip size x transfer size) side by side, one row per
server count.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Files after --results (a shell glob) arrive as arguments.
			results = append(results, args...)
			if doRun == (len(results) > 0) {
				return usageError{errors.New("give either --run or --results FILE [FILE ...]")}
			}
			if experiments < 0 {
				return usageError{fmt.Errorf("--experiments %d: want >= 0", experiments)}
			}
			if rounds == 1 || rounds < 0 {
				return usageError{fmt.Errorf("--bootstrap %d: want 0 (none) or at least 2 rounds", rounds)}
			}
			var pts []calib.Point
			var source string
			start := time.Now()
			if doRun {
				g, err := calib.ParseGrid(calib.GridArgs{Strips: strips, Transfers: xfers, Servers: servers, Size: size, Ranks: ranks, Repetitions: reps})
				if err != nil {
					return usageError{err}
				}
				dir := keep
				if dir == "" {
					tmp, err := os.MkdirTemp("", "pario-calibrate-")
					if err != nil {
						return err
					}
					defer os.RemoveAll(tmp)
					dir = tmp
				} else if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				runs := g.Runs(dir)
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				pts, err = calib.Execute(cmd.Context(), exe, nil, runs, func(i int, r calib.Run) {
					if !quiet {
						fmt.Fprintf(os.Stderr, "calibrate: [%d/%d] pario bench strip %s, transfer %s, %d server(s)\n",
							i+1, len(runs), units.FormatSize(r.Strip), units.FormatSize(r.Transfer), r.Servers)
					}
				})
				if err != nil {
					return err
				}
				source = fmt.Sprintf("%d pario bench runs on an embedded cluster (%s file, %d rank(s), %d repetitions, fsync) in %.1f s",
					len(runs), units.FormatSize(g.Size), ranks, reps, time.Since(start).Seconds())
				if keep != "" {
					source += ", results kept in " + keep
				}
			} else {
				def, err := calib.ParseDefaults(defStrip, defTargets)
				if err != nil {
					return usageError{err}
				}
				for _, f := range results {
					p, err := calib.ReadFile(f, def)
					if err != nil {
						return err
					}
					pts = append(pts, p...)
				}
				source = fmt.Sprintf("%d results file(s)", len(results))
			}
			if !keepWarmup {
				pts = calib.DropWarmup(pts)
			}
			pts = calib.Merge(pts)
			fit, err := calib.FitParams(pts, calib.Options{Gamma: gamma, Overhead: overhead})
			if err != nil {
				return usageError{err}
			}
			rep, err := calib.Compare(cmd.Context(), fit, experiments, seed)
			if err != nil {
				return err
			}
			if rounds > 0 {
				if rep.Confidence, err = calib.Bootstrap(cmd.Context(), fit, rounds, seed); err != nil {
					return err
				}
			}
			if err := calib.WriteText(os.Stdout, rep, source); err != nil {
				return err
			}
			if plotDir != "" {
				if err := os.MkdirAll(plotDir, 0o755); err != nil {
					return err
				}
				paths, err := calib.SavePlot(rep, plotDir)
				if err != nil {
					return err
				}
				fmt.Printf("plot: %s\n", strings.Join(paths, " "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.BoolVar(&doRun, "run", false, "run pario bench over the grid on an embedded cluster")
	f.StringSliceVar(&results, "results", nil, "IOR / pario bench JSON or CSV results files (comma separated or repeated)")
	strips = []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20}
	xfers = slices.Clone(strips)
	size = 64 << 20
	f.Var(units.SizeListFlag(&strips), "strip-sizes", "--run: strip sizes")
	f.Var(units.SizeListFlag(&xfers), "transfer-sizes", "--run: transfer sizes (only those <= the strip size are run)")
	f.IntSliceVar(&servers, "servers", []int{1}, "--run: I/O servers (= stripe count) of each grid, e.g. 1,2,4")
	f.Var(units.SizeFlag(&size), "size", "--run: file size")
	f.IntVar(&ranks, "ranks", 1, "--run: ranks writing the file (pario bench -N)")
	f.IntVar(&reps, "repetitions", 3, "--run: repetitions per point (pario bench -i)")
	f.StringVar(&keep, "keep-results", "", "--run: keep the JSON results in this directory (to refit later with --results)")
	f.Var(units.SizeFlag(&defStrip), "strip-size", "--results: strip size of files that do not say (IOR)")
	f.IntVar(&defTargets, "targets", 0, "--results: stripe count of files that do not say (default 1)")
	f.Float64Var(&gamma, "gamma", 0, "fix the service rate gamma (1/s) instead of deriving it from the service part")
	f.StringVar(&overhead, "overhead", "auto", "per-request overhead: auto (kept if the data demand it), on, off")
	f.IntVar(&experiments, "experiments", 20000, "simulated experiments per point")
	f.Uint64Var(&seed, "seed", 1, "simulation seed")
	f.BoolVar(&keepWarmup, "keep-warmup", false, "fit the first repetition of each run too (by default it is set aside as warm-up)")
	f.IntVar(&rounds, "bootstrap", 100, "bootstrap rounds for the parameters' 95% intervals (0: none)")
	f.StringVar(&plotDir, "plot", "", "write DIR/calibration.png and .svg (measured | simulated heat maps)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines")
	return cmd
}
