package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pario/pario/tune/estimate"
	"github.com/pario/pario/tune/model"
	"github.com/pario/pario/tune/results"
	"github.com/pario/pario/tune/search"
)

func newTuneEstimateCommand() *cobra.Command {
	var (
		format string
		window float64
	)
	cmd := &cobra.Command{
		Use:   "estimate FILE...",
		Short: "Estimate lambda and gamma from a log of I/O jobs",
		Long: `Estimate the tuner's lambda (arrivals per second at a target) and gamma
(services per second) from a log of I/O jobs, by the paper's rule (its
figure 2): a job arrives when its last block does, jobs arriving at the same
moment count as one job, lambda = 1 / mean time between arrivals and gamma =
1 / mean service time of a job (the sum of its blocks'). The paper's Table I
(13.478 s between arrivals, 4.453 s of service) came from a month of such
logs. The report gives 95% intervals (for exponential times, as the model
assumes) and warns when the times are not exponential or rho >= 1.

Logs (--format auto tells them apart by the header; '-' reads stdin):
  csv    a header naming the columns job, arrival, service (or end) in any
         order, then one block a line; times in seconds or as
         2010-06-01T12:00:00[Z]; '#' starts a comment:
             job,arrival,service
             A,0,4.2
  sacct  Slurm's 'sacct -P -o JobID,Start,End' (more columns are ignored):
         a job's numbered steps are its blocks (else its batch step, else
         its allocation), each arriving at Start, served End - Start

  pario tune estimate tune/estimate/testdata/figure2.csv   # the paper's figure 2, in a checkout
  sacct -P -a -S 2010-06-01 -E 2010-07-01 -o JobID,Start,End | pario tune estimate -
  pario tune estimate --simultaneous 1 jobs.csv   # your job log; arrivals within 1 s are one

docs/tune.md describes both formats.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("estimate: no log given: want FILE... ('-' for stdin)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// Checked before any log is read: stdin may be a pipe
			// that takes long to fill.
			if err := estimate.CheckFormat(format); err != nil {
				return usageError{fmt.Errorf("--format: %w", err)}
			}
			if err := estimate.CheckWindow(window); err != nil {
				return usageError{fmt.Errorf("--simultaneous: %w", err)}
			}
			var blocks []estimate.Block
			var skipped []estimate.Skip
			var formats []string
			for _, name := range args {
				log, err := readJobLog(name, format)
				if err != nil {
					return err
				}
				blocks = append(blocks, log.Blocks...)
				skipped = append(skipped, log.Skipped...)
				formats = append(formats, name+" ("+log.Format+")")
			}
			r, err := estimate.Estimate(blocks, window)
			if err != nil {
				return fmt.Errorf("estimate: %s: %w", strings.Join(args, ", "), err)
			}
			return r.WriteText(os.Stdout, strings.Join(formats, ", "), skipped)
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "auto", "log format: csv, sacct or auto")
	f.Float64Var(&window, "simultaneous", 0, "arrivals within this many seconds of each other count as one job")
	return cmd
}

// readJobLog reads one log, "-" being stdin.
func readJobLog(name, format string) (estimate.Log, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		// O_NONBLOCK: a FIFO nobody writes reads as empty instead of
		// hanging in open (a pipe with a writer, <(sacct ...), still
		// waits for its data).
		f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return estimate.Log{}, fmt.Errorf("estimate: %w", err)
		}
		defer f.Close()
		r = f
	}
	log, err := estimate.Read(r, format)
	if err != nil {
		return log, fmt.Errorf("estimate: %s: %w", name, err)
	}
	return log, nil
}

func newTuneGroupsCommand() *cobra.Command {
	var (
		p           model.Params
		size        float64
		targets     int
		maxGroups   int
		methods     string
		budget      float64
		experiments int
		seed        uint64
		dbPath      string
		system      string
	)
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "Search the multi-group case: m files of --size/m GB, each on n of --targets targets",
		Long: `Search the paper's multi-group case (its future work): a job of --size GB
written at once as m files (groups of processes, one file each) of --size/m
GB, each striped over n of the system's --targets targets chosen at random,
so that blocks of several files may share a target; the job is done when its
last block is. There is no closed form: every point (m, n) is simulated
('pario tune simulate --groups m --n n --targets N', --experiments per point,
the same --seed for all, so that they see the same background traffic), and
the methods search m = 1..--max-groups, n = 1..--targets, starting from one
file on the model's optimal n. Results are kept in the database of 'pario
tune search' (--db).

  pario tune groups --size 100 --targets 40
  pario tune groups --size 100 --targets 160 --max-groups 16 --method annealing --budget 0.1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := search.ParseGroups(size, targets, maxGroups, methods, budget, experiments)
			if err != nil {
				return usageError{err}
			}
			if err := p.Validate(); err != nil {
				return tuneInput(err)
			}
			req.Model, req.Seed, req.System = p, seed, system
			store, err := openTuneDB(dbPath)
			if err != nil {
				return err
			}
			defer store.Close()
			req.Store = store
			res, err := search.SearchGroups(cmd.Context(), req)
			if err != nil {
				return err
			}
			return search.WriteGroupsText(os.Stdout, res)
		},
	}
	modelFlags(cmd, &p)
	f := cmd.Flags()
	f.Float64Var(&size, "size", 100, "size of the whole job M (GB)")
	f.IntVar(&targets, "targets", 40, "N: the targets the files' stripes are chosen from")
	f.IntVar(&maxGroups, "max-groups", 8, "largest number of groups m to search")
	f.StringVar(&methods, "method", "exhaustive", "search methods, comma separated: exhaustive, "+search.MethodNames())
	f.Float64Var(&budget, "budget", 0.25, "evaluations per heuristic: a fraction of the space (<= 1) or a count")
	f.IntVar(&experiments, "experiments", 500, "simulated experiments per point")
	f.Uint64Var(&seed, "seed", 1, "random seed of the simulator and the methods")
	f.StringVar(&dbPath, "db", "", "results database (default DATA_DIR/tune.db)")
	f.StringVar(&system, "system", "", "name of the system in the database (default: from lambda, gamma, V)")
	return cmd
}

// openTuneDB opens the results database at path, DATA_DIR/tune.db when
// empty.
func openTuneDB(path string) (*results.Store, error) {
	if path == "" {
		path = filepath.Join(defaultDataDir(), "tune.db")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("results database %s: %w", path, err)
	}
	// NoSync: should the machine crash, the last records are simply
	// evaluated again.
	return results.Open(path, results.Options{NoSync: true})
}
