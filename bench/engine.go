package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/internal/atomicfile"
	"github.com/pario/pario/pattern"
	"github.com/pario/pario/rank"
)

// Comm is what the engine needs from the ranks of a run; *rank.Comm (from
// rank.Join, or rank.NewLocal for goroutine ranks) has it.
type Comm interface {
	Rank() int
	Size() int
	Barrier(ctx context.Context) error
	AllreduceUint64(ctx context.Context, v uint64, op rank.Op) (uint64, error)
	Broadcast(ctx context.Context, root int, data []byte) ([]byte, error)
	Gather(ctx context.Context, root int, data []byte) ([][]byte, error)
}

var _ Comm = (*rank.Comm)(nil)

// Config is one rank's view of a benchmark run.
type Config struct {
	Options Options
	// Driver is the back end with its settings; nil means a fresh driver
	// for Options.API with default settings.
	Driver backend.Driver
	Comm   Comm
	// ClusterFile and OpTimeout are passed to back ends that talk to a
	// pario cluster (backend.Env). OpTimeout (default a minute) also
	// bounds how long a rank whose back end failed waits for the others
	// to agree on it before a backend.Aborter ends the job.
	ClusterFile string
	OpTimeout   time.Duration
	// Stdout receives rank 0's report (default os.Stdout); other ranks
	// print nothing.
	Stdout io.Writer
	// Stderr receives rank 0's warnings, as IOR's "WARNING: ..." lines
	// (default os.Stderr).
	Stderr io.Writer
	// CommandLine is shown in the header.
	CommandLine string
	Logger      *slog.Logger
	// Wide adds the first-done / last-done line under each result of the
	// text report (the default run shows it).
	Wide bool
	// Clock is rank 0's clock for -T (default time.Now); other ranks
	// never read it.
	Clock func() time.Time
}

// Report is what a run measured; Run returns it on rank 0.
type Report struct {
	Header    Header
	Results   []Result
	Summaries []Summary
	Verify    []VerifyReport
}

// ErrVerify is matched by the error Run returns when -W or -R found wrong
// data; the report is still complete.
var ErrVerify = errors.New("bench: data verification failed")

// CollectiveError is an error every rank returns alike (another rank
// failed, or rank 0 decided so); only rank 0 needs to print it.
type CollectiveError struct{ Msg string }

func (e *CollectiveError) Error() string { return e.Msg }

// Run runs one IOR test on this rank; every rank of cfg.Comm must call it
// with the same options. Rank 0 prints the report and returns it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	o := cfg.Options
	o.Normalize()
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &runner{cfg: cfg, o: o, comm: cfg.Comm, rank: cfg.Comm.Rank(), tasks: cfg.Comm.Size()}
	return r.run(ctx)
}

type runner struct {
	cfg   Config
	o     Options
	comm  Comm
	rank  int
	tasks int
	p     pattern.IOR
	drv   backend.Driver
	be    backend.Backend
	base  int64 // the common epoch, ns (rank 0's wall clock)

	noData bool
	wbuf   []byte // write buffer / expected data
	rbuf   []byte // read buffer

	rep    reporter // rank 0
	report *Report
	csvs   []*atomicfile.File // summaryFile and the per-rank CSVs: renamed into place at the end

	// created: this rank's test file (rank 0's, or each rank's own with
	// -F), the one it removes at the end of a repetition, was made by
	// this run's write phase and is still there.
	created bool

	written int64 // transfers this rank wrote in this repetition (stonewall limit)
	limited bool  // reads stop at written (a stonewalled write, or a status file)
	pairs   int64 // rank 0: the most transfers a rank wrote in the last write phase
	verrs   int64 // verification errors so far (rank 0)
}

func (r *runner) now() float64 { return float64(time.Now().UnixNano()-r.base) / 1e9 }

// defaultAbortGrace is how long a failed rank of a backend.Aborter waits
// for the others to agree on its failure without Config.OpTimeout.
const defaultAbortGrace = time.Minute

// watch guards a failure (err not nil) of a back end that can leave the
// other ranks inside a collective call of its library (backend.Aborter):
// unless stop is called first, after the grace this rank prints err and
// ends the job. The other ranks then get no report from the engine, but
// no rank hangs. Without a failure, or with another back end, stop does
// nothing.
func (r *runner) watch(err error) (stop func()) {
	ab, ok := r.be.(backend.Aborter)
	if err == nil || !ok {
		return func() {}
	}
	grace := r.cfg.OpTimeout
	if grace <= 0 {
		grace = defaultAbortGrace
	}
	t := time.AfterFunc(grace, func() {
		fmt.Fprintf(os.Stderr, "pario: rank %d: %v\npario: rank %d: the other ranks did not agree on it within %v (one may be waiting in a collective call of the library that this rank will not make): ending the job\n",
			r.rank, err, r.rank, grace)
		ab.Abort(1)
	})
	return func() { t.Stop() }
}

// agree turns a local error into a collective outcome: every rank learns
// whether any failed, and rank 0's message names the ranks.
func (r *runner) agree(ctx context.Context, what string, err error) error {
	var msg []byte
	if err != nil {
		msg = []byte(err.Error())
	}
	all, gerr := r.comm.Gather(ctx, 0, msg)
	if gerr != nil {
		return errors.Join(err, gerr)
	}
	var out []byte
	if r.rank == 0 {
		var parts []string
		seen := map[string][]int{}
		var order []string
		for i, m := range all {
			if len(m) == 0 {
				continue
			}
			if _, ok := seen[string(m)]; !ok {
				order = append(order, string(m))
			}
			seen[string(m)] = append(seen[string(m)], i)
		}
		for _, m := range order {
			if len(all) == 1 {
				parts = append(parts, m)
			} else {
				parts = append(parts, fmt.Sprintf("%s: %s", rankList(seen[m]), m))
			}
		}
		if len(parts) > 0 {
			msg := strings.Join(parts, "; ")
			if what != "" {
				msg = what + ": " + msg
			}
			out = []byte(msg)
		}
	}
	out, berr := r.comm.Broadcast(ctx, 0, out)
	if berr != nil {
		return errors.Join(err, berr)
	}
	if len(out) > 0 {
		return &CollectiveError{Msg: string(out)}
	}
	return nil
}

func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	s := make([]string, len(ranks))
	for i, x := range ranks {
		s[i] = fmt.Sprint(x)
	}
	return "ranks " + strings.Join(s, ",")
}

func (r *runner) run(ctx context.Context) (_ *Report, err error) {
	o := &r.o
	// The common epoch and the placement of ranks on hosts.
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
	eb, err := r.comm.Broadcast(ctx, 0, b[:])
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r.base = int64(binary.LittleEndian.Uint64(eb))
	host, _ := os.Hostname()
	hosts, err := r.comm.Gather(ctx, 0, []byte(host))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	place := make([]byte, 24)
	if r.rank == 0 {
		nodes, node0, shift := placement(hosts)
		binary.LittleEndian.PutUint64(place, uint64(nodes))
		binary.LittleEndian.PutUint64(place[8:], uint64(node0))
		binary.LittleEndian.PutUint64(place[16:], uint64(shift))
	}
	if place, err = r.comm.Broadcast(ctx, 0, place); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	nodes, node0, shift := int(binary.LittleEndian.Uint64(place)), int(binary.LittleEndian.Uint64(place[8:])), int(binary.LittleEndian.Uint64(place[16:]))

	// Options, pattern, random seed.
	verr := o.Validate(r.tasks)
	if verr == nil && o.RandomOffset && o.RandomSeed < 0 {
		binary.LittleEndian.PutUint64(b[:], uint64(time.Now().Unix()&0x7fffffff))
		sb, err := r.comm.Broadcast(ctx, 0, b[:])
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		o.RandomSeed = int64(binary.LittleEndian.Uint64(sb))
	}
	r.p = o.Pattern(r.tasks, shift)
	if verr == nil {
		verr = r.p.Validate()
	}
	r.drv = r.cfg.Driver
	if verr == nil && r.drv == nil {
		r.drv, verr = backend.New(o.API)
	}
	params := backend.Params{
		Rank: r.rank, Tasks: r.tasks, FilePerProc: o.FilePerProc, TransferSize: o.TransferSize, BlockSize: o.BlockSize,
		Segments: o.Segments, FsyncPerWrite: o.FsyncPerWrite, Random: o.RandomOffset, Strided: o.Strided, FileSize: r.p.FileSize(),
	}
	if verr == nil {
		if verr = r.drv.Validate(params); verr != nil {
			verr = &usageErr{verr.Error()}
		}
	}
	if verr == nil {
		// Under a launcher nothing checked this host's memory before the
		// ranks started; node0 ranks share rank 0's host.
		verr = CheckMemory(*o, node0, AvailableMemory())
	}
	if err := r.agree(ctx, "invalid options", verr); err != nil {
		if verr != nil {
			return nil, verr
		}
		return nil, err
	}

	// The back end, and whether the test file can be used.
	env := backend.Env{Params: params, Barrier: r.comm.Barrier, ClusterFile: r.cfg.ClusterFile, OpTimeout: r.cfg.OpTimeout, Logger: r.cfg.Logger}
	be, oerr := r.drv.Open(ctx, env)
	if err := r.agree(ctx, "", oerr); err != nil {
		if be != nil {
			be.Close()
		}
		return nil, err
	}
	r.be = be
	defer func() {
		// Joined only when it failed: a join of one error would hide
		// the cleanup's note, joined below, inside one multi-line error.
		if cerr := r.be.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	defer func() {
		if err != nil {
			err = r.cleanup(ctx, err)
		}
	}()
	if nd, ok := be.(backend.NoData); ok {
		r.noData = nd.MovesNoData()
	}
	var cerr error
	if ch, ok := be.(backend.Checker); ok && (o.FilePerProc || r.rank == 0) {
		name := r.fileName(pattern.Read)
		if o.Write {
			name = r.fileName(pattern.Write)
		}
		cerr = ch.Check(ctx, name, o.Write)
	}
	if err := r.agree(ctx, "", cerr); err != nil {
		return nil, err
	}

	r.wbuf = alignedBuffer(int(o.TransferSize))
	r.rbuf = alignedBuffer(int(o.TransferSize))

	if r.rank == 0 {
		if err := r.openReports(ctx, nodes, node0); err != nil {
			return nil, err
		}
		defer func() {
			// A failed or interrupted run leaves no partial report
			// under the names asked for.
			for _, c := range r.csvs {
				if err == nil {
					err = c.Commit()
				} else {
					c.Abort()
				}
			}
		}()
	}
	clock := r.cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	var began time.Time
	if r.rank == 0 {
		began = clock()
	}
	for rep := 0; rep < o.Repetitions; rep++ {
		if rep > 0 && o.MaxMinutes > 0 {
			var elapsed time.Duration
			if r.rank == 0 {
				elapsed = clock().Sub(began)
			}
			stop, err := r.timeIsUp(ctx, elapsed)
			if err != nil {
				return nil, err
			}
			if stop {
				if r.rank == 0 {
					fmt.Fprintf(r.cfg.Stderr, "WARNING: maximum time (-T %d minutes) reached: stopping after %d of %d repetitions\n", o.MaxMinutes, rep, o.Repetitions)
				}
				break
			}
		}
		if err := r.repetition(ctx, rep); err != nil {
			return nil, err
		}
	}
	if r.rank != 0 {
		return nil, nil
	}
	r.finishReports()
	if o.WearOut && o.Write && o.StoneWallStatusFile != "" {
		// As IOR: the last repetition's count, as text.
		if err := os.WriteFile(o.StoneWallStatusFile, []byte(strconv.FormatInt(r.pairs, 10)), 0o644); err != nil {
			return r.report, fmt.Errorf("bench: stoneWallingStatusFile: %w", err)
		}
	}
	if ferr := r.rep.finish(timeString(time.Now())); ferr != nil {
		return r.report, fmt.Errorf("bench: write report: %w", ferr)
	}
	if r.verrs > 0 {
		return r.report, fmt.Errorf("%w: %d transfer(s) with wrong data (see the report)", ErrVerify, r.verrs)
	}
	return r.report, nil
}

// loadStoneWallStatus reads the transfers per rank a stonewalled write run
// stored (rank 0 reads, everyone gets it) and limits this run's reads to
// it. A missing or unreadable file limits nothing, with a warning, as IOR.
func (r *runner) loadStoneWallStatus(ctx context.Context) error {
	var b [8]byte
	n := int64(-1)
	if r.rank == 0 {
		data, err := os.ReadFile(r.o.StoneWallStatusFile)
		if err == nil {
			n, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		}
		if err != nil || n < 0 {
			fmt.Fprintf(r.cfg.Stderr, "WARNING: Could not read back the stonewalling status from %s: %v\n", r.o.StoneWallStatusFile, err)
			n = -1
		}
		binary.LittleEndian.PutUint64(b[:], uint64(n))
	}
	got, err := r.comm.Broadcast(ctx, 0, b[:])
	if err != nil {
		return err
	}
	if len(got) != 8 {
		return fmt.Errorf("bench: stonewalling status: broadcast of %d bytes", len(got))
	}
	if n = int64(binary.LittleEndian.Uint64(got)); n >= 0 {
		r.written, r.limited = n, true
	}
	return nil
}

// timeIsUp is -T: rank 0's clock (elapsed since the first repetition)
// decides for every rank whether another repetition may start. IOR also
// skips a repetition's read phase once the time is up; pario always
// finishes the repetition it started.
func (r *runner) timeIsUp(ctx context.Context, elapsed time.Duration) (bool, error) {
	var b [1]byte
	if r.rank == 0 && elapsed >= time.Duration(r.o.MaxMinutes)*time.Minute {
		b[0] = 1
	}
	got, err := r.comm.Broadcast(ctx, 0, b[:])
	if err != nil {
		return false, err
	}
	return len(got) == 1 && got[0] == 1, nil
}

// placement finds the number of hosts, the ranks on rank 0's host, and
// IOR's -C shift: 1 when rank 1 runs on another host than rank 0 (ranks
// dealt round-robin), else the ranks per node (blocks).
func placement(hosts [][]byte) (nodes, node0, shift int) {
	seen := map[string]bool{}
	for _, h := range hosts {
		seen[string(h)] = true
		if bytes.Equal(h, hosts[0]) {
			node0++
		}
	}
	nodes = len(seen)
	shift = 1
	if len(hosts) > 1 && bytes.Equal(hosts[0], hosts[1]) {
		shift = node0
	}
	return nodes, node0, shift
}

// alignedBuffer returns n bytes aligned to 4 KiB (O_DIRECT needs it).
func alignedBuffer(n int) []byte {
	const align = 4096
	b := make([]byte, n+align)
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (align - 1))
	if off != 0 {
		off = align - off
	}
	return b[off : off+n : off+n]
}

func timeString(t time.Time) string { return t.Format("Mon Jan _2 15:04:05 2006") }

// fileName is the file rank moves in phase ph: the test file, or with -F
// the target rank's file "testFile.%08d", as IOR names them.
func (r *runner) fileName(ph pattern.Phase) string {
	if !r.o.FilePerProc {
		return r.o.TestFile
	}
	return fmt.Sprintf("%s.%08d", r.o.TestFile, r.p.TargetRank(r.rank, ph))
}

func (r *runner) openReports(ctx context.Context, nodes, node0 int) error {
	o := r.o
	h := Header{
		Began: timeString(time.Now()), CommandLine: r.cfg.CommandLine, Options: o, Pattern: r.p,
		API: r.drv.Name(), Tasks: r.tasks, Nodes: nodes, TasksNode0: node0, NoData: r.noData,
		Warnings: r.p.Warnings(),
	}
	host, _ := os.Hostname()
	h.Machine = runtime.GOOS + " " + host
	h.Machine = strings.ToUpper(h.Machine[:1]) + h.Machine[1:]
	h.Platform = fmt.Sprintf("%s(%s)", host, strings.ToUpper(runtime.GOOS[:1])+runtime.GOOS[1:])
	h.StartTime = h.Began
	h.Path = o.TestFile
	if sf, ok := r.be.(backend.StatFSer); ok {
		if fs, err := sf.StatFS(ctx, o.TestFile); err == nil {
			h.FS = &fs
		}
	}
	if d, ok := r.be.(backend.Describer); ok {
		h.Describe = d.Describe()
	}
	if o.NumTasks > r.tasks {
		h.Warnings = append(h.Warnings, fmt.Sprintf("More tasks requested (%d) than available (%d), running with %d tasks.", o.NumTasks, r.tasks, r.tasks))
	}
	r.report = &Report{Header: h}

	text := &textReporter{w: r.cfg.Stdout, verbose: o.Verbose, wide: r.cfg.Wide || o.Verbose > 0}
	var main reporter
	switch o.SummaryFormat {
	case FormatJSON:
		main = &jsonReporter{w: r.cfg.Stdout, verbose: o.Verbose}
	case FormatCSV:
		main = &csvReporter{w: r.cfg.Stdout}
	default:
		main = text
	}
	if o.SummaryFile != "" {
		f, err := atomicfile.Create(o.SummaryFile)
		if err != nil {
			return fmt.Errorf("-O summaryFile: %w", err)
		}
		r.csvs = append(r.csvs, f)
		switch m := main.(type) {
		case *jsonReporter:
			m.w = f
		case *csvReporter:
			m.w = f
		case *textReporter:
			m.w = f
		}
		if o.SummaryFormat == FormatDefault {
			fmt.Fprintf(r.cfg.Stdout, "Writing output to %s\n", o.SummaryFile)
			r.rep = main
		} else {
			// Text on stdout and the chosen format in the file.
			r.rep = multiReporter{text, main}
		}
	} else {
		r.rep = main
	}
	var extra []interface{ result(Result) }
	for _, c := range []struct {
		path  string
		start func(io.Writer) interface{ result(Result) }
	}{
		{o.RankCSV, func(w io.Writer) interface{ result(Result) } { c := &rankCSV{w}; c.start(); return c }},
		{o.IORRankCSV, func(w io.Writer) interface{ result(Result) } { c := &iorRankCSV{w}; c.start(); return c }},
	} {
		if c.path == "" {
			continue
		}
		f, err := atomicfile.Create(c.path)
		if err != nil {
			return fmt.Errorf("per-rank CSV: %w", err)
		}
		r.csvs = append(r.csvs, f)
		extra = append(extra, c.start(f))
	}
	if len(extra) > 0 {
		r.rep = &csvTee{reporter: r.rep, extra: extra}
	}
	r.rep.header(&r.report.Header)
	return nil
}

// csvTee adds per-rank CSV files to a reporter.
type csvTee struct {
	reporter
	extra []interface{ result(Result) }
}

func (c *csvTee) result(x Result) {
	c.reporter.result(x)
	for _, e := range c.extra {
		e.result(x)
	}
}

func (r *runner) finishReports() {
	var ws, rs []Result
	for _, x := range r.report.Results {
		if x.Access == "write" {
			ws = append(ws, x)
		} else {
			rs = append(rs, x)
		}
	}
	if len(ws) > 0 {
		r.report.Summaries = append(r.report.Summaries, Summarize("write", ws, r.o.TransferSize))
	}
	if len(rs) > 0 {
		r.report.Summaries = append(r.report.Summaries, Summarize("read", rs, r.o.TransferSize))
	}
	r.rep.summary(r.report.Summaries, &r.report.Header)
}

func delay(ctx context.Context, secs int) error {
	if secs <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(secs) * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// repetition runs the phases of one repetition, as IOR's TestIoSys.
func (r *runner) repetition(ctx context.Context, rep int) error {
	o := &r.o
	r.written, r.limited = -1, o.Deadline > 0
	if (o.Read || o.CheckRead) && !o.Write && o.StoneWallStatusFile != "" {
		if err := r.loadStoneWallStatus(ctx); err != nil {
			return err
		}
	}
	if o.Write {
		if err := r.timed(ctx, rep, pattern.Write); err != nil {
			return err
		}
	}
	if o.CheckWrite {
		if err := r.verifyPass(ctx, rep, pattern.WriteCheck, "write check"); err != nil {
			return err
		}
	}
	if o.Read || o.CheckRead {
		if err := r.timed(ctx, rep, pattern.Read); err != nil {
			return err
		}
	}
	if o.CheckRead {
		if err := r.verifyPass(ctx, rep, pattern.Read, "read check"); err != nil {
			return err
		}
	}
	if !o.KeepFile {
		start := r.now()
		if err := r.comm.Barrier(ctx); err != nil {
			return err
		}
		var rerr error
		if o.FilePerProc || r.rank == 0 {
			rerr = r.be.Remove(ctx, r.fileName(pattern.Write))
		}
		if err := r.agree(ctx, "remove", rerr); err != nil {
			return err
		}
		r.created = false
		if r.rank == 0 {
			r.rep.remove(r.now()-start, rep)
		}
	} else if err := r.comm.Barrier(ctx); err != nil {
		return err
	}
	return nil
}

// intraTestBarrier is IOR's -g barrier, a no-op without it.
func (r *runner) intraTestBarrier(ctx context.Context) error {
	if !r.o.IntraTestBarriers {
		return nil
	}
	return r.comm.Barrier(ctx)
}

// timed runs one timed phase (write or read) and reports it.
func (r *runner) timed(ctx context.Context, rep int, ph pattern.Phase) error {
	o := &r.o
	access := "read"
	if ph == pattern.Write {
		access = "write"
	}
	name := r.fileName(ph)
	// Untimed preparation: delay, remove the old file, drop the cache.
	perr := delay(ctx, o.InterTestDelay)
	mine := ph == pattern.Write && (o.FilePerProc || r.rank == 0)
	if perr == nil && mine && !o.UseExistingFile {
		perr = r.be.Remove(ctx, name)
	}
	existed := false
	if perr == nil && mine && o.UseExistingFile {
		// -E writes into a file that may have been there before the run,
		// which a failed run leaves alone.
		_, serr := r.be.Size(ctx, name)
		existed = serr == nil
	}
	if perr == nil && ph == pattern.Read {
		if d, ok := r.be.(backend.CacheDropper); ok && (o.FilePerProc || r.rank == 0) {
			perr = d.DropCache(ctx, name)
		}
	}
	if err := r.agree(ctx, "prepare "+access, perr); err != nil {
		return err
	}
	if err := r.comm.Barrier(ctx); err != nil {
		return err
	}

	var rec RankRecord
	rec.Rank = int64(r.rank)
	var f backend.File
	var ioerr error
	if mine && !existed {
		r.created = true
	}
	rec.T[OpenStart] = r.now()
	if ph == pattern.Write {
		f, ioerr = r.be.Create(ctx, name)
	} else {
		f, ioerr = r.be.Open(ctx, name)
	}
	rec.T[OpenStop] = r.now()
	// -g: every rank meets the others after opening and after its
	// transfers, as IOR's intraTestBarriers (inside the window); a rank
	// whose open failed meets them too, so nobody waits for it.
	berr := r.intraTestBarrier(ctx)
	rec.T[IOStart] = r.now()
	if ioerr == nil && berr == nil {
		mode := modeRead
		if ph == pattern.Write {
			mode = modeWrite
		}
		limit := int64(-1)
		if ph != pattern.Write && r.limited {
			limit = r.written
		}
		ioerr = r.loop(ctx, f, ph, mode, rep, limit, &rec, nil)
		if ioerr == nil && ph == pattern.Write && o.Fsync {
			ioerr = f.Sync(ctx)
		}
	}
	// From a failure on, every call here (the barrier, a collective
	// close) may wait for a rank the failure left inside the library.
	stop := r.watch(ioerr)
	defer func() { stop() }()
	rec.T[IOStop] = r.now()
	if berr == nil {
		berr = r.intraTestBarrier(ctx)
	}
	rec.T[CloseStart] = r.now()
	if f != nil {
		if cerr := f.Close(ctx); ioerr == nil {
			ioerr = cerr
			stop = r.watch(ioerr)
		}
	}
	rec.T[CloseStop] = r.now()
	if berr != nil {
		return berr
	}
	if ph == pattern.Write {
		r.written = rec.Transfers
		if err := r.comm.Barrier(ctx); err != nil {
			return err
		}
	}
	if ioerr != nil {
		ioerr = fmt.Errorf("%s %s: %w", access, name, ioerr)
	}
	err := r.agree(ctx, "", ioerr)
	stop()
	if err != nil {
		return err
	}
	// IOR's file size check, untimed.
	var size int64 = -1
	if o.FilePerProc || r.rank == 0 {
		if s, err := r.be.Size(ctx, name); err == nil {
			size = s
		}
	}
	payload := rec.marshal()
	payload = binary.LittleEndian.AppendUint64(payload, uint64(size))
	all, err := r.comm.Gather(ctx, 0, payload)
	if err != nil {
		return err
	}
	if r.rank != 0 {
		return nil
	}
	recs := make([]RankRecord, len(all))
	var sizeSum int64
	for i, b := range all {
		if len(b) != recordSize+8 {
			return fmt.Errorf("bench: rank %d sent a %d-byte record", i, len(b))
		}
		if recs[i], err = unmarshalRecord(b[:recordSize]); err != nil {
			return fmt.Errorf("bench: rank %d: %w", i, err)
		}
		if s := int64(binary.LittleEndian.Uint64(b[recordSize:])); s >= 0 {
			sizeSum += s
		}
	}
	res, err := Reduce(access, rep, recs)
	if err != nil {
		return err
	}
	if ph == pattern.Write {
		r.pairs = 0
		for _, rc := range recs {
			r.pairs = max(r.pairs, rc.Transfers)
		}
	}
	res.Block, res.Xfer = o.BlockSize, o.TransferSize
	want := r.p.FileSize() * int64(r.p.Files())
	if !r.noData && !res.Stonewalled && (sizeSum != want || res.AggBytes != r.p.AggregateSize()) {
		fmt.Fprintf(r.cfg.Stderr, "WARNING: Expected aggregate file size       = %d\n", want)
		fmt.Fprintf(r.cfg.Stderr, "WARNING: Stat() of aggregate file size      = %d\n", sizeSum)
		fmt.Fprintf(r.cfg.Stderr, "WARNING: Using actual aggregate bytes moved = %d\n", res.AggBytes)
	}
	r.report.Results = append(r.report.Results, res)
	r.rep.result(res)
	return nil
}

const (
	modeWrite = iota
	modeRead
	modeVerify
)

// maxMismatches is how many mismatches each rank reports in detail per
// verification pass.
const maxMismatches = 4

// loop is the hot path: it moves the rank's transfers of phase ph and
// records the progress marks in rec. It allocates nothing per transfer.
// limit >= 0 caps the number of transfers (the count a stonewalled write
// reached). In modeVerify, wrong transfers are counted in rec.Errors and
// the first few described in *mm.
func (r *runner) loop(ctx context.Context, f backend.File, ph pattern.Phase, mode, rep int, limit int64, rec *RankRecord, mm *[]Mismatch) error {
	o := &r.o
	planned := r.p.Count(r.rank, ph)
	if limit >= 0 && limit < planned {
		planned = limit
	}
	rec.Planned = planned
	owner := r.p.TargetRank(r.rank, ph)
	sigRep := rep
	if !o.Write {
		sigRep = 0
	}
	switch mode {
	case modeWrite, modeVerify:
		FillBody(r.wbuf, owner, sigRep, o.Signature)
	}
	var deadline time.Time
	if o.Deadline > 0 {
		deadline = time.Now().Add(time.Duration(o.Deadline) * time.Second)
	}
	mark, nextMark := 0, Mark(0, planned)
	var n int64
	var err error
	// A --strided run moves every call through ExtentsIO where the back
	// end has it: one call of its API per transfer, however many ranges.
	xio, _ := f.(backend.ExtentsIO)
	if !o.Strided {
		xio = nil
	}
	var ext []backend.Extent
	extents := func(t pattern.Transfer) []backend.Extent {
		ext = ext[:0]
		for _, e := range t.Pieces() {
			ext = append(ext, backend.Extent{Offset: e.Offset, Length: e.Length})
		}
		return ext
	}
	do := func(t pattern.Transfer) {
		switch {
		case mode == modeWrite && xio != nil:
			pos := 0
			for _, e := range t.Pieces() {
				StampTransfer(r.wbuf[pos:pos+int(e.Length)], e.Offset, owner, sigRep)
				pos += int(e.Length)
			}
			if err = xio.WriteExtents(r.wbuf[:pos], extents(t)); err != nil {
				err = fmt.Errorf("write %d bytes in %d ranges from offset %d: %w", t.Length, len(ext), t.Offset, err)
				return
			}
			if o.FsyncPerWrite {
				err = f.Sync(ctx)
			}
		case mode == modeWrite:
			pos := 0
			for _, e := range t.Pieces() {
				buf := r.wbuf[pos : pos+int(e.Length)]
				StampTransfer(buf, e.Offset, owner, sigRep)
				if _, err = f.WriteAt(buf, e.Offset); err != nil {
					err = fmt.Errorf("write %d bytes at offset %d: %w", e.Length, e.Offset, err)
					return
				}
				pos += int(e.Length)
			}
			if o.FsyncPerWrite {
				err = f.Sync(ctx)
			}
		default:
			if xio != nil {
				if rerr := xio.ReadExtents(r.rbuf[:t.Length], extents(t)); rerr != nil {
					if rerr == io.EOF {
						err = fmt.Errorf("read %d bytes in %d ranges from offset %d: the end of the file came first", t.Length, len(ext), t.Offset)
					} else {
						err = fmt.Errorf("read %d bytes in %d ranges from offset %d: %w", t.Length, len(ext), t.Offset, rerr)
					}
					return
				}
			}
			pos := 0
			for _, e := range t.Pieces() {
				buf := r.rbuf[pos : pos+int(e.Length)]
				if xio == nil {
					m, rerr := f.ReadAt(buf, e.Offset)
					if rerr != nil && (rerr != io.EOF || m < len(buf)) {
						if rerr == io.EOF {
							err = fmt.Errorf("read at offset %d: %d of %d bytes before the end of the file", e.Offset, m, e.Length)
						} else {
							err = fmt.Errorf("read %d bytes at offset %d: %w", e.Length, e.Offset, rerr)
						}
						return
					}
				}
				if mode == modeVerify {
					want := r.wbuf[pos : pos+int(e.Length)]
					StampTransfer(want, e.Offset, owner, sigRep)
					if !bytes.Equal(buf, want) {
						rec.Errors++
						if len(*mm) < maxMismatches {
							*mm = append(*mm, findMismatch(buf, want, e.Offset, owner, sigRep))
						}
					}
				}
				pos += int(e.Length)
			}
		}
		rec.Bytes += t.Length
	}
	total := r.p.Count(r.rank, ph)
	stonewall := o.Deadline > 0 && mode != modeVerify
	together, _ := r.be.(backend.StopTogether)
	for n < planned && total > 0 {
		// Transfers already done are skipped when wrapping around (wear-out).
		skip, i := n%total, int64(0)
		stopped := false
		for t := range r.p.Transfers(r.rank, ph) {
			if i < skip {
				i++
				continue
			}
			i++
			do(t)
			if err != nil {
				return err
			}
			n++
			rec.Transfers = n
			if n == nextMark && mark < ProgressPoints {
				rec.Progress[mark] = r.now()
				mark++
				if mark < ProgressPoints {
					nextMark = Mark(mark, planned)
				}
			}
			if n&63 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if stonewall {
				hit := time.Now().After(deadline)
				if together != nil {
					var serr error
					if hit, serr = together.StopTogether(hit); serr != nil {
						return serr
					}
				}
				if hit {
					stopped = true
					break
				}
			}
			if n == planned {
				break
			}
		}
		if !stopped {
			continue
		}
		if !o.WearOut {
			return nil
		}
		// -O stoneWallingWearOut=1: once stopped, every rank goes on to
		// the largest count any rank reached, wrapping around its data.
		target, cerr := r.comm.AllreduceUint64(ctx, uint64(n), rank.Max)
		if cerr != nil {
			return cerr
		}
		planned, rec.Planned, stonewall = int64(target), int64(target), false
		mark = ProgressPoints
	}
	if o.WearOut && stonewall {
		// This rank finished before the deadline: it still joins the
		// others' reduction, and has nothing more to do.
		if _, cerr := r.comm.AllreduceUint64(ctx, uint64(n), rank.Max); cerr != nil {
			return cerr
		}
	}
	return nil
}

// verifyPass is the untimed read-back of -W (after the write) or -R
// (after the read phase): each rank reads what the phase's target rank
// wrote and compares it with the signature.
func (r *runner) verifyPass(ctx context.Context, rep int, ph pattern.Phase, what string) error {
	if err := r.comm.Barrier(ctx); err != nil {
		return err
	}
	var rec RankRecord
	var mm []Mismatch
	var verr error
	if !r.noData {
		name := r.fileName(ph)
		f, err := r.be.Open(ctx, name)
		if err == nil {
			limit := int64(-1)
			if r.limited {
				limit = r.written
			}
			err = r.loop(ctx, f, ph, modeVerify, rep, limit, &rec, &mm)
			stop := r.watch(err)
			err = errors.Join(err, f.Close(ctx))
			stop()
		}
		if err != nil {
			verr = fmt.Errorf("%s of %s: %w", what, name, err)
		}
	}
	stop := r.watch(verr)
	err := r.agree(ctx, what, verr)
	stop()
	if err != nil {
		return err
	}
	var msg bytes.Buffer
	binary.Write(&msg, binary.LittleEndian, rec.Errors)
	for _, m := range mm {
		fmt.Fprintf(&msg, "rank %d, %s\n", r.rank, m.Describe())
	}
	all, err := r.comm.Gather(ctx, 0, msg.Bytes())
	if err != nil {
		return err
	}
	if r.rank == 0 {
		r.reportVerify(rep, what, all)
	}
	if !r.o.QuitOnError {
		return nil
	}
	wrong, err := r.comm.AllreduceUint64(ctx, uint64(rec.Errors), rank.Sum)
	if err != nil {
		return err
	}
	if wrong > 0 {
		return fmt.Errorf("%w: the %s of repetition %d found %d transfer(s) with wrong data; -q: stopping", ErrVerify, what, rep, wrong)
	}
	return nil
}

// reportVerify adds up the ranks' verification messages at rank 0.
func (r *runner) reportVerify(rep int, what string, all [][]byte) {
	v := VerifyReport{Iter: rep, Pass: what}
	for _, b := range all {
		if len(b) < 8 {
			continue
		}
		v.Errors += int64(binary.LittleEndian.Uint64(b))
		for _, line := range strings.Split(strings.TrimSpace(string(b[8:])), "\n") {
			if line != "" {
				v.Mismatches = append(v.Mismatches, line)
			}
		}
	}
	if r.noData {
		v.Mismatches = nil
	}
	r.verrs += v.Errors
	r.report.Verify = append(r.report.Verify, v)
	r.rep.verify(v)
}

// removeTimeout bounds the removal of a failed or interrupted run's test
// file, which goes on after the run's context has ended.
const removeTimeout = 15 * time.Second

// Cleanup is joined to the error of a run that failed or was interrupted
// after its write phase had created the test file(s), on rank 0: what
// became of them.
type Cleanup struct {
	// Files names them: "the test file F", or with -F "the test files
	// F.00000000 to F.00000003".
	Files string
	// Kept is set with -k; otherwise they were removed, unless Err says
	// why rank 0's could not be.
	Kept bool
	Err  error
}

// Note is what became of the files, as a sentence fragment
// ("removed the test file F (-k keeps it)").
func (c *Cleanup) Note() string {
	it := "it"
	if strings.HasPrefix(c.Files, "the test files") {
		it = "them"
	}
	switch {
	case c.Kept:
		return "kept " + c.Files + " (-k)"
	case c.Err != nil:
		return fmt.Sprintf("could not remove %s: %v", c.Files, c.Err)
	}
	return "removed " + c.Files + " (-k keeps " + it + ")"
}

func (c *Cleanup) Error() string { return "bench: " + c.Note() }

func (c *Cleanup) Unwrap() error { return c.Err }

// cleanup runs when the run ends with err after this rank's write phase
// created its test file: unless -k, the rank removes the file, so that a
// run that filled the disk, or was interrupted, does not leave it full.
// IOR aborts there and leaves the file. It works alone, with no
// collective: the ranks may be failing because one of them died, and
// after an interrupt the context has ended. Rank 0 reports for all;
// another rank only a removal that failed.
func (r *runner) cleanup(ctx context.Context, err error) error {
	if !r.created {
		return err
	}
	name := r.fileName(pattern.Write)
	c := &Cleanup{Files: "the test file " + name, Kept: r.o.KeepFile}
	if r.o.FilePerProc {
		c.Files = fmt.Sprintf("the test files %s.%08d to %s.%08d", r.o.TestFile, 0, r.o.TestFile, r.tasks-1)
		if r.tasks == 1 {
			c.Files = "the test file " + name
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	if _, serr := r.be.Size(rctx, name); errors.Is(serr, fs.ErrNotExist) {
		// Its create failed: there is nothing to remove or keep. (With
		// -F another rank's may be there; it speaks for itself.)
		r.created = false
		if r.rank == 0 && r.o.FilePerProc && r.tasks > 1 && !c.Kept {
			return errors.Join(err, c)
		}
		return err
	}
	if !c.Kept {
		if c.Err = r.be.Remove(rctx, name); c.Err == nil {
			r.created = false
		} else {
			c.Files = "the test file " + name
		}
	}
	if r.rank == 0 {
		return errors.Join(err, c)
	}
	if c.Err != nil {
		fmt.Fprintf(r.cfg.Stderr, "pario: bench: rank %d: could not remove its test file %s: %v\n", r.rank, name, c.Err)
	}
	return err
}
