package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pario/pario/bench/sweep"
)

func newBenchSweepCommand() *cobra.Command {
	var (
		vary    []string
		out     string
		title   string
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "sweep --vary NAME=V1,V2,... [--vary ...] [-- BENCH FLAGS]",
		Short: "Run the benchmark over a grid of parameters; write CSV and a heat map or line plot (PNG, SVG)",
		Long: `Run pario bench once per combination of the varied parameters and collect the
mean write and read bandwidth of each. Two varied parameters give heat maps
(the first across, the second up: e.g. strip size x transfer size, as in the
calibration study's figures), one gives line plots. Output: DIR/sweep.csv,
DIR/write.png, DIR/write.svg, DIR/read.png, DIR/read.svg.

Parameters: t (transfer size), b (block size), s (segments), N (ranks),
strip-size (--pario.strip-size), pario-servers (--pario.servers), servers
(I/O servers of the embedded cluster), layout (--pario.layout). Flags after
"--" go to every pario bench run; without -a and -o each point is a default
run on its own embedded cluster. A progress bar shows on a terminal.
Every point's arguments are checked before the first runs; a grid of more
than 4096 points is refused, and one that will take more than an hour at
the first point's pace says so. Ctrl-C stops it and writes the points
measured so far (the others marked "not run" in the CSV; exit status 130).

  pario bench sweep --vary strip-size=64k,256k,1m,4m --vary t=64k,256k,1m,4m -- -N 4 -b 16m -i 3
  pario bench sweep --vary N=1,2,4,8 -- -a POSIX -o /tmp/ior.dat -b 64m -t 1m -e`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var params []sweep.Param
			for _, v := range vary {
				p, err := sweep.ParseParam(v)
				if err != nil {
					return usageError{err}
				}
				params = append(params, p)
			}
			if len(params) == 0 || len(params) > 2 {
				return usageError{errors.New("give one or two --vary parameters")}
			}
			if err := sweep.Validate(params); err != nil {
				return usageError{err}
			}
			return runSweep(cmd.Context(), params, args, out, title, verbose)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&vary, "vary", nil, "a parameter and its values, NAME=V1,V2,... (once or twice)")
	f.StringVar(&out, "out", "sweep", "directory for the CSV and the figures")
	f.StringVar(&title, "title", "pario bench", "title of the figures")
	f.BoolVar(&verbose, "show-runs", false, "show each run's report")
	return cmd
}

func runSweep(ctx context.Context, params []sweep.Param, benchArgs []string, out, title string, verbose bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return usageError{fmt.Errorf("bench sweep: --out %s: %w", out, err)}
	}
	tmp, err := os.MkdirTemp("", "pario-sweep-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rc := sweep.RunConfig{Exe: self, Params: params, BenchArgs: benchArgs, Dir: tmp, Check: checkBenchArgs, Warn: os.Stderr}
	if globalClusterFile != "" {
		rc.Global = []string{"--cluster", globalClusterFile}
	}
	if verbose {
		rc.Show = os.Stderr
	}
	var bar *progressbar.ProgressBar
	if term.IsTerminal(int(os.Stderr.Fd())) {
		bar = progressbar.NewOptions(len(sweep.Combos(params)), progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription("sweep"), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
		rc.Done = func() { bar.Add(1) }
	}
	pts, err := sweep.Run(ctx, rc)
	if err != nil && ctx.Err() != nil && pts != nil {
		// Hours of points are not thrown away by a Ctrl-C: they are
		// written, the rest marked not run in the CSV's error column.
		done := sweep.Measured(pts)
		msg := fmt.Sprintf("bench sweep: interrupted after %d of %d points", done, len(pts))
		if done > 0 {
			var failed *sweep.FailedPoints
			if err := sweep.WriteFiles(out, params, pts, title, os.Stdout); err != nil && !errors.As(err, &failed) {
				return exitStatus{code: 130, msg: msg + "; writing them: " + err.Error()}
			}
			msg += fmt.Sprintf("; %s has them, the others marked %q", filepath.Join(out, "sweep.csv"), sweep.NotRun)
		}
		return exitStatus{code: 130, msg: msg}
	}
	if err != nil {
		return err
	}
	if bar != nil {
		bar.Finish()
	}
	return sweep.WriteFiles(out, params, pts, title, os.Stdout)
}

// checkBenchArgs checks the arguments of one run of pario bench (those
// after "bench") as that run will before it starts anything, its mistakes
// usage errors: a sweep checks every point before it runs the first.
func checkBenchArgs(args []string) error {
	cmd, o, bf := benchCommand()
	if err := cmd.ParseFlags(args); err != nil {
		return usageError{err}
	}
	if len(cmd.Flags().Args()) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", cmd.Flags().Args()[0])}
	}
	if isDefaultRun(cmd, bf) {
		if bf.servers < 1 {
			return usageError{fmt.Errorf("--servers %d: want at least 1", bf.servers)}
		}
		return checkRankArgs(defaultRankArgs(cmd, args))
	}
	opts, err := parseOptions(cmd, *o, bf)
	if err != nil || bf.analyze {
		return usageErr(err)
	}
	return checkOptions(opts, max(opts.NumTasks, 1), bf.drivers[strings.ToUpper(opts.API)])
}

// usageErr is err as a usage error; nil stays nil.
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}
