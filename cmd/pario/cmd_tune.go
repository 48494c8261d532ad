package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/tune/model"
	"github.com/pario/pario/tune/plot"
	"github.com/pario/pario/tune/search"
	"github.com/pario/pario/tune/sim"
	"github.com/pario/pario/units"
)

// The paper's parameters (Table III): they are every tune command's defaults.
const (
	paperLambda = 0.1
	paperGamma  = 0.125
	paperV      = 0.0625
)

func newTuneCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Model, simulate and search striping parameters (the auto-tuner)",
		Long: `The auto-tuner of You, Liu, Li and Moore ("The Design of an Auto-Tuning I/O
Framework on Cray XT5 System"): a queueing model proposes a stripe count, a
simulator evaluates parameter sets off the production machine, and search
heuristics look for the best stripe count, strip size and transfer size,
keeping every result in a database so that no set is evaluated twice.

  pario tune model --size 100             # optimal stripe count of a 100 GB file
  pario tune simulate --size 100 --n 40   # check the model by simulation
  pario tune search --size 10g            # best (count, strip, transfer) for 10 GiB
  pario mkdir /runs && pario tune search --size 10g --apply /runs   # ...and set it on a pario directory

Every command takes the system's parameters: --lambda (background requests
per second at one storage target), --gamma (their service rate per second;
rho = lambda/gamma must be below 1) and --v (write speed of one target in
GB/s). The defaults are the paper's (0.1, 0.125, 0.0625), which reproduce
its Table III. docs/tune.md explains the commands and their output.`,
	}
	cmd.AddCommand(newTuneModelCommand(), newTuneSimulateCommand(), newTuneSearchCommand(), newTuneCalibrateCommand(), newTuneEstimateCommand(), newTuneGroupsCommand())
	return cmd
}

// tuneInput makes an error about a value given on the command line (a
// parameter out of range, an unstable queue: model.ErrInvalid,
// model.ErrUnstable) a usage error, exit status 2, as every command's bad
// flags are; any other error stays a runtime failure (1).
// The parameter's name in the message is the package's (sim's
// "Stripes"); the flag that set it, in modelFlagNames or simFlagNames,
// comes first.
func tuneInput(err error) error {
	if !errors.Is(err, model.ErrInvalid) && !errors.Is(err, model.ErrUnstable) {
		return err
	}
	var name string
	var pe *model.ParamError
	var ce *sim.ConfigError
	switch {
	case errors.As(err, &pe):
		name = modelFlagNames[pe.Name]
	case errors.As(err, &ce):
		name = simFlagNames[ce.Field]
	}
	if name != "" {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return usageError{err}
}

// makePlotDir makes --plot's directory, if one is given, before the work
// whose figures go there: a path under a file failed only after a search
// had run, and did not name the flag.
func makePlotDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

// modelFlagNames and simFlagNames are the flags of tune model and tune
// simulate that set model's and sim's parameters (rho: --lambda/--gamma).
var (
	modelFlagNames = map[string]string{"lambda": "--lambda", "gamma": "--gamma", "V": "--v", "M": "--size", "maxN": "--max-n"}
	simFlagNames   = map[string]string{"Lambda": "--lambda", "Gamma": "--gamma", "V": "--v", "FileSize": "--size", "Stripes": "--n",
		"Groups": "--groups", "Targets": "--targets", "Time": "--time", "Experiments": "--experiments"}
)

// modelFlags adds --lambda, --gamma and --v to cmd.
func modelFlags(cmd *cobra.Command, p *model.Params) {
	f := cmd.Flags()
	f.Float64Var(&p.Lambda, "lambda", paperLambda, "arrival rate of background requests at one target (1/s)")
	f.Float64Var(&p.Gamma, "gamma", paperGamma, "service rate of background requests (1/s); lambda/gamma must be < 1")
	f.Float64Var(&p.V, "v", paperV, "write speed of one target (GB/s)")
}

func newTuneModelCommand() *cobra.Command {
	var (
		p       model.Params
		size    float64
		maxN    int
		paper   bool
		plotDir string
	)
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Optimal stripe count and expected write time from the queueing model",
		Long: `Evaluate the queueing model: every storage target is an M/M/1 queue with
background traffic, a file of --size GB is cut into n blocks on n targets and
is done when its slowest block is. Prints the n in 1..--max-n that minimises
the expected system time E(T), that E(T) in seconds, and E(T) for the stripe
counts around the optimum.

Two formulas:
  exact (default)  the value of the paper's own integral,
                   E(T) = 1/(gamma(1-rho)) sum_{k=1..n} (1-(1-rho)^k)/k + M/(nV);
                   it agrees with numerical integration and with the simulator
                   ('pario tune simulate').
  --paper          the closed form printed in the paper. It reproduces the
                   paper's Table III exactly (10 GB: N=4, T=117.3120 s) but
                   overstates E(T) for n >= 3 (by 2.5-4% at the optimum at
                   rho = 0.8, where at 10 GB the exact optimum is n=5,
                   114.4081 s; by 16-19% at rho = 0.5, 7 GB, and more at
                   lower rho). See tune/model/TABLES.md for both beside the
                   paper's numbers, and its table over rho.

  pario tune model --size 10 --paper
  pario tune model --size 500 --max-n 400
  pario tune model --size 50 --plot figs   # figs/fig3.{png,svg}, figs/fig4.{png,svg}

--plot DIR writes fig3 (E(T) against n for this size, both formulas, n up to
--max-n) and fig4 (the optimal n against file sizes 1..1000 GB, both
formulas) as PNG and SVG, like the paper's figures 3 and 4.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := makePlotDir(plotDir); err != nil {
				return err
			}
			formula := model.Exact
			if paper {
				formula = model.Paper
			}
			o, err := model.FindOptimum(p, size, maxN, formula)
			if err != nil {
				return tuneInput(err)
			}
			if err := o.WriteText(os.Stdout); err != nil {
				return err
			}
			if plotDir == "" {
				return nil
			}
			paths, err := plot.SaveModelFigures(p, size, maxN, plotDir)
			for _, path := range paths {
				fmt.Println("wrote", path)
			}
			return err
		},
	}
	modelFlags(cmd, &p)
	f := cmd.Flags()
	f.Float64Var(&size, "size", 10, "file size M (GB)")
	f.IntVar(&maxN, "max-n", 160, "largest stripe count to consider")
	f.BoolVar(&paper, "paper", false, "use the paper's printed closed form (reproduces its Table III) instead of the exact one")
	f.StringVar(&plotDir, "plot", "", "write fig3 and fig4 (PNG and SVG) into this directory")
	return cmd
}

func newTuneSimulateCommand() *cobra.Command {
	var (
		p           model.Params
		size        float64
		n           int
		seed        uint64
		experiments int
		at          float64
		empty       bool
		groups      int
		targets     int
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate the write of one striped file and compare with the model",
		Long: `Simulate, event by event, a file of --size GB striped over --n targets, each
target a FIFO queue with Poisson background arrivals (--lambda) and exponential
service (--gamma), and report the mean system time over many independent
experiments with its 99% confidence interval, and its relative error against
the exact model (see 'pario tune model --help').

With --experiments 0 (the default) a pilot run picks the count that makes the
99% interval narrower than 2% of the mean; the output shows how many it
required. Results depend only on the flags and --seed.

  pario tune simulate --size 10 --n 4
  pario tune simulate --size 100 --n 40 --experiments 5000 --seed 7

Queues start in equilibrium (what the model assumes); --empty starts them idle
as the paper's simulation did, which biases the mean low for small --time.

--groups m simulates the paper's multi-group case (its future work): m files
of --size/m GB written at once, each striped over --n of --targets targets
chosen at random, so that blocks of several files can share a target; the
job is done when the last block is. There is no closed form (except with
--n equal to --targets); 'pario tune groups' searches (m, n).

  pario tune simulate --size 100 --groups 4 --n 5 --targets 40`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if groups < 0 || targets < 0 {
				return usageError{fmt.Errorf("--groups %d, --targets %d: must not be negative", groups, targets)}
			}
			if groups > 1 && targets == 0 {
				return usageError{fmt.Errorf("--groups %d: give --targets, the number of targets the groups' stripes are chosen from", groups)}
			}
			if n == 0 {
				// Each group's file is size/m GB.
				var err error
				if n, _, err = model.OptimalN(p, size/float64(max(groups, 1)), max(targets, 1<<20)); err != nil {
					return tuneInput(err)
				}
				if targets > 0 {
					n = min(n, targets)
				}
			}
			cfg := sim.Config{
				Lambda: p.Lambda, Gamma: p.Gamma, V: p.V, FileSize: size, Stripes: n,
				Groups: groups, Targets: targets, Time: at, Experiments: experiments, Seed: seed,
			}
			if empty {
				cfg.Init = sim.Empty
			}
			r, err := sim.Run(cmd.Context(), cfg)
			if err != nil {
				return tuneInput(err)
			}
			return sim.WriteText(os.Stdout, cfg, r)
		},
	}
	modelFlags(cmd, &p)
	f := cmd.Flags()
	f.Float64Var(&size, "size", 10, "file size M (GB)")
	f.IntVar(&n, "n", 0, "stripe count (0: the exact model's optimum for --size)")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.IntVar(&experiments, "experiments", 0, "number of experiments (0: as many as a 99% CI within 2% of the mean needs)")
	f.Float64Var(&at, "time", 100, "arrival time of the file (s)")
	f.BoolVar(&empty, "empty", false, "start every queue idle instead of in equilibrium")
	f.IntVar(&groups, "groups", 1, "m: files written at once, --size GB in all, each striped over --n of --targets targets")
	f.IntVar(&targets, "targets", 0, "N: targets the groups' stripes are chosen from (needed with --groups > 1)")
	return cmd
}

func newTuneSearchCommand() *cobra.Command {
	var (
		p            model.Params
		methodFlag   string
		size         = int64(10 << 30)
		objective    string
		trustModel   bool
		budgetFlag   float64
		seed         uint64
		dbPath       string
		system       string
		plotDir      string
		applyTo      string
		countFlag    string
		stripFlag    string
		transferFlag string
		filesFlag    string
		procsFlag    string
		benchCluster bool
		benchServers int
		benchRanks   int
		benchReps    int
		experiments  int
		tuneFarm     tuneFarmFlags
	)
	cmd := &cobra.Command{
		Use:   "search [-- COMMAND [ARG...]]",
		Short: "Search the best stripe count, strip size and transfer size for a file",
		Long: `Search the space of the paper's Table IV (stripe count 1-160, strip size and
transfer size 1 MiB-256 MiB in powers of two: 12,960 points) for the
parameters that minimise the predicted time to write one file of --size bytes,
with each heuristic of --method, and recommend the best.

The objective (--objective) is the queueing model extended with strip
imbalance, 0.004 s per RPC and a 10 Gbit/s client (the paper's Table I:
seek time, transfer speed) ("model", the default,
about a second for all methods), or the same with the waiting time simulated
by the simulator of 'pario tune simulate' ("sim": every stripe count simulated once
up front with --experiments experiments, a few seconds). Before a search of
the model, the simulator checks it, as the paper's framework does (every
stripe count, 1000 experiments, about a second): where the two differ by more
than 2% and the simulator's 99% interval, the search refuses, naming the
worst count (--trust-model searches anyway, with a warning). "bench" measures
instead: every point is a 'pario bench' run writing --size bytes (on an
embedded cluster of --bench-servers per run, or with --bench-cluster on the
cluster of --cluster), kept in the database; give --budget as a count of
runs, e.g. 20. "farm" searches pario farm's --group instead (and -N with
--farm-ranks): every group size is a real 'pario farm' run over --farm-in with
--farm-annotations and the COMMAND after --, timed, the fastest recommended
(docs/tune.md). Each heuristic may
evaluate --budget of the space (a fraction, or a count when above 1), starting
from the model's proposed stripe count; exhaustive evaluates every point, or
refuses a space of more than a million. Of the points that tie with the best,
the fewest targets are recommended, never more than the file has strips.

--files and --procs-per-file add the two dimensions of the paper's section I
that Table IV folds into "number of I/O processes": the job written as F
files of --size/F bytes, each by p processes, on a system of as many targets
as the largest stripe count (or the cluster's servers with --apply). Their
costs are assumptions, not the paper's (docs/tune.md): files on consecutive
targets, a 10 Gbit/s client per process, a lock pass per process sharing a
strip. Model objective only.

Every evaluation is stored in a results database (--db, default
DATA_DIR/tune.db, DATA_DIR as for 'pario up') under --system and the
objective's settings: a point already there is not evaluated again, so a
repeated search costs nothing (the table's "hits" and "misses" columns count
database answers and new evaluations).

  pario tune search                                  # all methods, 10 GiB
  pario tune search --size 100g --method genetic,swarm
  pario tune search --objective sim --stripe-count 1:64 --plot figs
  pario mkdir -p /runs && pario tune search --size 1g --stripe-count 1:4 --apply /runs
  pario tune search --objective bench --size 64m --strip-size 64k:4m --transfer-size 64k:4m --budget 20
  pario tune search --objective farm --farm-in q.fa --farm-annotations io.ann --farm-ranks 16 --farm-group 1:16 -- hmmscan --tblout /dev/stdout Pfam.hmm -

The output ends with the recommendation as an lfs command for Lustre and a
'pario layout set' command; --apply DIR sets it as the default layout of the
pario directory DIR (files created there afterwards inherit it), on the
cluster named by --cluster. --plot DIR writes search-trace.{png,svg}: the best
time so far against the number of evaluations, one line per method.`,
		Annotations: map[string]string{argsPassedOnAnnotation: "yes"},
		Args:        cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if objective == "farm" {
				return runTuneFarm(cmd, tuneFarm, args, dbPath, system)
			}
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected arguments %q: a command is given only with --objective farm", args)}
			}
			if err := makePlotDir(plotDir); err != nil {
				return err
			}
			// With --apply, the cluster is asked first: its server count
			// bounds the stripe count, and a directory that is not there
			// fails before the search, not after.
			var c *client.Client
			dir := "DIR"
			targets := 0
			if cmd.Flags().Changed("apply") {
				var err error
				if c, err = connect(cmd.Context()); err != nil {
					return err
				}
				defer c.Close()
				if dir, err = applyDir(cmd.Context(), c, applyTo); err != nil {
					return err
				}
				targets = len(c.Servers())
			}
			var bo *search.Bench
			if objective == "bench" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				tmp, err := os.MkdirTemp("", "pario-tune-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				bo = &search.Bench{Exe: exe, Servers: benchServers, FileSize: size, Ranks: benchRanks, Repetitions: benchReps, Dir: tmp}
				if benchCluster {
					bc, err := connect(cmd.Context())
					if err != nil {
						return err
					}
					bo.Cluster, bo.Servers = clusterFilePath(), len(bc.Servers())
					bc.Close()
				}
				if err := bo.Validate(); err != nil {
					return usageError{err}
				}
				// A layout of more datafiles than servers cannot be measured.
				if targets == 0 || bo.Servers < targets {
					targets = bo.Servers
				}
			}
			req, err := search.ParseRequest(search.Args{Methods: methodFlag, Size: size, Objective: objective, Budget: budgetFlag,
				StripeCount: countFlag, StripSize: stripFlag, TransferSize: transferFlag, Targets: targets, TrustModel: trustModel,
				Files: filesFlag, ProcsPerFile: procsFlag, Experiments: experiments})
			if err != nil {
				return usageError{err}
			}
			if err := p.Validate(); err != nil {
				return tuneInput(err)
			}
			req.Model, req.Seed, req.System, req.Bench = p, seed, system, bo
			store, err := openTuneDB(dbPath)
			if err != nil {
				return err
			}
			defer store.Close()
			req.Store = store
			rec, err := search.Recommend(cmd.Context(), req)
			if err != nil {
				return err
			}
			if err := search.WriteText(os.Stdout, rec, dir); err != nil {
				return err
			}
			if rec.Best == nil {
				return errors.New("no method evaluated a point")
			}
			if plotDir != "" {
				paths, err := search.SaveTrace(rec, plotDir)
				for _, path := range paths {
					fmt.Println("wrote", path)
				}
				if err != nil {
					return err
				}
			}
			if c == nil {
				return nil
			}
			l, err := dist.ParseLayout(rec.Layout())
			if err != nil {
				return err
			}
			if err := c.SetLayout(cmd.Context(), dir, l); err != nil {
				return err
			}
			a, err := c.Lookup(cmd.Context(), dir)
			if err != nil {
				return err
			}
			fmt.Printf("applied: %s: %s\n", dir, layoutOf(a))
			return nil
		},
	}
	modelFlags(cmd, &p)
	f := cmd.Flags()
	f.StringVar(&methodFlag, "method", "all", "heuristics, comma separated: all, "+search.MethodNames()+", exhaustive")
	f.Var(units.SizeFlag(&size), "size", "file size in bytes (binary suffixes k, m, g, t: 10g = 10 GiB)")
	f.StringVar(&objective, "objective", "model", "what to minimise: model (analytic), sim (simulated waiting time), bench (measured by pario bench) or farm (pario farm's group size, measured)")
	f.BoolVar(&trustModel, "trust-model", false, "search the model even if the simulator disagrees with it")
	f.BoolVar(&benchCluster, "bench-cluster", false, "--objective bench: measure on the cluster of --cluster ($PARIO_CLUSTER, pario up's) instead of an embedded one per run")
	f.IntVar(&benchServers, "bench-servers", 4, "--objective bench: I/O servers of each run's embedded cluster")
	f.IntVar(&benchRanks, "bench-ranks", 1, "--objective bench: ranks writing the file")
	f.IntVar(&benchReps, "bench-repetitions", 3, "--objective bench: repetitions per run (the first set aside when more)")
	f.Float64Var(&budgetFlag, "budget", 0.15, "evaluations per method: a fraction of the space (<= 1) or a count (> 1)")
	f.Uint64Var(&seed, "seed", 1, "random seed of the searches (and of the simulator)")
	f.StringVar(&dbPath, "db", "", "results database (default DATA_DIR/tune.db)")
	f.StringVar(&system, "system", "", "system name the results are stored under (default from --lambda, --gamma, --v)")
	f.StringVar(&plotDir, "plot", "", "write search-trace.png and .svg into this directory")
	f.StringVar(&applyTo, "apply", "", "set the recommended layout on this pario directory")
	f.StringVar(&countFlag, "stripe-count", "1:160", "stripe count bounds MIN:MAX (every integer)")
	f.StringVar(&stripFlag, "strip-size", "1m:256m", "strip (Lustre stripe) size bounds MIN:MAX (powers of two)")
	f.StringVar(&transferFlag, "transfer-size", "1m:256m", "transfer size bounds MIN:MAX (powers of two)")
	f.StringVar(&filesFlag, "files", "1", "number of files the job is written as, MIN:MAX (powers of two; e.g. 1:128)")
	f.StringVar(&procsFlag, "procs-per-file", "1", "processes writing each file, MIN:MAX (powers of two; e.g. 1:12288)")
	f.IntVar(&experiments, "experiments", 2000, "experiments per stripe count with --objective sim")
	tuneFarm.register(f)
	return cmd
}
