package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/mfg/mcmc"
	"github.com/pario/pario/rank"
)

// mcmcFlags holds what `pario mcmc` was given.
type mcmcFlags struct {
	p          mcmc.Params
	format     string
	opt        mcmc.Options
	rendezvous string
}

func newMcmcCommand() *cobra.Command {
	mf := &mcmcFlags{p: mcmc.Params{Runs: 2, Chains: 4, Procs: 1, Taxa: 16, Gens: 100, SampleFreq: 1, SwapFreq: 1, Seed: 1}}
	cmd := &cobra.Command{
		Use:   "mcmc [flags]",
		Short: "The write workload of MrBayes' parallel MCMC, p(MC)^3: serial or MFG output",
		Long: `Run the output side of MrBayes' p(MC)^3 as ranks: --runs x --chains chains
with heats 1/(1 + 0.5 (j-1)) spread over --np processes as MrBayes spreads
them, heat swaps within a run accepted with a seeded random draw, and per
sampled generation one .t (tree) and one .p (parameter) line per run from
the process that holds the run's cold chain, in MrBayes 3.1's format (the
thesis') or 3.2.7's (Debian's mb). Lines are padded to a fixed width.

  --io serial   every rank sends its lines to rank 0, which writes the
                2 x runs files OUT.run<k>.t and OUT.run<k>.p (as MrBayes)
  --io mfg      mapping at first generation: every rank writes its own lines
                into one parallel file OUT (pario:/path or a POSIX path) with
                one list write per batch of --lambda generations
  --io none     compute the lines, write nothing

--lambda auto takes the thesis' rule (16 for small data per generation, 1
from 4 strips of 64 KiB per server); a lambda that does not fit in memory
(eq. 6.1, 75% rule) is refused. --layout varstrip computes strips that keep
each rank's bytes on one server; it needs runs a multiple of --np (pi_1) or
processes holding chains of one run each. Without mpirun or srun, --np n
starts n local rank processes. pario mcmc split turns a parallel file back
into the .t/.p files; pario mcmc matrix writes an input matrix.

  pario mcmc --runs 8 --chains 4 --np 8 --taxa 16 --gens 1000 --io serial -o /tmp/run
  pario up &                                    # a store for the next two
  pario mcmc --runs 8 --chains 4 --np 8 --taxa 16 --gens 1000 --io mfg -o pario:/run.mfg --layout varstrip --lambda auto
  pario mcmc split pario:/run.mfg --runs 8 --taxa 16 --gens 1000 -o /tmp/split
  mpirun -np 16 pario mcmc --runs 64 --chains 4 --io mfg -o /tmp/run.mfg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMcmc(cmd, mf) },
	}
	f := cmd.Flags()
	f.SortFlags = false
	mcmcParamFlags(cmd, &mf.p, &mf.format)
	f.IntVar(&mf.p.Chains, "chains", mf.p.Chains, "chains per run (nchains); chain 1 is cold")
	f.IntVar(&mf.p.Procs, "np", mf.p.Procs, "processes (ranks); at most runs x chains (under mpirun/srun: the launcher's count)")
	f.Int64Var(&mf.p.SwapFreq, "swapfreq", mf.p.SwapFreq, "generations between heat swap attempts")
	f.Uint64Var(&mf.p.Seed, "seed", mf.p.Seed, "seed of the swaps and lines (the same seed gives the same files)")
	f.StringVar(&mf.opt.IO, "io", "mfg", "output: serial, mfg or none")
	f.StringVarP(&mf.opt.Out, "output", "o", "mcmc.out", "serial: base of the .t/.p files; mfg: the parallel file (pario:/path or a POSIX path)")
	f.StringVar(&mf.opt.Lambda, "lambda", "1", "generations of lines kept in memory and written at once (mfg), or auto")
	f.StringVar(&mf.opt.Layout, "layout", "", "distribution of a pario parallel file: varstrip (strips computed), or a layout such as simple_stripe:strip_size=1k (default: the directory's)")
	f.StringVar(&mf.rendezvous, "rendezvous", "", "rank 0's address host[:port] under mpirun/srun (default: from the environment)")
	f.IntVar(&mf.opt.Nodes, "nodes", 0, "emulated cluster: ranks on this many nodes, in blocks, node i's I/O server being server i (its link at the cluster file's net-rate-local, varstrip's strips on it); 0: no nodes")
	f.IntVar(&mf.opt.NodeCPUs, "node-cpus", 2, "emulated cluster: CPUs per node; ranks beyond them share them (compute phases stretched), and efficiency counts nodes x node-cpus")
	f.DurationVar(&mf.opt.ChainWork, "chain-work", 0, "emulated compute per chain per generation (e.g. 2ms), spent asleep and stretched by --node-cpus: a real chain's likelihood costs time, the simulated one almost none")
	f.Float64Var(&mf.opt.Baseline, "baseline", 0, "seconds of the serial version of the same run (pario mcmc --io serial's time): report speedup, efficiency and Delta_perf against it")
	cmd.AddCommand(newMcmcSplitCommand(), newMcmcMatrixCommand())
	return cmd
}

// mcmcParamFlags are the flags that fix the files' layout, shared with
// split.
func mcmcParamFlags(cmd *cobra.Command, p *mcmc.Params, format *string) {
	f := cmd.Flags()
	f.IntVar(&p.Runs, "runs", p.Runs, "independent runs (nruns)")
	f.IntVar(&p.Taxa, "taxa", p.Taxa, "taxa of the input matrix: the lines grow by about 24 B per taxon")
	f.Int64Var(&p.Gens, "gens", p.Gens, "generations (ngen)")
	f.Int64Var(&p.SampleFreq, "samplefreq", p.SampleFreq, "a generation is sampled (lines written) every samplefreq generations")
	f.StringVar(format, "format", "3.1", "MrBayes line format: 3.1 (the thesis') or 3.2.7 (Debian's mb: generation 0 sampled, end; closing the .t file)")
}

func runMcmc(cmd *cobra.Command, mf *mcmcFlags) error {
	ctx := cmd.Context()
	info, err := rank.Detect(rank.Environ())
	if err != nil {
		return usageError{err}
	}
	under := info.Launcher != rank.LauncherNone
	if under && !cmd.Flags().Changed("np") {
		mf.p.Procs = info.Size
	}
	p, mode, lambda, auto, err := mf.parse()
	if err != nil {
		return usageError{err}
	}
	if under && info.Size != p.Procs {
		return usageError{fmt.Errorf("--np %d but the launcher started %d ranks: drop --np or launch %d", p.Procs, info.Size, p.Procs)}
	}
	if !under && p.Procs > 1 {
		if err := rank.CheckLaunch(p.Procs); err != nil {
			return usageError{fmt.Errorf("mcmc: --np: %w", err)}
		}
	}
	if !under {
		if err := checkOutput(ctx, mf.opt, mode); err != nil {
			return err
		}
	}
	if !under && p.Procs > 1 {
		return launchMcmc(ctx, p.Procs, mf.opt.Left(mode))
	}
	comm, err := rank.Join(ctx, rank.Config{Rendezvous: mf.rendezvous})
	if err != nil {
		return fmt.Errorf("mcmc: join the other ranks: %w", err)
	}
	defer comm.Close()
	sum, err := mcmcRank(ctx, comm, p, mode, lambda, auto, mf)
	if err != nil && interrupted(ctx, err) {
		// Interrupted (Ctrl-C, SIGTERM; or another rank was, and gave up
		// the collective call this one is in before this one's signal
		// came): say so once, not as the collective call each rank was
		// in; pario's launcher says it for its ranks.
		var left leftError
		if errors.As(err, &left) {
			return exitStatus{code: 130, msg: "mcmc: interrupted; " + left.Error()}
		}
		if info.Launcher == rank.LauncherPario {
			return exitStatus{code: 130}
		}
		return exitStatus{code: 130, msg: "mcmc: interrupted" + mf.opt.Left(mode)}
	}
	if err != nil {
		return err
	}
	if comm.Rank() == 0 {
		return sum.Report(cmd.OutOrStdout())
	}
	return nil
}

// parse checks the flags: nothing is launched or written with bad ones.
func (mf *mcmcFlags) parse() (p mcmc.Params, mode mcmc.IO, lambda int64, auto bool, err error) {
	p = mf.p
	if p.Format, err = mcmc.ParseFormat(mf.format); err != nil {
		return
	}
	if err = p.Validate(); err != nil {
		return
	}
	mf.opt.InPario = isStorePath(mf.opt.Out)
	c, err := mf.opt.Check(p)
	return p, c.Mode, c.Lambda, c.Auto, err
}

// launchMcmc starts n local rank processes of this command; incomplete
// says what an interrupted run leaves.
func launchMcmc(ctx context.Context, n int, incomplete string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcmc: find this program to start %d ranks: %w", n, err)
	}
	opts := rank.LaunchOptions{StopGrace: mcmcStopGrace, Prefix: func(r int) string {
		if r == 0 {
			return ""
		}
		return fmt.Sprintf("[rank %d] ", r)
	}}
	err = rank.Launch(ctx, n, append([]string{self}, os.Args[1:]...), opts)
	if err != nil && ctx.Err() != nil {
		return exitStatus{code: 130, msg: "mcmc: interrupted" + incomplete}
	}
	var le *rank.LaunchError
	if errors.As(err, &le) {
		// A rank interrupted on its own (a signal to its process alone)
		// exits 130 without a word, as every rank does on Ctrl-C: say
		// which, since the others then fail in their collective calls.
		for _, f := range le.Failed {
			var ee *exec.ExitError
			if errors.As(f.Err, &ee) && ee.ExitCode() == 130 {
				return exitStatus{code: 130, msg: fmt.Sprintf("mcmc: rank %d was interrupted%s", f.Rank, incomplete)}
			}
		}
		return fmt.Errorf("mcmc: %d of %d ranks failed (their messages are above)%s", len(le.Failed), n, incomplete)
	}
	return err
}

// mcmcStopGrace is how long interrupted local ranks may take to stop:
// rank 0 removes the unfinished parallel file or serial files.
const mcmcStopGrace = 10 * time.Second

// mcmcRank is one rank: the lambda all ranks agree on, the output rank 0
// prepares, the workload, and the summary over all ranks.
func mcmcRank(ctx context.Context, comm *rank.Comm, p mcmc.Params, mode mcmc.IO, lambda int64, auto bool, mf *mcmcFlags) (mcmc.Summary, error) {
	sum := mcmc.Summary{Params: p, Mode: mode}
	var c *client.Client
	servers := 1
	node, share := -1, 0.0
	if mf.opt.Nodes > 0 {
		node = mcmc.NodeOfRank(comm.Rank(), p.Procs, mf.opt.Nodes)
		share = mcmc.CPUShare(mf.opt.NodeCPUs, mcmc.RanksOnNode(node, p.Procs, mf.opt.Nodes))
		sum.CPUs = mf.opt.Nodes * mf.opt.NodeCPUs
	}
	if mode == mcmc.IOMFG && isStorePath(mf.opt.Out) {
		var err error
		if c, err = connectFrom(ctx, node); err != nil {
			return sum, err
		}
		defer c.Close()
		servers = len(c.Servers())
		if mf.opt.Nodes > servers {
			return sum, usageError{fmt.Errorf("--nodes %d: the cluster has %d I/O servers, one per node", mf.opt.Nodes, servers)}
		}
	}
	sum.Baseline, sum.Servers, sum.Reached = mf.opt.Baseline, 1, 1
	// Eq. 6.1 on this node, the smallest limit over all ranks.
	limit, err := lambdaLimit(p, comm.Size())
	if err != nil {
		return sum, err
	}
	red := rankReducer{comm}
	least, err := red.MinUint64(ctx, uint64(limit))
	if err != nil {
		return sum, err
	}
	if mode == mcmc.IOSerial {
		lambda, auto = 1, false
	}
	if sum.Lambda, err = p.Lambda(lambda, auto, servers, int64(least), false); err != nil {
		return sum, usageError{err}
	}
	out := mcmc.Output{Mode: mode, Lambda: sum.Lambda, CPUShare: share, ChainWork: mf.opt.ChainWork}
	ro, err := prepareOutput(ctx, comm, c, p, mf, servers, &sum, &out)
	if err != nil {
		return sum, err
	}
	began := time.Now()
	st, err := mcmc.Run(ctx, comm, p, out)
	if err = ro.close(err); err == nil {
		// Every rank gets here only once all have written their part.
		err = sum.Collect(ctx, red, st, time.Since(began).Seconds())
	}
	return sum, ro.finish(ctx, err)
}

// lambdaLimit is eq. 6.1's limit on this node for the lines of ranks
// ranks, from /proc/meminfo: none known without it.
func lambdaLimit(p mcmc.Params, ranks int) (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return mcmc.Unlimited, nil
	}
	total, avail, err := mcmc.ParseMeminfo(b)
	if err != nil {
		return mcmc.Unlimited, nil
	}
	host, _ := os.Hostname()
	return p.LambdaLimitOn(host, total, avail, ranks)
}

// rankReducer gives the workload rank's reductions (mcmc.Reducer).
type rankReducer struct{ c *rank.Comm }

func (r rankReducer) MaxFloat64(ctx context.Context, v float64) (float64, error) {
	return r.c.AllreduceFloat64(ctx, v, rank.Max)
}

func (r rankReducer) SumUint64(ctx context.Context, v uint64) (uint64, error) {
	return r.c.AllreduceUint64(ctx, v, rank.Sum)
}

func (r rankReducer) MinUint64(ctx context.Context, v uint64) (uint64, error) {
	return r.c.AllreduceUint64(ctx, v, rank.Min)
}

func newMcmcSplitCommand() *cobra.Command {
	p := mcmc.Params{Runs: 2, Taxa: 16, Gens: 100, SampleFreq: 1, SwapFreq: 1}
	var format, out string
	cmd := &cobra.Command{
		Use:   "split FILE",
		Short: "Turn a parallel file of pario mcmc --io mfg back into MrBayes' .t/.p files",
		Long: `Cut a parallel file written by pario mcmc --io mfg (FILE: pario:/path or a
POSIX path) into the files MrBayes writes: OUT.run<k>.t and OUT.run<k>.p (OUT.t
and OUT.p for one run). Give the --runs, --taxa, --gens, --samplefreq and
--format of the run: they fix the file's map. The whole file is checked first,
byte by byte (size, headers, every line's generation and end); a file that does
not match is refused and no output is written.

  pario mcmc split pario:/run.mfg --runs 8 --taxa 16 --gens 1000 -o /tmp/split`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if p.Format, err = mcmc.ParseFormat(format); err != nil {
				return usageError{err}
			}
			return splitMcmc(cmd.Context(), p, args[0], out)
		},
	}
	mcmcParamFlags(cmd, &p, &format)
	cmd.Flags().StringVarP(&out, "output", "o", "mcmc.out", "base of the .t/.p files")
	return cmd
}

func newMcmcMatrixCommand() *cobra.Command {
	p := mcmc.Params{Runs: 2, Chains: 4, Taxa: 16, Gens: 1000, SampleFreq: 100, SwapFreq: 1}
	var nchar int
	var seed uint64
	var block bool
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Write a synthetic NEXUS input matrix (the thesis' gtaxa) to standard output",
		Long: `Write a NEXUS DNA matrix of --taxa random sequences of --nchar characters,
taxa named 1, 2, ... as the thesis' gtaxa named them. With --mrbayes a mrbayes
block is appended that runs MrBayes (mb) with the given runs, chains,
generations and frequencies, so its .t/.p files can be set beside pario mcmc's.

  pario mcmc matrix --taxa 16 --nchar 2000 > taxa16.nex
  pario mcmc matrix --taxa 16 --mrbayes --runs 2 --chains 2 --gens 100 --samplefreq 10 > run.nex && mb run.nex`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var mb *mcmc.Params
			if block {
				mb = &p
			}
			for _, name := range []string{"runs", "chains", "gens", "samplefreq", "swapfreq"} {
				if !block && cmd.Flags().Changed(name) {
					return usageError{fmt.Errorf("--%s is for the mrbayes block: add --mrbayes", name)}
				}
			}
			if err := mcmc.CheckMatrix(p.Taxa, nchar, mb); err != nil {
				return usageError{err}
			}
			err := mcmc.Matrix(cmd.Context(), cmd.OutOrStdout(), p.Taxa, nchar, seed, mb)
			if err != nil && cmd.Context().Err() != nil {
				return exitStatus{code: 130, msg: "mcmc matrix: interrupted"}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&p.Taxa, "taxa", p.Taxa, "taxa (rows)")
	f.IntVar(&nchar, "nchar", 2000, "characters per taxon")
	f.Uint64Var(&seed, "seed", 1, "seed of the sequences")
	f.BoolVar(&block, "mrbayes", false, "append a mrbayes block that runs the analysis and quits")
	f.IntVar(&p.Runs, "runs", p.Runs, "--mrbayes: nruns")
	f.IntVar(&p.Chains, "chains", p.Chains, "--mrbayes: nchains")
	f.Int64Var(&p.Gens, "gens", p.Gens, "--mrbayes: ngen")
	f.Int64Var(&p.SampleFreq, "samplefreq", p.SampleFreq, "--mrbayes: samplefreq")
	f.Int64Var(&p.SwapFreq, "swapfreq", p.SwapFreq, "--mrbayes: swapfreq")
	return cmd
}
