package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/bench/backend"
	_ "github.com/pario/pario/bench/backend/dummy"
	_ "github.com/pario/pario/bench/backend/mmap"
	pariobe "github.com/pario/pario/bench/backend/pario"
	_ "github.com/pario/pario/bench/backend/posix"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/rank"
	"github.com/pario/pario/units"
)

// benchFlags holds what `pario bench` was given, before checking.
type benchFlags struct {
	block, xfer, segs, dataStart int64
	directives                   []string
	collective                   bool
	seed                         int64
	servers                      int
	rendezvous                   string
	firstLast                    bool
	analyze                      bool
	linkRate, diskRate           float64
	keepCluster                  bool
	drivers                      map[string]backend.Driver
}

// The default run (`pario bench` with neither -a nor -o): an embedded
// cluster, 4 ranks, a small write+read test with verification.
const (
	defaultRunTasks = 4
	defaultRunFile  = "pario:/pario-bench.dat"
)

// defaultRunArgs are the default run's settings, each used unless its flag
// is given.
var defaultRunArgs = []struct {
	flag string
	args []string
}{
	{"num-tasks", []string{"-N", "4"}},
	{"block-size", []string{"-b", "16m"}},
	{"transfer-size", []string{"-t", "1m"}},
	{"repetitions", []string{"-i", "2"}},
	{"fsync", []string{"-e"}},
}

func newBenchCommand() *cobra.Command {
	cmd, _, _ := benchCommand()
	cmd.AddCommand(newBenchSweepCommand())
	return cmd
}

// benchCommand is `pario bench` without its subcommands, and where its
// flags land.
func benchCommand() (*cobra.Command, *bench.Options, *benchFlags) {
	o := bench.DefaultOptions()
	bf := &benchFlags{drivers: map[string]backend.Driver{}, block: 1 << 20, xfer: 256 << 10, segs: 1}
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "IOR-compatible parallel I/O benchmark (POSIX, MMAP, DUMMY, pario)",
		Long: `Measure parallel I/O the way IOR does, with IOR's options, timing and
output, on pario's store (-a PARIO), any POSIX file system (-a POSIX, MMAP)
or no storage at all (-a DUMMY).

With neither -a nor -o, pario bench is a self-contained demonstration: it
starts an embedded cluster (a metadata server and --servers I/O servers on
loopback, data in a temporary directory), runs 4 ranks writing and reading
a shared 64 MiB file in 1 MiB transfers twice, verifies every byte, prints
IOR's tables and removes everything it made.

Ranks: under mpirun or srun every process is one rank (rank 0 prints);
otherwise -N n starts n local rank processes. Options follow IOR
(-a -b -t -s -F -N -o -w -r -W -R -k -i -d -e -Y -C -Q -z -D -v -O); sizes
take IOR's binary suffixes k, m, g, t, p (16m = 16 MiB).

  pario bench                                        # the default run
  pario bench -a POSIX -N 4 -b 64m -t 1m -o /tmp/ior.dat -e   # -o: a path on the file system to measure
  pario bench -a PARIO -N 8 -b 4m -t 1m -s 16 --pario.strip-size 1m -o pario:/ior.dat
  pario bench -a POSIX -N 4 -F -C --reorder-shift 1 -w -r -W -o /tmp/t -O summaryFormat=JSON
  mpirun -np 16 pario bench -a POSIX -b 1g -t 4m -o /lustre/ior.dat
  pario bench --analyze -N 10 -b 4m -t 1m --pario.strip-size 1m --pario.servers 10 --link-rate 117e6`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, o, bf)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	// The back ends' options are IOR's module options, which IOR spells in
	// camel case (--mpiio.hintsFileName, --hdf5.noFill): any case names
	// them, so a command line written for IOR works.
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if strings.Contains(name, ".") {
			name = strings.ToLower(name)
		}
		return pflag.NormalizedName(name)
	})
	f.StringVarP(&o.API, "api", "a", o.API, "API for I/O: "+strings.Join(backend.Names(), ", "))
	f.VarP(units.SizeFlag(&bf.block, units.AllowZero), "block-size", "b", "blockSize: contiguous bytes per rank per segment (e.g. 8, 4k, 2m, 1g)")
	f.VarP(units.SizeFlag(&bf.xfer, units.AllowZero), "transfer-size", "t", "transferSize: bytes per I/O call")
	f.VarP(units.SizeFlag(&bf.segs, units.AllowZero), "segments", "s", "segmentCount: number of segments (IOR takes suffixes here too)")
	f.BoolVarP(&o.FilePerProc, "file-per-proc", "F", false, "filePerProc: one file per rank")
	f.IntVarP(&o.NumTasks, "num-tasks", "N", 0, "numTasks: ranks; without mpirun/srun, pario starts this many local rank processes (default 1)")
	f.StringVarP(&o.TestFile, "test-file", "o", o.TestFile, "testFile: path (pario:/path for -a PARIO); with -F, rank r uses PATH.%08d")
	f.BoolVarP(&o.Write, "write", "w", false, "writeFile: timed write phase")
	f.BoolVarP(&o.Read, "read", "r", false, "readFile: timed read phase (none of -w, -r, -W, -R: -w -r)")
	f.BoolVarP(&o.CheckWrite, "check-write", "W", false, "checkWrite: read back and verify after writing (untimed)")
	f.BoolVarP(&o.CheckRead, "check-read", "R", false, "checkRead: read again and verify after the read phase (untimed)")
	f.BoolVarP(&o.KeepFile, "keep-file", "k", false, "keepFile: do not remove the test file(s)")
	f.IntVarP(&o.Repetitions, "repetitions", "i", 1, "repetitions of the test")
	f.IntVarP(&o.InterTestDelay, "inter-test-delay", "d", 0, "interTestDelay: seconds to wait before each write and read phase")
	f.BoolVarP(&o.Fsync, "fsync", "e", false, "fsync at the end of the write phase (inside the timed window)")
	f.BoolVarP(&o.FsyncPerWrite, "fsync-per-write", "Y", false, "fsyncPerWrite: fsync after every write")
	f.BoolVarP(&o.ReorderTasks, "reorder-tasks", "C", false, "reorderTasks: read back another rank's data (rank r reads rank r+Q*shift)")
	f.IntVarP(&o.TaskPerNodeOffset, "task-per-node-offset", "Q", 1, "taskPerNodeOffset for -C, in nodes")
	f.IntVar(&o.ReorderShift, "reorder-shift", 0, "ranks per -Q step (default IOR's: ranks per node when placed in blocks, so -C does nothing on one node)")
	f.BoolVarP(&o.RandomOffset, "random-offset", "z", false, "randomOffset: each transfer once, in random order")
	f.Int64Var(&bf.seed, "random-offset-seed", -1, "seed for -z (default: rank 0's clock)")
	f.IntVarP(&o.Deadline, "deadline", "D", 0, "deadlineForStonewalling: seconds after which a phase stops")
	f.BoolVarP(&o.QuitOnError, "quit-on-error", "q", false, "quitOnError: stop after a verification pass (-W/-R) that found wrong data (default: report it and go on)")
	f.BoolVarP(&o.IntraTestBarriers, "intra-test-barriers", "g", false, "intraTestBarriers: all ranks meet after open and after the transfers (inside the timed window)")
	f.BoolVarP(&o.UseExistingFile, "use-existing-file", "E", false, "useExistingTestFile: write into the existing file instead of removing it first")
	f.Int64VarP(&o.Signature, "signature", "G", 0, "setTimeStampSignature: seed of the written data (a read check needs the writer's value)")
	f.IntVarP(&o.MaxMinutes, "max-time", "T", 0, "maxTimeDuration: minutes after which no further repetition starts (0: no limit)")
	f.CountVarP(&o.Verbose, "verbose", "v", "verbose: more output (repeatable)")
	f.BoolVarP(&bf.collective, "collective", "c", false, "collective I/O (IOR -c): MPIIO, HDF5 and NC4, built with the tag hdf5")
	f.StringArrayVarP(&bf.directives, "directive", "O", nil, "IOR directives key=value[,...] (repeatable): summaryFormat=default|JSON|CSV, summaryFile=F, rankCSV=F, saveRankPerformanceDetailsCSV=F, stoneWallingWearOut=1, ...")
	f.Var(units.SizeFlag(&bf.dataStart, units.AllowZero), "data-start", "bytes before the data in each file (an unaligned container header)")
	f.BoolVar(&o.Strided, "strided", false, "strided mode: one call covers t bytes of the rank's blocks (t may exceed b)")
	f.BoolVar(&bf.firstLast, "first-last", false, "print elbencho-style first-done / last-done figures under each result")
	f.IntVar(&bf.servers, "servers", 4, "I/O servers of the default run's embedded cluster (and of --analyze without a cluster)")
	f.BoolVar(&bf.keepCluster, "keep", false, "default run: keep the embedded cluster's data directory")
	f.StringVar(&bf.rendezvous, "rendezvous", "", "rank 0's address host[:port] under mpirun/srun (default: from the environment)")
	f.BoolVar(&bf.analyze, "analyze", false, "print the pattern's analysis (servers per rank, clients per server, straddling requests, x-OST class, bound) and move no data")
	f.Var(units.RateFlag(&bf.linkRate), "link-rate", "--analyze: usable network rate of one client, bytes/s, decimal (117m = 117MB/s = 117e6; 1Gbit/s)")
	f.Var(units.RateFlag(&bf.diskRate), "disk-rate", "--analyze: rate of one server's disk, bytes/s, decimal (200m = 200MB/s = 200e6)")
	for _, name := range backend.Names() {
		d, _ := backend.New(name)
		bf.drivers[name] = d
		for _, opt := range d.Options() {
			f.Var(opt.Value, opt.Name, opt.Usage)
			if opt.IsBool() {
				f.Lookup(opt.Name).NoOptDefVal = "true"
			}
		}
	}
	return cmd, &o, bf
}

// parseOptions turns the flags into Options, with IOR-like errors.
func parseOptions(cmd *cobra.Command, o bench.Options, bf *benchFlags) (bench.Options, error) {
	return bench.ParseArgs(o, bench.Args{Block: bf.block, Transfer: bf.xfer, Segments: bf.segs, DataStart: bf.dataStart,
		Seed: bf.seed, Directives: bf.directives, Drivers: bf.drivers, Set: cmd.Flags().Changed, Analyze: bf.analyze,
		Collective: bf.collective})
}

func runBench(cmd *cobra.Command, o bench.Options, bf *benchFlags) error {
	ctx := cmd.Context()
	info, err := rank.Detect(rank.Environ())
	if err != nil {
		return usageError{err}
	}
	underLauncher := info.Launcher != rank.LauncherNone
	if isDefaultRun(cmd, bf) {
		if underLauncher {
			return usageError{errors.New("pario bench without -a and -o starts an embedded cluster and its own ranks; under mpirun or srun give -a and -o")}
		}
		return runDefaultBench(cmd, bf)
	}
	o, err = parseOptions(cmd, o, bf)
	if err != nil {
		return usageError{err}
	}
	if bf.analyze {
		return runAnalyze(o, bf)
	}
	drv := bf.drivers[strings.ToUpper(o.API)]

	if !underLauncher {
		tasks := max(o.NumTasks, 1)
		if err := checkOptions(o, tasks, drv); err != nil {
			return err
		}
		if strings.EqualFold(o.API, "PARIO") {
			if _, err := loadClusterFile(ctx); err != nil {
				return err
			}
		}
		if tasks > 1 {
			if err := rank.CheckLaunch(tasks); err != nil {
				return usageError{fmt.Errorf("bench: -N: %w", err)}
			}
			return launchRanks(ctx, tasks, os.Args[1:], nil)
		}
	} else if o.NumTasks > 0 && o.NumTasks < info.Size {
		return usageError{fmt.Errorf("-N %d but the launcher started %d ranks: pario runs one rank per process; drop -N or launch %d", o.NumTasks, info.Size, o.NumTasks)}
	}

	comm, err := rank.Join(ctx, rank.Config{Rendezvous: bf.rendezvous})
	if err != nil {
		return fmt.Errorf("bench: join the other ranks: %w", err)
	}
	defer comm.Close()
	cfg := bench.Config{
		Options: o, Driver: drv, Comm: comm, ClusterFile: clusterFilePath(), OpTimeout: globalOpTimeout,
		Stdout: os.Stdout, CommandLine: commandLine(), Logger: newLogger(), Wide: bf.firstLast,
	}
	_, err = bench.Run(ctx, cfg)
	var ce *bench.CollectiveError
	switch {
	case err == nil:
		return nil
	case interrupted(ctx, err):
		// Interrupted (Ctrl-C, SIGTERM): rank 0 says so once, with what
		// became of the test file, rather than the collective call each
		// rank was in.
		if comm.Rank() != 0 {
			return exitStatus{code: 130}
		}
		msg := "bench: interrupted"
		var c *bench.Cleanup
		if errors.As(err, &c) {
			msg += "; " + c.Note()
		}
		return exitStatus{code: 130, msg: msg}
	case errors.Is(err, bench.ErrUsage):
		return usageError{err}
	case comm.Rank() != 0 && errors.As(err, &ce):
		comm.Close()
		os.Exit(1) // rank 0 reports it
	}
	return err
}

// checkOptions validates before any rank starts (bench.Check); its errors
// are usage errors.
func checkOptions(o bench.Options, tasks int, drv backend.Driver) error {
	if err := bench.Check(o, tasks, drv); err != nil {
		return usageError{err}
	}
	return nil
}

func commandLine() string {
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	return strings.Join(args, " ")
}

// launchRanks re-executes this program as n rank processes with args
// (and extra environment), rank 0's output unprefixed so the report reads
// as IOR's. It returns once all have exited.
func launchRanks(ctx context.Context, n int, args []string, env []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: find this program to start %d ranks: %w", n, err)
	}
	opts := rank.LaunchOptions{
		// Interrupted, the ranks get time to remove their test files.
		StopGrace: benchStopGrace,
		Prefix: func(r int) string {
			if r == 0 {
				return ""
			}
			return fmt.Sprintf("[rank %d] ", r)
		},
	}
	if env != nil {
		opts.Env = append(os.Environ(), env...)
	}
	err = rank.Launch(ctx, n, append([]string{self}, args...), opts)
	var le *rank.LaunchError
	if errors.As(err, &le) {
		if status := interruptedRanks(ctx, le); status != nil {
			return status
		}
		// The ranks have printed why; exit with rank 0's status (2 for bad
		// usage), else 1.
		var ranks []string
		usage := false
		for i, f := range le.Failed {
			// A few, not all: thousands of killed ranks made one line of
			// thousands of numbers.
			if i < 8 {
				ranks = append(ranks, strconv.Itoa(f.Rank))
			} else if i == 8 {
				ranks = append(ranks, "...")
			}
			var ee *exec.ExitError
			if f.Rank == 0 && errors.As(f.Err, &ee) && ee.ExitCode() == 2 {
				usage = true
			}
		}
		err = fmt.Errorf("bench: %d of %d ranks failed (rank %s; their messages are above)", len(le.Failed), n, strings.Join(ranks, ", "))
		if usage {
			return usageError{err}
		}
	}
	return err
}

// benchStopGrace is how long interrupted local ranks may take to remove
// their test files before they are killed: more than bench's own limit
// on the removal.
const benchStopGrace = 20 * time.Second

// interruptedRanks is the exit status of a launch that was interrupted
// (Ctrl-C or SIGTERM at the launcher, or a signal to one rank alone), or
// nil. An interrupted rank 0 has said so, with what became of the test
// file; the launcher speaks when it did not.
func interruptedRanks(ctx context.Context, le *rank.LaunchError) error {
	interrupted := -1
	rank0 := false
	for _, f := range le.Failed {
		var ee *exec.ExitError
		if errors.As(f.Err, &ee) && ee.ExitCode() == 130 {
			if interrupted < 0 {
				interrupted = f.Rank
			}
			rank0 = rank0 || f.Rank == 0
		}
	}
	switch {
	case rank0:
		return exitStatus{code: 130}
	case ctx.Err() != nil:
		return exitStatus{code: 130, msg: "bench: interrupted"}
	case interrupted >= 0:
		return exitStatus{code: 130, msg: fmt.Sprintf("bench: rank %d was interrupted", interrupted)}
	}
	return nil
}

// runDefaultBench is `pario bench` with no target: an embedded cluster in
// a temporary directory, 4 ranks, write + read with verification.
func runDefaultBench(cmd *cobra.Command, bf *benchFlags) error {
	ctx := cmd.Context()
	if bf.servers < 1 {
		return usageError{fmt.Errorf("--servers %d: want at least 1", bf.servers)}
	}
	// The ranks get the explicit form of the default run plus the
	// user's flags.
	idx := slices.Index(os.Args, "bench")
	if idx < 0 {
		return errors.New("bench: cannot find the bench command in the arguments")
	}
	rankArgs, tasks := defaultRankArgs(cmd, os.Args[idx+1:])
	// Bad options fail here, once, before the cluster starts, instead of
	// once per rank.
	if err := checkRankArgs(rankArgs, tasks); err != nil {
		return err
	}
	if err := rank.CheckLaunch(tasks); err != nil {
		return usageError{fmt.Errorf("bench: -N: %w", err)}
	}

	dir, err := os.MkdirTemp("", "pario-bench-")
	if err != nil {
		return err
	}
	if !bf.keepCluster {
		defer os.RemoveAll(dir)
	}
	// The cluster outlives an interrupt until the ranks have stopped
	// (they remove their file through it): Close ends it.
	c, err := cluster.Start(context.WithoutCancel(ctx), cluster.Config{Dir: dir, DataServers: bf.servers, Logger: newLogger().With("component", "embedded cluster")})
	if err != nil {
		return fmt.Errorf("bench: start the embedded cluster: %w", err)
	}
	defer c.Close()
	fmt.Printf("pario bench: embedded cluster with %d I/O servers on loopback (data in %s)\n\n", bf.servers, dir)

	args := append(slices.Clone(os.Args[1:idx]), "--cluster", c.ClusterFile, "bench")
	err = launchRanks(ctx, tasks, append(args, rankArgs...), nil)
	// Failed or interrupted too: the directory goes (or stays) all the
	// same, and a user who saw the run fail wants to know.
	if bf.keepCluster {
		fmt.Printf("\nembedded cluster data kept in %s\n", dir)
	} else {
		fmt.Printf("\nembedded cluster stopped and %s removed\n", dir)
	}
	return err
}

// isDefaultRun reports whether the parsed flags make the default run: no
// target (-a, -o) and no --analyze.
func isDefaultRun(cmd *cobra.Command, bf *benchFlags) bool {
	return !cmd.Flags().Changed("api") && !cmd.Flags().Changed("test-file") && !bf.analyze && !bench.HasDirective(bf.directives, "api", "testfile")
}

// defaultRankArgs are the arguments the default run gives its ranks, for
// the user's arguments args (those after "bench", parsed into cmd), and
// how many ranks it starts.
func defaultRankArgs(cmd *cobra.Command, args []string) ([]string, int) {
	rankArgs := []string{"-a", "PARIO", "-o", defaultRunFile, "--first-last"}
	for _, d := range defaultRunArgs {
		if !cmd.Flags().Changed(d.flag) {
			rankArgs = append(rankArgs, d.args...)
		}
	}
	if !anyChanged(cmd, "write", "read", "check-write", "check-read") {
		rankArgs = append(rankArgs, "-w", "-r", "-W", "-R")
	}
	rankArgs = append(rankArgs, args...)
	tasks := defaultRunTasks
	if cmd.Flags().Changed("num-tasks") {
		n, _ := cmd.Flags().GetInt("num-tasks")
		tasks = max(n, 1)
	}
	return rankArgs, tasks
}

// checkRankArgs parses and checks the bench arguments the ranks of a run
// on this host will get, as each rank will (usage errors).
func checkRankArgs(args []string, tasks int) error {
	cmd, o, bf := benchCommand()
	if err := cmd.ParseFlags(args); err != nil {
		return usageError{err}
	}
	opts, err := parseOptions(cmd, *o, bf)
	if err != nil {
		return usageError{err}
	}
	return checkOptions(opts, tasks, bf.drivers[strings.ToUpper(opts.API)])
}

func anyChanged(cmd *cobra.Command, names ...string) bool {
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// runAnalyze prints bench.Analyze's report for the options and the pario
// layout options, moving no data.
func runAnalyze(o bench.Options, bf *benchFlags) error {
	pd := bf.drivers["PARIO"].(*pariobe.Driver)
	l, err := pd.LayoutOf()
	if err != nil {
		return usageError{err}
	}
	c := bench.AnalyzeConfig{Layout: l, Servers: bf.servers}
	if pd.Servers > 0 {
		c.Servers = max(c.Servers, pd.Servers)
	}
	c.LinkRate, c.DiskRate = bf.linkRate, bf.diskRate
	rep, err := bench.Analyze(o, c)
	if err != nil {
		return usageError{err}
	}
	return rep.WriteText(os.Stdout)
}
