// Package farm runs an unmodified command once per segment of an input
// file, on the ranks of a parallel run, with the way the ranks share the
// input and the output chosen by two annotation lines (template/annot)
// rather than by the code: `pario farm`.
//
//	in  NEWSPAPER ro wo b farm=FASTA   # segments: FASTA records, grouped
//	out NEWSPAPER rc wo b farm=0       # unknown extent, placed in order
//
// The input is a NEWSPAPER (or REPORT) whose segmentation function (or
// constant extent) cuts it into whole records; consecutive records are
// grouped into segments of at least Config.Block bytes, and the parent
// (rank 0 of the group) hands them out on demand. Each rank feeds the
// segments it gets to the command on stdin, one run per segment.
//
// The output is a NEWSPAPER of unknown extent (=0): each run's stdout goes
// to a scratch file, then to the parent, which writes it in segment
// order (wo: the output is byte-identical to one run of the command over
// the whole input, when the command treats records independently) or as it
// comes (wc: each run's output whole, in any order). Or it is a LOG with
// chaotic writes: each run's output appended whole at the end of file by
// the rank that ran it, holding the log's write permission.
//
// With Config.Group, the ranks form groups (rank.Comm.Split) of that many;
// the input is first cut at record boundaries into one part per group, and
// each group is a farm of its own over its part, writing its own output
// file (OUT.0, OUT.1, ...), its rank 0 gathering and writing it, as
// parallel HMMER's groups did. Concatenated in group order, the files of an
// ordered run are the sequential run's output.
//
// The output is written under a temporary name next to its own and renamed
// when every segment has succeeded; a failure removes it.
package farm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pario/pario/internal/child"
	"github.com/pario/pario/rank"
	"github.com/pario/pario/template"
	"github.com/pario/pario/template/annot"
	// The docking example's record formats (BSize, BLen), which
	// docs/templates.md lists among the segmentation functions, are
	// farmable input too.
	_ "github.com/pario/pario/template/dock"
	"github.com/pario/pario/template/seg"
	"github.com/pario/pario/units"
)

// The annotation lines farm reads: streams In and Out, in the function
// named after the command (its base name, e.g. hmmscan) or, failing that,
// Function.
const (
	InStream  = "in"
	OutStream = "out"
	Function  = "farm"
)

// Config is one farm run, the same on every rank.
type Config struct {
	Comm        *rank.Comm
	Annotations *annot.File
	In, Out     string // names in InFS and OutFS
	InFS, OutFS FS
	// Argv is the command; Env its environment (nil: this process's),
	// to which PARIO_FARM_SEGMENT and PARIO_FARM_RANK are added.
	Argv []string
	Env  []string
	// Block is the input bytes of one run of the command (whole records,
	// at least one); 0 means a group's part divided by four times its ranks.
	Block int64
	// Group is the ranks writing one output file; 0 means all of them.
	Group int
	// Progress, on world rank 0, is called every ProgressEvery (default
	// 500ms) while the run goes, and once at the end with Done set.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is what the parent of group 0 has handed out: segments and
// input bytes of its part (the whole input when there is one group).
type Progress struct {
	Segments     int
	Bytes, Total int64
	Elapsed      time.Duration
	Done         bool
}

// Result is a finished run, the same on every rank.
type Result struct {
	Outputs  []string // the output files, in group order
	Segments int      // runs of the command, over all ranks
	Bytes    int64    // input bytes fed to the command
}

// ErrFailedElsewhere is what ranks other than 0 return when the run
// failed: rank 0 returns the failures themselves.
var ErrFailedElsewhere = errors.New("farm: the run failed (rank 0 reports why)")

// SegmentError is a run of the command that failed.
type SegmentError struct {
	Group, Index int
	Base, Extent int64
	Head         string // the segment's first line, shortened
	Rank         int
	Argv         []string
	Status       int    // exit status; -1 when it did not start or was killed
	Stderr       string // the end of its stderr
	Err          error
}

func (e *SegmentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "segment %d", e.Index)
	if e.Group > 0 {
		fmt.Fprintf(&b, " of group %d", e.Group)
	}
	fmt.Fprintf(&b, " (input bytes %d-%d, %q) on rank %d: %s", e.Base, e.Base+e.Extent, e.Head, e.Rank, strings.Join(e.Argv, " "))
	if e.Status >= 0 {
		fmt.Fprintf(&b, ": exit status %d", e.Status)
	} else {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if s := strings.TrimRight(e.Stderr, "\n"); s != "" {
		b.WriteString("; its stderr:\n    " + strings.ReplaceAll(s, "\n", "\n    "))
	}
	return b.String()
}

func (e *SegmentError) Unwrap() error { return e.Err }

// Streams returns the annotations of the input and output streams for
// the command argv, checked for what farm can do with them.
func Streams(af *annot.File, argv []string) (in, out annot.Annotation, err error) {
	fn := ""
	if len(argv) > 0 {
		fn = filepath.Base(argv[0])
	}
	find := func(stream string) (annot.Annotation, error) {
		if a, ok := af.Lookup(stream, fn); ok {
			return a, nil
		}
		if a, ok := af.Lookup(stream, Function); ok {
			return a, nil
		}
		return annot.Annotation{}, fmt.Errorf("farm: %s: no line for stream %q in function %q or %q (e.g. `%s`)", af.Name, stream, fn, Function, exampleLine[stream])
	}
	if in, err = find(InStream); err != nil {
		return in, out, err
	}
	if out, err = find(OutStream); err != nil {
		return in, out, err
	}
	at := func(a annot.Annotation, format string, args ...any) error {
		return fmt.Errorf("farm: %s:%d: %s: %s", af.Name, a.Line, a, fmt.Sprintf(format, args...))
	}
	if !in.Template.Segmented() {
		return in, out, at(in, "the input is cut into segments: use NEWSPAPER or REPORT")
	}
	if in.Unknown() {
		return in, out, at(in, "the parent must find the input's segments: name a segmentation function (%s) or a constant size, not 0", strings.Join(SegNames(), ", "))
	}
	// Checked here, where the CLI calls it before any rank starts: the
	// parent looks the function up only once the ranks have met.
	if in.SegFunc != "" {
		if _, err := seg.Lookup(in.SegFunc); err != nil {
			return in, out, at(in, "no segmentation function %q: use one of %s, or a constant size like 4k", in.SegFunc, strings.Join(SegNames(), ", "))
		}
	}
	switch {
	case out.Template == annot.Newspaper && out.Unknown():
	case out.Template == annot.Newspaper:
		return in, out, at(out, "a command's output has no size known in advance: use =0 (unknown extent)")
	case out.Template == annot.Log && out.Write == annot.Chaotic:
	case out.Template == annot.Log:
		return in, out, at(out, "an ordered or relaxed log needs every rank to append in rank order, round after round, but segments go to whichever rank asks first: use wc, or NEWSPAPER ... wo =0 for ordered output")
	default:
		return in, out, at(out, "the output can be a NEWSPAPER of unknown extent (=0) or a LOG, not a %s", out.Template)
	}
	return in, out, nil
}

// exampleLine is a line farm takes for each stream, for the message when
// one is missing.
var exampleLine = map[string]string{
	InStream:  InStream + " NEWSPAPER ro wo b " + Function + "=FASTA",
	OutStream: OutStream + " NEWSPAPER rc wo b " + Function + "=0",
}

// groupedPrefix starts the names Run registers for grouped records: they
// are its own, not for annotation lines.
const groupedPrefix = "farm:"

// SegNames are the segmentation functions an input line may name.
func SegNames() []string {
	return slices.DeleteFunc(seg.Names(), func(n string) bool { return strings.HasPrefix(n, groupedPrefix) })
}

// grouped makes segments of at least block bytes out of fn's records.
func grouped(fn seg.Func, block int64) seg.Func {
	return func(r io.ReaderAt, pmin, pmax, cur int64) (int64, error) {
		r = &window{r: r}
		var n int64
		for n < block {
			e, err := fn(r, pmin, pmax, cur+n)
			if err != nil {
				return 0, err
			}
			if e < 0 {
				break
			}
			n += e
		}
		if n == 0 {
			return -1, nil
		}
		return n, nil
	}
}

// windowSize is what a window reads at a time.
const windowSize = 1 << 20

// window serves the many small reads of a segmentation function walking
// forward through a file, one record at a time, from few large ones: on a
// pario file each read is a round trip to the I/O servers.
type window struct {
	r   io.ReaderAt
	off int64
	buf []byte
	eof bool // the file ends at the end of buf
}

func (w *window) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	if off < w.off || (end > w.off+int64(len(w.buf)) && !w.eof) {
		if err := w.fill(off, len(p)); err != nil {
			return 0, err
		}
	}
	if off >= w.off+int64(len(w.buf)) {
		return 0, io.EOF
	}
	n := copy(p, w.buf[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (w *window) fill(off int64, want int) error {
	size := max(want, windowSize)
	if cap(w.buf) < size {
		w.buf = make([]byte, size)
	}
	n, err := w.r.ReadAt(w.buf[:size], off)
	w.off, w.buf, w.eof = off, w.buf[:n], n < size
	if err != nil && !errors.Is(err, io.EOF) {
		w.buf = w.buf[:0]
		return err
	}
	return nil
}

// recordFunc is the input annotation's segmentation: one record.
func recordFunc(a annot.Annotation) (seg.Func, string, error) {
	if a.SegFunc == "" {
		return seg.Fixed(a.Extent), strconv.FormatInt(a.Extent, 10), nil
	}
	fn, err := seg.Lookup(a.SegFunc)
	return fn, a.SegFunc, err
}

// emptyName is the segmentation of an empty part: no segments.
const emptyName = groupedPrefix + "empty"

func init() {
	if err := seg.Register(emptyName, func(io.ReaderAt, int64, int64, int64) (int64, error) { return -1, nil }); err != nil {
		panic(err)
	}
}

// groupedAnnotation registers fn grouped by block under a name of its own
// and returns a with it as the segmentation function, for the part.
func groupedAnnotation(a annot.Annotation, block int64, part template.Bounds) (annot.Annotation, error) {
	if part.Max <= part.Min {
		// The template reads Bounds{0, 0} (an empty input's only part) as
		// "to the end of the file", and a constant extent does not look
		// at the file, so it would hand out empty segments for ever.
		a.SegFunc, a.Extent = emptyName, 0
		return a, nil
	}
	fn, name, err := recordFunc(a)
	if err != nil {
		return a, err
	}
	name = fmt.Sprintf("%s%s*%d", groupedPrefix, name, block)
	if _, err := seg.Lookup(name); err != nil {
		// Another run in this process may register it between the two
		// calls; the function is the same either way.
		if err := seg.Register(name, grouped(fn, block)); err != nil {
			if _, lerr := seg.Lookup(name); lerr != nil {
				return a, err
			}
		}
	}
	a.SegFunc, a.Extent = name, 0
	return a, nil
}

// parts cuts [0, size) at record boundaries into n parts of about equal
// bytes, for the groups: n+1 boundaries.
func parts(fn seg.Func, r io.ReaderAt, size int64, n int) ([]int64, error) {
	b := make([]int64, n+1)
	b[n] = size
	if n == 1 {
		return b, nil
	}
	// One record at a time, and only as far as the last boundary: the
	// records of a large input do not fit in memory.
	g := 1
	err := seg.Each(fn, &window{r: r}, 0, size, func(rc seg.Segment) bool {
		end := rc.Base + rc.Extent
		for g < n && end >= size*int64(g)/int64(n) {
			b[g] = end
			g++
		}
		return g < n
	})
	if err != nil {
		return nil, err
	}
	for ; g < n; g++ {
		b[g] = size
	}
	return b, nil
}

// agree makes a collective verdict of each rank's err: every rank returns
// nil when all succeeded, and otherwise the failures of all ranks (on rank
// 0) or ErrFailedElsewhere.
func agree(ctx context.Context, c *rank.Comm, what string, err error) error {
	var msg []byte
	if err != nil {
		msg = []byte(err.Error())
	}
	all, gerr := c.Gather(ctx, 0, msg)
	if gerr != nil {
		return errors.Join(err, fmt.Errorf("farm: %s: %w", what, gerr))
	}
	var verdict []byte
	if c.Rank() == 0 {
		var errs []string
		for r, m := range all {
			if len(m) > 0 {
				errs = append(errs, fmt.Sprintf("rank %d: %s", r, m))
			}
		}
		verdict = []byte(strings.Join(errs, "\n"))
	}
	v, berr := c.Broadcast(ctx, 0, verdict)
	if berr != nil {
		return errors.Join(err, fmt.Errorf("farm: %s: %w", what, berr))
	}
	if len(v) == 0 {
		return nil
	}
	if c.Rank() == 0 {
		return fmt.Errorf("farm: %s: %s", what, v)
	}
	return ErrFailedElsewhere
}

func encodeInt64s(xs []int64) []byte {
	b := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

func decodeInt64s(b []byte) []int64 {
	xs := make([]int64, len(b)/8)
	for i := range xs {
		xs[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return xs
}

// OutputName is group g's output file; groups 0 means one file, out.
func OutputName(out string, groups, g int) string {
	if groups == 0 {
		return out
	}
	return out + "." + strconv.Itoa(g)
}

// Groups is how many groups ranks ranks make in groups of group (0: one
// group of all), and the size of each but maybe the last. A group larger
// than the ranks is one group of them all: group comes from the command
// line, and the sum ranks+group-1 of a ceiling division would overflow for
// a group near the int's maximum.
func Groups(ranks, group int) (groups, size int) {
	if group <= 0 || group >= ranks {
		return 1, max(ranks, 1)
	}
	groups = ranks / group
	if ranks%group != 0 {
		groups++
	}
	return groups, group
}

// OutputIsDirError is CheckOutputs' error for an output that is a
// directory.
type OutputIsDirError struct{ Name string }

func (e *OutputIsDirError) Error() string {
	return e.Name + " is a directory: name a file for the output (one in it, say)"
}

// OutputDirError is CheckOutputs' error for an output whose directory
// does not exist or is not a directory.
type OutputDirError struct {
	Name, Dir string
	Kind      Kind // Missing or NotDir
}

func (e *OutputDirError) Error() string {
	if e.Kind == NotDir {
		return e.Dir + ", the directory of the output " + e.Name + ", is not a directory"
	}
	return "the directory " + e.Dir + " of the output " + e.Name + " does not exist: create it first"
}

// CheckOutputs refuses, before any segment runs, outputs that are
// existing directories or whose directory is missing: the rename at the
// end would fail only after all of them, and the create of the temporary
// file would name that file, not the user's. ranks and group are as for
// Run (group 0: one output, out).
func CheckOutputs(ctx context.Context, fsys FS, out string, ranks, group int) error {
	names := []string{out}
	if group > 0 {
		groups, _ := Groups(ranks, group)
		names = names[:0]
		for g := range groups {
			names = append(names, OutputName(out, group, g))
		}
	}
	for _, name := range names {
		if err := checkOutput(ctx, fsys, name); err != nil {
			return err
		}
	}
	return nil
}

func checkOutput(ctx context.Context, fsys FS, name string) error {
	dir := filepath.Dir(name)
	k, err := fsys.Kind(ctx, dir)
	if err != nil {
		return fmt.Errorf("the output's directory %s: %w", dir, err)
	}
	if k != Dir {
		return &OutputDirError{Name: name, Dir: dir, Kind: k}
	}
	k, err = fsys.Kind(ctx, name)
	if err != nil {
		return fmt.Errorf("the output %s: %w", name, err)
	}
	if k == Dir {
		return &OutputIsDirError{Name: name}
	}
	return nil
}

// Run runs the farm; it is collective over cfg.Comm.
func Run(ctx context.Context, cfg Config) (Result, error) {
	world := cfg.Comm
	if len(cfg.Argv) == 0 {
		return Result{}, errors.New("farm: no command to run")
	}
	if cfg.Group < 0 {
		return Result{}, fmt.Errorf("farm: group %d: want 0 (one output) or a number of ranks", cfg.Group)
	}
	inA, outA, err := Streams(cfg.Annotations, cfg.Argv)
	if err != nil {
		return Result{}, err // the same on every rank: no collective needed
	}
	in, size, err := cfg.InFS.Open(ctx, cfg.In)
	if err != nil {
		err = fmt.Errorf("open the input %s: %w", cfg.In, err)
	}
	if err := agree(ctx, world, "input", err); err != nil {
		return Result{}, err
	}
	defer in.Close()

	groups, gsize := Groups(world.Size(), cfg.Group)
	// Level one of a newspaper of newspapers: one part per group, cut by
	// world rank 0 at record boundaries.
	var bounds []byte
	var perr error
	if world.Rank() == 0 {
		var fn seg.Func
		if fn, _, perr = recordFunc(inA); perr == nil {
			var b []int64
			if b, perr = parts(fn, in, size, groups); perr == nil {
				bounds = encodeInt64s(b)
			}
		}
		if perr != nil {
			perr = fmt.Errorf("cut %s into %d parts: %w", cfg.In, groups, perr)
		}
	}
	if err := agree(ctx, world, "input", perr); err != nil {
		return Result{}, err
	}
	bb, err := world.Broadcast(ctx, 0, bounds)
	if err != nil {
		return Result{}, fmt.Errorf("farm: %w", err)
	}
	b := decodeInt64s(bb)
	color := world.Rank() / gsize
	comm := world
	if groups > 1 {
		if comm, err = world.Split(ctx, color, world.Rank()); err != nil {
			return Result{}, fmt.Errorf("farm: groups of %d ranks: %w", gsize, err)
		}
		defer comm.Close()
	}
	part := template.Bounds{Min: b[color], Max: b[color+1]}

	// The output, under a temporary name made by the group's rank 0.
	final := OutputName(cfg.Out, cfg.Group, color)
	var out Handle
	var tmp []byte
	var oerr error
	if comm.Rank() == 0 {
		var name string
		if oerr = checkOutput(ctx, cfg.OutFS, final); oerr == nil {
			if out, name, oerr = cfg.OutFS.CreateTemp(ctx, final); oerr != nil {
				oerr = fmt.Errorf("create the output %s: %w", final, oerr)
			}
		}
		tmp = []byte(name)
	}
	if t, err := comm.Broadcast(ctx, 0, tmp); err != nil {
		oerr = errors.Join(oerr, err)
	} else if comm.Rank() != 0 && len(t) > 0 {
		if out, oerr = cfg.OutFS.OpenRW(ctx, string(t)); oerr != nil {
			oerr = fmt.Errorf("open the output %s (as %s): %w", final, t, oerr)
		}
	}
	committed := false
	defer func() {
		if out != nil {
			out.Close()
		}
		if comm.Rank() == 0 && len(tmp) > 0 && !committed {
			cfg.OutFS.Remove(context.WithoutCancel(ctx), string(tmp))
		}
	}()
	if err := agree(ctx, world, "output", oerr); err != nil {
		return Result{}, err
	}

	grp, err := template.NewGroup(ctx, comm)
	if err != nil {
		return Result{}, fmt.Errorf("farm: %w", err)
	}
	block := cfg.Block
	if block <= 0 {
		block = max(1, (part.Max-part.Min)/int64(4*comm.Size()))
	}
	ga, gerr := groupedAnnotation(inA, block, part)
	var ins, outs *template.Stream
	if gerr == nil {
		ins, gerr = grp.Open(ctx, ga, in, part)
	}
	if gerr == nil {
		outs, gerr = grp.Open(ctx, outA, out, template.Bounds{})
	}
	if err := agree(ctx, world, "streams", gerr); err != nil {
		return Result{}, err
	}
	defer ins.Close()
	defer outs.Close()

	stopProgress := func() {}
	if world.Rank() == 0 && cfg.Progress != nil {
		stopProgress = progress(cfg, ins, part.Max-part.Min)
	}
	w := &worker{cfg: cfg, ins: ins, outs: outs, ann: outA, group: color, groups: groups}
	werr := w.run(ctx)
	stopProgress()

	res, failure, err := outcome(ctx, world, w, werr)
	if err != nil {
		return Result{}, err
	}
	failed := failure != ""
	cerr := grp.Close(ctx)

	// The group's rank 0 commits (or removes) its output file.
	var ferr error
	if !failed && comm.Rank() == 0 {
		if ferr = out.Sync(); ferr == nil {
			ferr = out.Close()
			out = nil
		}
		if ferr == nil {
			ferr = cfg.OutFS.Rename(ctx, string(tmp), final)
		}
		if ferr != nil {
			ferr = fmt.Errorf("output %s: %w", final, ferr)
		} else {
			committed = true
		}
	}
	ferr = errors.Join(ferr, cerr)
	if failed {
		if world.Rank() == 0 {
			return res, fmt.Errorf("farm: %s", failure)
		}
		return res, ErrFailedElsewhere
	}
	if err := agree(ctx, world, "output", ferr); err != nil {
		return res, err
	}
	for g := range groups {
		res.Outputs = append(res.Outputs, OutputName(cfg.Out, cfg.Group, g))
	}
	return res, nil
}

// outcome brings every rank's outcome to world rank 0 and its verdict back
// to all: the totals, and on failure what failed (the failures themselves,
// not the aborts other ranks saw because of them), "" on success.
func outcome(ctx context.Context, world *rank.Comm, w *worker, werr error) (Result, string, error) {
	report := make([]byte, 17)
	binary.LittleEndian.PutUint64(report, uint64(w.segments))
	binary.LittleEndian.PutUint64(report[8:], uint64(w.bytes))
	switch {
	case werr == nil:
	case w.aborted && ctx.Err() == nil:
		// The abort's text carries its reason: the verdict falls back on
		// it when no rank's own failure arrived (the stream's owner may
		// have met the failure while serving, as a full disk).
		report[16] = 'A'
		report = append(report, werr.Error()...)
	default:
		report[16] = 'E'
		report = append(report, werr.Error()...)
	}
	all, err := world.Gather(ctx, 0, report)
	if err != nil {
		return Result{}, "", errors.Join(werr, fmt.Errorf("farm: %w", err))
	}
	var verdict []byte
	if world.Rank() == 0 {
		var segments, bytes int64
		var fails, aborts []string
		for _, m := range all {
			if len(m) < 17 {
				continue
			}
			segments += int64(binary.LittleEndian.Uint64(m))
			bytes += int64(binary.LittleEndian.Uint64(m[8:]))
			switch m[16] {
			case 'E':
				fails = append(fails, string(m[17:]))
			case 'A':
				aborts = append(aborts, string(m[17:]))
			}
		}
		if len(fails) == 0 && len(aborts) > 0 {
			fails = append(fails, aborts[0])
		}
		verdict = append(encodeInt64s([]int64{segments, bytes}), strings.Join(fails, "\n")...)
	}
	v, err := world.Broadcast(ctx, 0, verdict)
	if err == nil && len(v) < 16 {
		err = fmt.Errorf("%d bytes, want at least 16", len(v))
	}
	if err != nil {
		return Result{}, "", errors.Join(werr, fmt.Errorf("farm: the verdict: %w", err))
	}
	sums := decodeInt64s(v[:16])
	return Result{Segments: int(sums[0]), Bytes: sums[1]}, string(v[16:]), nil
}

func progress(cfg Config, ins *template.Stream, total int64) (stop func()) {
	every := cfg.ProgressEvery
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	report := func(last bool) {
		n, b, _ := ins.Handed()
		cfg.Progress(Progress{Segments: n, Bytes: b, Total: total, Elapsed: time.Since(start), Done: last})
	}
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				report(false)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		report(true)
	}
}

// maxPending bounds the ordered placements a rank has waiting for their
// turn while it goes on with the next segments.
const maxPending = 16

type worker struct {
	cfg           Config
	ins, outs     *template.Stream
	ann           annot.Annotation
	group, groups int
	segments      int
	bytes         int64
	aborted       bool // the failure seen was another rank's abort

	mu      sync.Mutex
	perr    error // the first failed placement
	dups    []*template.Stream
	pending chan struct{}
	wg      sync.WaitGroup
}

func (w *worker) run(ctx context.Context) error {
	w.pending = make(chan struct{}, maxPending)
	err := w.loop(ctx)
	w.wg.Wait()
	for _, d := range w.dups {
		d.Close()
	}
	w.mu.Lock()
	perr := w.perr
	w.mu.Unlock()
	// Another rank's abort only if neither failure is this rank's own: a
	// placement that failed here (a full disk) aborts the stream, and the
	// loop may then see that abort too, joined with the real cause.
	if (err != nil || perr != nil) && (err == nil || isAbort(err)) && (perr == nil || isAbort(perr)) {
		w.aborted = true
		return errors.Join(err, perr)
	}
	err = errors.Join(err, perr)
	if err != nil {
		// Tell the other ranks of the group, which may be waiting for this
		// segment's turn.
		reason := err.Error()
		w.outs.Abort(context.WithoutCancel(ctx), reason)
		w.ins.Abort(context.WithoutCancel(ctx), reason)
	}
	return err
}

// isAbort reports whether err is the stream's abort, which another rank's
// failure caused, rather than a failure of this rank.
func isAbort(err error) bool {
	var se *SegmentError
	return !errors.As(err, &se) && strings.Contains(err.Error(), "stream aborted: ")
}

func (w *worker) placementFailed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perr
}

func (w *worker) loop(ctx context.Context) error {
	for {
		if err := w.placementFailed(); err != nil {
			return nil // run reports it
		}
		sg, err := w.ins.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if w.ann.Template == annot.Log {
			if err := w.logRun(ctx, sg); err != nil {
				return err
			}
			continue
		}
		w.pending <- struct{}{}
		d, err := w.dup(ctx)
		if err != nil {
			<-w.pending
			return err
		}
		sc, err := d.Scratch(sg.Index)
		if err != nil {
			<-w.pending
			return err
		}
		if err := w.command(ctx, sg, sc); err != nil {
			sc.Discard()
			<-w.pending
			return err
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			_, err := sc.Close(ctx)
			w.mu.Lock()
			if err != nil && w.perr == nil {
				w.perr = err
			}
			w.dups = append(w.dups, d)
			w.mu.Unlock()
			<-w.pending
		}()
	}
}

// dup is a connection to the output stream for one placement.
func (w *worker) dup(ctx context.Context) (*template.Stream, error) {
	w.mu.Lock()
	if n := len(w.dups); n > 0 {
		d := w.dups[n-1]
		w.dups = w.dups[:n-1]
		w.mu.Unlock()
		return d, nil
	}
	w.mu.Unlock()
	return w.outs.Dup(ctx)
}

// logRun runs the command over sg and appends its whole output to the
// log at once.
func (w *worker) logRun(ctx context.Context, sg *template.Segment) error {
	var out spill
	defer out.Close()
	if err := w.command(ctx, sg, &out); err != nil {
		return err
	}
	r, n := out.source()
	if w.ann.Tx == annot.Block {
		if err := w.outs.Begin(ctx); err != nil {
			return err
		}
		if _, err := w.outs.AppendFrom(ctx, r, n); err != nil {
			return errors.Join(err, w.outs.End(ctx))
		}
		return w.outs.End(ctx)
	}
	_, err := w.outs.AppendFrom(ctx, r, n)
	return err
}

// command runs the command over segment sg, its stdout to stdout.
func (w *worker) command(ctx context.Context, sg *template.Segment, stdout io.Writer) error {
	argv := w.cfg.Argv
	// In a process group of its own, killed whole when ctx ends, and dead
	// with its rank (package child): a command's own children (a shell's
	// pipeline) must not outlive an interrupted farm.
	cmd := child.Command(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bufio.NewReaderSize(io.NewSectionReader(sg, 0, sg.Extent), 1<<20)
	cmd.Stdout = stdout
	tail := &tailBuffer{max: 4 << 10}
	cmd.Stderr = tail
	env := w.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)],
		"PARIO_FARM_SEGMENT="+strconv.Itoa(sg.Index),
		"PARIO_FARM_RANK="+strconv.Itoa(w.cfg.Comm.Rank()))
	err := child.Run(cmd)
	if err == nil {
		w.segments++
		w.bytes += sg.Extent
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	se := &SegmentError{Index: sg.Index, Base: sg.Base, Extent: sg.Extent, Head: head(sg), Rank: w.cfg.Comm.Rank(),
		Argv: argv, Status: -1, Stderr: tail.String(), Err: err}
	if w.groups > 1 {
		se.Group = w.group
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		se.Status = ee.ExitCode()
	}
	// A failed write to the scratch file closes the command's stdout, and
	// the command then dies of SIGPIPE (or fails writing): the write's
	// error (a full $TMPDIR, say) is the cause, not the command's end.
	if sc, ok := stdout.(interface{ Err() error }); ok && sc.Err() != nil {
		se.Status, se.Err = -1, sc.Err()
	}
	return se
}

// head is the segment's first line, cut to 60 bytes.
func head(sg *template.Segment) string {
	p := make([]byte, min(60, sg.Extent))
	n, _ := sg.ReadAt(p, 0)
	p = p[:n]
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		p = p[:i]
	}
	return string(p)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut {
		return "..." + string(t.buf)
	}
	return string(t.buf)
}

// String is one line of progress for a terminal.
func (p Progress) String() string {
	pct := 100.0
	if p.Total > 0 {
		pct = 100 * float64(p.Bytes) / float64(p.Total)
	}
	verb := "handed out"
	if p.Done {
		verb = "done:"
	}
	return fmt.Sprintf("farm: %s %d segments, %.0f%% of the input (%s of %s), %.1fs",
		verb, p.Segments, pct, units.FormatBytes(p.Bytes), units.FormatBytes(p.Total), p.Elapsed.Seconds())
}
