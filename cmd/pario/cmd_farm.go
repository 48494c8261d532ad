package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pario/pario/client"
	"github.com/pario/pario/rank"
	"github.com/pario/pario/template"
	"github.com/pario/pario/template/farm"
	"github.com/pario/pario/units"
)

// envFarmProgress tells rank 0 of a run started by `pario farm -N` to send
// progress lines to the launcher, which shows them on the terminal.
const envFarmProgress = "PARIO_FARM_PROGRESS"

// farmProgressMark starts a progress line from rank 0 to the launcher.
const farmProgressMark = "\x00pario-farm-progress "

type farmFlags struct {
	tasks       int
	in, out     string
	annotations string
	group       int
	block       int64
	layout      string
	rendezvous  string
	quiet       bool
}

func newFarmCommand() *cobra.Command {
	var ff farmFlags
	cmd := &cobra.Command{
		Use:   "farm [flags] -- COMMAND [ARGS...]",
		Short: "Run an unmodified command once per record group of an input, in parallel ranks",
		Long: `Run COMMAND once per segment of the input file (--in), each segment on its
stdin, on -N ranks, and collect what it prints into the output file (--out).
How the ranks share the input and the output comes from an annotation file
(--annotations, else $PARIO_ANNOTATIONS), one line per stream:

  # stream TEMPLATE read-order write-order transaction function=segmentation
  in  NEWSPAPER ro wo b farm=FASTA   # segments: whole FASTA records (or Lines,
                                     # LenPrefix32, or a constant size like 4k)
  out NEWSPAPER rc wo b farm=0       # ordered: byte-identical to one run of
                                     # COMMAND over the whole input

Change wo to wc for output in any order (each run's output whole), or the
out line to "out LOG rc wc b farm=0" to have each rank append its results
itself. No rebuild, no new flags: edit the line and run again. Lines for the
function named after the command (e.g. hmmscan=FASTA) win over farm=.

Records are grouped into segments of at least --block bytes (default: the
input divided by four times the ranks). --group N writes one output file
per group of N ranks (OUT.0, OUT.1, ...; concatenated in order they are
the ordered output), the group's rank 0 gathering and writing it; --group
auto takes the size 'pario tune search --objective farm' found fastest for
this input, annotations, command, --block and number of ranks. Paths
starting with pario: are in the store; a new store output takes --layout,
else its directory's default (which 'pario tune search --apply DIR' sets).
The output appears under its name only when every segment succeeded; a
failing segment is reported with its command's exit status and stderr.

A command that prints something once per run (hmmscan's --tblout header
and its footer with the date) repeats it once per segment: filter it out, as
in the first example, to compare with a sequential run.

Without mpirun or srun, pario starts -N local rank processes; under them,
each launched process is one rank.

  pario farm -N 8 --in queries.fa --out hits.txt --annotations io.ann -- \
      sh -c "hmmscan --cpu 1 --tblout /dev/stdout -o /dev/null Pfam.hmm - | grep -v '^#'"
  pario farm -N 4 --in q.fa --out pario:/hits.tsv --annotations io.ann -- \
      blastp -db nr -outfmt 6
  mpirun -np 64 pario farm --group 16 --in q.fa --out hits --annotations io.ann -- CMD`,
		Annotations: map[string]string{argsPassedOnAnnotation: "yes"},
		Args:        cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFarm(cmd, ff, args)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	// Everything from COMMAND on is COMMAND's, even without "--".
	f.SetInterspersed(false)
	f.IntVarP(&ff.tasks, "num-tasks", "N", 0, "ranks; without mpirun/srun, pario starts this many local rank processes (0 or 1: one rank, this process, as IOR's -N 0); under them, 0 takes the launched count")
	f.StringVar(&ff.in, "in", "", "input file (pario:/path in the store)")
	f.StringVar(&ff.out, "out", "", "output file (pario:/path in the store); with --group, the prefix of OUT.0, OUT.1, ...")
	f.StringVar(&ff.annotations, "annotations", "", "annotation file (default $"+template.EnvAnnotations+")")
	f.Var(farmGroupFlag{&ff.group}, "group", "ranks per output file: one file per group of this many ranks (default: one file); auto: the fastest 'pario tune search --objective farm' measured")
	f.Var(units.SizeFlag(&ff.block, units.AllowZero), "block", "input bytes per run of the command, whole records (e.g. 64k; default the input / (4 x ranks))")
	f.StringVar(&ff.layout, "layout", "", "layout of a store output, e.g. simple_stripe:strip_size=1m (default: its directory's)")
	f.StringVar(&ff.rendezvous, "rendezvous", "", "rank 0's address host[:port] under mpirun/srun (default: from the environment)")
	f.BoolVarP(&ff.quiet, "quiet", "q", false, "no progress or summary")
	return cmd
}

func runFarm(cmd *cobra.Command, ff farmFlags, argv []string) error {
	ctx := cmd.Context()
	if ff.in == "" || ff.out == "" {
		return usageError{errors.New("farm: give the input (--in) and the output (--out)")}
	}
	if ff.tasks < 0 {
		return usageError{errors.New("farm: -N and --group take a number of ranks")}
	}
	layout, err := parseOptionalLayout(ff.layout)
	if err != nil {
		return usageError{err}
	}
	if ff.layout != "" && !isStorePath(ff.out) {
		return usageError{fmt.Errorf("farm: --layout is for an output in the store (--out pario:/path), not %s", ff.out)}
	}
	if ff.rendezvous != "" {
		if err := rank.CheckRendezvous(ff.rendezvous); err != nil {
			return usageError{fmt.Errorf("farm: --rendezvous: %w", err)}
		}
	}
	af, err := template.LoadAnnotations(ff.annotations)
	if err != nil {
		return usageError{err}
	}
	if _, _, err := farm.Streams(af, argv); err != nil {
		return usageError{err}
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return usageError{fmt.Errorf("farm: command %q: %w", argv[0], err)}
	}
	info, err := rank.Detect(rank.Environ())
	if err != nil {
		return usageError{err}
	}
	ranks := max(ff.tasks, 1)
	if info.Launcher != rank.LauncherNone {
		ranks = info.Size
	}
	if ff.group == farmGroupAuto {
		if ff.group, err = autoFarmGroup(ff, argv, ranks); err != nil {
			return usageError{err}
		}
		if info.Launcher == rank.LauncherNone && !ff.quiet {
			fmt.Fprintf(os.Stderr, "farm: --group auto: %d (the fastest measured by pario tune search)\n", ff.group)
		}
	}
	tty := term.IsTerminal(int(os.Stdout.Fd())) && term.IsTerminal(int(os.Stderr.Fd())) && !ff.quiet
	if info.Launcher != rank.LauncherNone && ff.tasks > 0 && ff.tasks != info.Size {
		return usageError{fmt.Errorf("farm: -N %d but the launcher started %d ranks: drop -N or launch %d", ff.tasks, info.Size, ff.tasks)}
	}
	launch := info.Launcher == rank.LauncherNone && ff.tasks > 1
	if launch {
		if err := rank.CheckLaunch(ff.tasks); err != nil {
			return usageError{fmt.Errorf("farm: -N: %w", err)}
		}
	}
	if err := checkFarmOutputs(ctx, ff, ranks); err != nil {
		return err
	}
	if launch {
		return launchFarm(ctx, ff.tasks, tty)
	}

	comm, err := rank.Join(ctx, rank.Config{Rendezvous: ff.rendezvous})
	if err != nil {
		return fmt.Errorf("farm: join the other ranks: %w", err)
	}
	defer comm.Close()
	cfg := farm.Config{Comm: comm, Annotations: af, In: ff.in, Out: ff.out, InFS: farm.Local{}, OutFS: farm.Local{},
		Argv: argv, Block: ff.block, Group: ff.group}
	if isStorePath(ff.in) || isStorePath(ff.out) {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		pfs := farm.Pario{Client: c, Create: client.CreateOptions{Mode: client.DefaultFileMode, Layout: layout}}
		if isStorePath(ff.in) {
			cfg.In, cfg.InFS = storePath(ff.in), pfs
		}
		if isStorePath(ff.out) {
			cfg.Out, cfg.OutFS = storePath(ff.out), pfs
		}
	}
	var show *progressLine
	if comm.Rank() == 0 && !ff.quiet {
		switch {
		case os.Getenv(envFarmProgress) == "1":
			// The launcher draws it; a line at a time gets through.
			cfg.Progress = func(p farm.Progress) { fmt.Fprintf(os.Stderr, "%s%s\n", farmProgressMark, p) }
		case tty:
			show = &progressLine{w: os.Stderr}
			cfg.Progress = func(p farm.Progress) { show.set(p.String()) }
		}
	}
	start := time.Now()
	res, err := farm.Run(ctx, cfg)
	if show != nil {
		show.clear()
	}
	if ctx.Err() != nil && err != nil {
		// Interrupted: the temporary output is gone; the launcher, if
		// pario's, says so once for all ranks.
		if info.Launcher == rank.LauncherPario {
			return exitStatus{code: 130}
		}
		return exitStatus{code: 130, msg: "farm: interrupted; " + ff.out + " not written"}
	}
	if errors.Is(err, farm.ErrFailedElsewhere) {
		return exitStatus{code: 1} // rank 0 says why
	}
	if err != nil {
		return err
	}
	if comm.Rank() == 0 && !ff.quiet {
		fmt.Fprintf(os.Stderr, "farm: %d runs of %s over %s on %d ranks in %.2fs: wrote %s\n",
			res.Segments, argv[0], units.FormatBytes(res.Bytes), comm.Size(), time.Since(start).Seconds(), strings.Join(res.Outputs, ", "))
	}
	return nil
}

// checkFarmOutputs refuses, before any rank starts, an output that is a
// directory or whose directory is missing (farm.CheckOutputs).
func checkFarmOutputs(ctx context.Context, ff farmFlags, ranks int) error {
	var fsys farm.FS = farm.Local{}
	out := ff.out
	if isStorePath(out) {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		fsys, out = farm.Pario{Client: c}, storePath(out)
	}
	err := farm.CheckOutputs(ctx, fsys, out, ranks, ff.group)
	var de *farm.OutputIsDirError
	var dde *farm.OutputDirError
	if errors.As(err, &de) || errors.As(err, &dde) {
		return usageError{fmt.Errorf("farm: --out: %w", err)}
	}
	if err != nil {
		return fmt.Errorf("farm: --out %s: %w", ff.out, err)
	}
	return nil
}

// launchFarm runs this command again as n local rank processes; rank 0
// speaks unprefixed, and its progress lines are drawn in place on a
// terminal.
func launchFarm(ctx context.Context, n int, tty bool) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("farm: find this program to start %d ranks: %w", n, err)
	}
	show := &progressLine{w: os.Stderr}
	opts := rank.LaunchOptions{
		Prefix: func(r int) string {
			if r == 0 {
				return ""
			}
			return fmt.Sprintf("[rank %d] ", r)
		},
		Stderr: farmStderr{show},
	}
	if tty {
		opts.Env = append(os.Environ(), envFarmProgress+"=1")
	}
	// Interrupted (Ctrl-C at the terminal reaches the launcher alone, the
	// ranks being in process groups of their own, as does kill -INT of
	// it), the ranks get SIGTERM and time to stop their commands, whole
	// process groups, and remove their temporary output before they are
	// killed.
	opts.StopGrace = farmStopGrace
	err = rank.Launch(ctx, n, append([]string{self}, os.Args[1:]...), opts)
	show.clear()
	if ctx.Err() != nil && err != nil {
		return exitStatus{code: 130, msg: "farm: interrupted; its output was not written"}
	}
	var le *rank.LaunchError
	if errors.As(err, &le) {
		// The ranks have said why (rank 0 for the run); exit with rank 0's
		// status.
		for _, f := range le.Failed {
			var ee *exec.ExitError
			if f.Rank == 0 && errors.As(f.Err, &ee) && ee.ExitCode() > 0 {
				return exitStatus{code: ee.ExitCode()}
			}
		}
		return exitStatus{code: 1, msg: err.Error()}
	}
	return err
}

// farmStopGrace is how long interrupted local ranks may take to stop.
const farmStopGrace = 5 * time.Second

// farmStderr passes the ranks' stderr lines through, drawing rank 0's
// progress lines in place.
type farmStderr struct{ show *progressLine }

func (w farmStderr) Write(p []byte) (int, error) {
	if rest, ok := bytes.CutPrefix(p, []byte(farmProgressMark)); ok {
		w.show.set(strings.TrimRight(string(rest), "\n"))
		return len(p), nil
	}
	w.show.print(p)
	return len(p), nil
}

// progressLine is one line of a terminal redrawn in place; other output
// clears it first.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

func (l *progressLine) set(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "\r%s\x1b[K", s)
	l.shown = true
}

func (l *progressLine) print(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
	l.w.Write(p)
}

func (l *progressLine) clear() { l.print(nil) }
