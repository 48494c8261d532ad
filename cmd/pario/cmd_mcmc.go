package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/mfg"
	"github.com/pario/pario/mfg/mcmc"
	"github.com/pario/pario/rank"
	"github.com/pario/pario/wire/throttle"
)

// mcmcFlags holds what `pario mcmc` was given.
type mcmcFlags struct {
	p          mcmc.Params
	format     string
	io         string
	lambda     string
	layout     string
	out        string
	rendezvous string
	nodes      int           // emulated nodes (0: none)
	nodeCPUs   int           // CPUs per emulated node
	baseline   float64       // the serial version's seconds
	chainWork  time.Duration // Output.ChainWork
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
  pario mcmc --runs 8 --chains 4 --np 8 --taxa 16 --gens 1000 --io mfg -o pario:/run.mfg --layout varstrip --lambda auto
  pario mcmc split pario:/run.mfg --runs 8 --taxa 16 --gens 1000 -o /tmp/run
  mpirun -np 16 pario mcmc --runs 64 --chains 4 --io mfg -o /scratch/run.mfg`,
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
	f.StringVar(&mf.io, "io", "mfg", "output: serial, mfg or none")
	f.StringVarP(&mf.out, "output", "o", "mcmc.out", "serial: base of the .t/.p files; mfg: the parallel file (pario:/path or a POSIX path)")
	f.StringVar(&mf.lambda, "lambda", "1", "generations of lines kept in memory and written at once (mfg), or auto")
	f.StringVar(&mf.layout, "layout", "", "distribution of a pario parallel file: varstrip (strips computed), or a layout such as simple_stripe:strip_size=1k (default: the directory's)")
	f.StringVar(&mf.rendezvous, "rendezvous", "", "rank 0's address host[:port] under mpirun/srun (default: from the environment)")
	f.IntVar(&mf.nodes, "nodes", 0, "emulated cluster: ranks on this many nodes, in blocks, node i's I/O server being server i (its link at the cluster file's net-rate-local, varstrip's strips on it); 0: no nodes")
	f.IntVar(&mf.nodeCPUs, "node-cpus", 2, "emulated cluster: CPUs per node; ranks beyond them share them (compute phases stretched), and efficiency counts nodes x node-cpus")
	f.DurationVar(&mf.chainWork, "chain-work", 0, "emulated compute per chain per generation (e.g. 2ms), spent asleep and stretched by --node-cpus: a real chain's likelihood costs time, the simulated one almost none")
	f.Float64Var(&mf.baseline, "baseline", 0, "seconds of the serial version of the same run (pario mcmc --io serial's time): report speedup, efficiency and Delta_perf against it")
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
		return launchMcmc(ctx, p.Procs)
	}
	comm, err := rank.Join(ctx, rank.Config{Rendezvous: mf.rendezvous})
	if err != nil {
		return fmt.Errorf("mcmc: join the other ranks: %w", err)
	}
	defer comm.Close()
	sum, err := mcmcRank(ctx, comm, p, mode, lambda, auto, mf)
	if err != nil && ctx.Err() != nil {
		// Interrupted (Ctrl-C, SIGTERM): say so once, not as the
		// collective call each rank was in; pario's launcher says it for
		// its ranks.
		if info.Launcher == rank.LauncherPario {
			return exitStatus{code: 130}
		}
		msg := "mcmc: interrupted"
		if mode != mcmc.IONone {
			msg += "; " + mf.out + " is incomplete"
		}
		return exitStatus{code: 130, msg: msg}
	}
	if err != nil {
		return err
	}
	if comm.Rank() == 0 {
		return sum.Report(cmd.OutOrStdout())
	}
	return nil
}

// parse checks the flags: nothing is written with bad ones.
func (mf *mcmcFlags) parse() (p mcmc.Params, mode mcmc.IO, lambda int64, auto bool, err error) {
	p = mf.p
	if p.Format, err = mcmc.ParseFormat(mf.format); err != nil {
		return
	}
	if err = p.Validate(); err != nil {
		return
	}
	if mode, err = mcmc.ParseIO(mf.io); err != nil {
		return
	}
	if mf.lambda == "auto" {
		auto = true
	} else if lambda, err = strconv.ParseInt(mf.lambda, 10, 64); err != nil || lambda < 1 {
		err = fmt.Errorf("--lambda %q: want a whole number >= 1 or auto", mf.lambda)
		return
	}
	if mf.layout != "" && (mode != mcmc.IOMFG || !isStorePath(mf.out)) {
		err = fmt.Errorf("--layout is for --io mfg into a pario file (-o pario:/path)")
		return
	}
	switch {
	case mf.nodes < 0 || mf.nodes > p.Procs:
		err = fmt.Errorf("--nodes %d: want 0 (none) to --np (%d)", mf.nodes, p.Procs)
	case mf.nodeCPUs < 1:
		err = fmt.Errorf("--node-cpus %d: want at least 1", mf.nodeCPUs)
	case !(mf.baseline >= 0) || mf.baseline > 1e9:
		err = fmt.Errorf("--baseline %v: want seconds >= 0", mf.baseline)
	case mf.chainWork < 0:
		err = fmt.Errorf("--chain-work %v: want a duration >= 0", mf.chainWork)
	}
	return
}

// launchMcmc starts n local rank processes of this command.
func launchMcmc(ctx context.Context, n int) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcmc: find this program to start %d ranks: %w", n, err)
	}
	opts := rank.LaunchOptions{Prefix: func(r int) string {
		if r == 0 {
			return ""
		}
		return fmt.Sprintf("[rank %d] ", r)
	}}
	err = rank.Launch(ctx, n, append([]string{self}, os.Args[1:]...), opts)
	if err != nil && ctx.Err() != nil {
		return exitStatus{code: 130, msg: "mcmc: interrupted"}
	}
	var le *rank.LaunchError
	if errors.As(err, &le) {
		return fmt.Errorf("mcmc: %d of %d ranks failed (their messages are above)", len(le.Failed), n)
	}
	return err
}

// mcmcRank is one rank: the lambda all ranks agree on, the output rank 0
// prepares, the workload, and the summary over all ranks.
func mcmcRank(ctx context.Context, comm *rank.Comm, p mcmc.Params, mode mcmc.IO, lambda int64, auto bool, mf *mcmcFlags) (mcmc.Summary, error) {
	sum := mcmc.Summary{Params: p, Mode: mode}
	var c *client.Client
	servers := 1
	node, share := -1, 0.0
	if mf.nodes > 0 {
		node = mcmc.NodeOfRank(comm.Rank(), p.Procs, mf.nodes)
		share = mcmc.CPUShare(mf.nodeCPUs, mcmc.RanksOnNode(node, p.Procs, mf.nodes))
		sum.CPUs = mf.nodes * mf.nodeCPUs
	}
	if mode == mcmc.IOMFG && isStorePath(mf.out) {
		var err error
		if c, err = connectFrom(ctx, node); err != nil {
			return sum, err
		}
		defer c.Close()
		servers = len(c.Servers())
		if mf.nodes > servers {
			return sum, usageError{fmt.Errorf("--nodes %d: the cluster has %d I/O servers, one per node", mf.nodes, servers)}
		}
	}
	sum.Baseline, sum.Servers, sum.Reached = mf.baseline, 1, 1
	// Eq. 6.1 on this node, the smallest limit over all ranks.
	limit, err := lambdaLimit(p, comm)
	if err != nil {
		return sum, err
	}
	limit, err = agreeMin(ctx, comm, limit)
	if err != nil {
		return sum, err
	}
	if mode == mcmc.IOSerial {
		lambda, auto = 1, false
	}
	if sum.Lambda, err = p.Lambda(lambda, auto, servers, limit, false); err != nil {
		return sum, usageError{err}
	}
	out := mcmc.Output{Mode: mode, Lambda: sum.Lambda, CPUShare: share, ChainWork: mf.chainWork}
	var closeOut func() error
	switch mode {
	case mcmc.IOSerial:
		sum.Target = mf.out
		out.Base, out.Create = mf.out, createBuffered
		if mf.nodes > 0 {
			// The serial files are on node 0's disk: the emulated one.
			cf, err := loadClusterFile(ctx)
			if err != nil {
				return sum, err
			}
			disk := throttle.New(cf.Emulation.DiskRate, 0)
			out.Create = func(name string) (io.WriteCloser, error) {
				w, err := createBuffered(name)
				if err != nil {
					return nil, err
				}
				return throttledFile{ctx, w, disk}, nil
			}
		}
	case mcmc.IOMFG:
		sum.Target = mf.out
		// Rank 0 creates the file; the others open it once it has.
		var w mcmc.ListWriter
		var prepErr error
		if comm.Rank() == 0 {
			w, closeOut, sum.Layout, prepErr = createParallel(ctx, c, p, mf, servers, true)
			if prepErr == nil && c != nil {
				sum.Servers, sum.Reached = servers, mcmc.ServersReached(p, sum.Layout, servers)
			}
		}
		if err := agree(ctx, comm, prepErr); err != nil {
			return sum, err
		}
		if comm.Rank() != 0 {
			if w, closeOut, _, err = createParallel(ctx, c, p, mf, servers, false); err != nil {
				return sum, err
			}
		}
		out.File = w
	}
	began := time.Now()
	st, err := mcmc.Run(ctx, comm, p, out)
	if closeOut != nil {
		err = errors.Join(err, closeOut())
	}
	if err != nil {
		return sum, err
	}
	secs, err := comm.AllreduceFloat64(ctx, time.Since(began).Seconds(), rank.Max)
	if err != nil {
		return sum, err
	}
	sum.Seconds = secs
	if sum.Compute, err = comm.AllreduceFloat64(ctx, st.Compute.Seconds(), rank.Max); err != nil {
		return sum, err
	}
	if sum.IO, err = comm.AllreduceFloat64(ctx, st.IO.Seconds(), rank.Max); err != nil {
		return sum, err
	}
	for _, v := range []struct {
		dst *int64
		v   int64
	}{{&sum.Bytes, st.Bytes}, {&sum.Writes, st.Writes}, {&sum.Extents, st.Extents}, {&sum.Moves, st.Moves}} {
		n, err := comm.AllreduceUint64(ctx, uint64(v.v), rank.Sum)
		if err != nil {
			return sum, err
		}
		*v.dst = int64(n)
	}
	return sum, nil
}

// agree makes every rank fail with rank 0's error, or none.
func agree(ctx context.Context, comm *rank.Comm, err error) error {
	var msg []byte
	if err != nil {
		msg = []byte(err.Error())
	}
	got, berr := comm.Broadcast(ctx, 0, msg)
	switch {
	case err != nil:
		return err
	case berr != nil:
		return berr
	case len(got) > 0:
		return fmt.Errorf("mcmc: rank 0: %s", got)
	}
	return nil
}

func agreeMin(ctx context.Context, comm *rank.Comm, v int64) (int64, error) {
	n, err := comm.AllreduceUint64(ctx, uint64(v), rank.Min)
	return int64(n), err
}

// lambdaLimit is eq. 6.1's limit on this node: the memory available now
// (MemAvailable: what the other processes use and the kernel's reserve
// count as the swap threshold) over the lines of the runs of every rank,
// counted as if all ran here.
func lambdaLimit(p mcmc.Params, comm *rank.Comm) (int64, error) {
	total, avail, err := meminfo()
	if err != nil {
		return mcmc.Unlimited, nil // no /proc/meminfo: no bound known
	}
	ranks := make([]int, comm.Size())
	for k := range ranks {
		ranks[k] = k
	}
	host, _ := os.Hostname()
	node := p.NodeOf(host, total, total-avail, 0, ranks, false)
	return mfg.LambdaLimit([]mfg.Node{node})
}

func meminfo() (total, avail int64, err error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = v << 10
		case "MemAvailable:":
			avail = v << 10
		}
	}
	if total == 0 || avail == 0 {
		return 0, 0, errors.New("no MemTotal or MemAvailable in /proc/meminfo")
	}
	return total, avail, nil
}

// createParallel creates (rank 0) or opens the parallel file.
func createParallel(ctx context.Context, c *client.Client, p mcmc.Params, mf *mcmcFlags, servers int, create bool) (mcmc.ListWriter, func() error, string, error) {
	if !isStorePath(mf.out) {
		flags := os.O_WRONLY
		if create {
			flags |= os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(mf.out, flags, 0o644)
		if err != nil {
			return nil, nil, "", fmt.Errorf("mcmc: %w", err)
		}
		return posixList{f}, f.Close, "", nil
	}
	path := storePath(mf.out)
	if !create {
		f, err := c.Open(ctx, path)
		if err != nil {
			return nil, nil, "", fmt.Errorf("mcmc: %w", err)
		}
		return parioList{f}, nil, "", nil
	}
	var opts client.CreateOptions
	opts.Mode = client.DefaultFileMode
	switch {
	case mf.layout == "varstrip":
		m, err := mfg.New(p.Desc())
		if err != nil {
			return nil, nil, "", err
		}
		strips, placement, err := mfg.Strips(m, p.Config(), mfg.RoundRobin(p.Procs, servers))
		if err != nil {
			return nil, nil, "", usageError{fmt.Errorf("--layout varstrip: %w", err)}
		}
		opts.Layout = dist.Layout{Dist: dist.Varstrip, Params: "strips=" + strips, Datafiles: len(placement)}
		if mf.nodes > 0 {
			// Each rank's bytes on the server of its own node.
			serverOf := make([]int, p.Procs)
			for k := range serverOf {
				serverOf[k] = mcmc.NodeOfRank(k, p.Procs, mf.nodes)
			}
			if strips, placement, err = mfg.Strips(m, p.Config(), serverOf); err != nil {
				return nil, nil, "", usageError{fmt.Errorf("--layout varstrip: %w", err)}
			}
			opts.Layout = dist.Layout{Dist: dist.Varstrip, Params: "strips=" + strips, Datafiles: len(placement), Servers: dist.FormatServers(placement)}
		}
	case mf.layout != "":
		l, err := dist.ParseLayout(mf.layout)
		if err != nil {
			return nil, nil, "", usageError{fmt.Errorf("--layout: %w", err)}
		}
		opts.Layout = l
	}
	f, err := c.Create(ctx, path, opts)
	if err != nil {
		return nil, nil, "", fmt.Errorf("mcmc: %w", err)
	}
	return parioList{f}, nil, f.Attr().Layout.String(), nil
}

type parioList struct{ f *client.File }

func (w parioList) WriteList(ctx context.Context, exts []mfg.Extent, p []byte) error {
	spans := make([]client.Span, len(exts))
	for i, e := range exts {
		spans[i] = client.Span{Off: e.Off, Len: e.Len}
	}
	return w.f.WriteList(ctx, spans, p)
}

// posixList writes a view with one pwrite per extent.
type posixList struct{ f *os.File }

func (w posixList) WriteList(_ context.Context, exts []mfg.Extent, p []byte) error {
	for _, e := range exts {
		if _, err := w.f.WriteAt(p[:e.Len], e.Off); err != nil {
			return err
		}
		p = p[e.Len:]
	}
	return nil
}

// bufferedFile is a serial output file written through stdio-like
// buffering, as MrBayes' fprintf.
type bufferedFile struct {
	*bufio.Writer
	f *os.File
}

func (b bufferedFile) Close() error {
	return errors.Join(b.Flush(), b.f.Close())
}

// throttledFile writes through an emulated disk.
type throttledFile struct {
	ctx  context.Context
	w    io.WriteCloser
	disk *throttle.Bucket
}

func (t throttledFile) Write(p []byte) (int, error) {
	if err := t.disk.Wait(t.ctx, int64(len(p))); err != nil {
		return 0, err
	}
	return t.w.Write(p)
}

func (t throttledFile) Close() error { return t.w.Close() }

func createBuffered(name string) (io.WriteCloser, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return bufferedFile{bufio.NewWriter(f), f}, nil
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

  pario mcmc split pario:/run.mfg --runs 8 --taxa 16 --gens 1000 -o /tmp/run`,
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

func splitMcmc(ctx context.Context, p mcmc.Params, src, out string) error {
	var r io.ReaderAt
	var size int64
	if isStorePath(src) {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		f, err := c.Open(ctx, storePath(src))
		if err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		if size, err = f.Size(ctx); err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		r = f
	} else {
		f, err := os.Open(src)
		if err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		r, size = f, st.Size()
	}
	if err := mcmc.Split(p, r, size, out, createBuffered); err != nil {
		if errors.Is(err, mcmc.ErrInvalid) {
			return fmt.Errorf("mcmc split %s: %w", src, err)
		}
		return err
	}
	return nil
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
			if err := mcmc.Matrix(cmd.OutOrStdout(), p.Taxa, nchar, seed, mb); err != nil {
				return usageError{err}
			}
			return nil
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
