package search

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The dimensions of a farm search: `pario farm`'s --group (ranks per
// output file) and -N (ranks).
const (
	FarmGroup = "group"
	FarmRanks = "ranks"
)

// Farm is the objective of `pario tune search --objective farm`: every
// evaluation runs `pario farm` over the user's input, annotations and
// command with the point's group size (and number of ranks), Repetitions
// times, and its value is the fastest run's wall time in seconds. The
// fastest, not the mean: on a shared machine the noise only ever adds
// time. Runs go through another process, as Bench's do, since tune/...
// may not import the farm itself; the outputs go to Dir and are removed.
type Farm struct {
	// Exe is the pario binary.
	Exe string
	// In and Annotations are `pario farm`'s --in and --annotations; Argv
	// its command.
	In, Annotations string
	Argv            []string
	// Block is --block (0: farm's default).
	Block       int64
	Repetitions int
	// Dir receives the runs' outputs.
	Dir string
	// Run runs pario with args once and returns its wall time in seconds;
	// nil runs Exe and times it.
	Run func(ctx context.Context, args []string) (float64, error)
}

// Validate checks the settings.
func (f Farm) Validate() error {
	switch {
	case f.Exe == "" && f.Run == nil:
		return errors.New("search: farm objective: no pario binary")
	case f.In == "":
		return errors.New("search: farm objective: no input (--farm-in)")
	case len(f.Argv) == 0:
		return errors.New("search: farm objective: no command (give it after --)")
	case f.Repetitions < 1:
		return fmt.Errorf("search: farm objective: %d repetitions: want at least 1", f.Repetitions)
	case f.Block < 0:
		return fmt.Errorf("search: farm objective: block %d is negative", f.Block)
	case f.Dir == "":
		return errors.New("search: farm objective: no directory for the outputs")
	}
	return nil
}

// ID describes the objective for a results database key: the input (by
// absolute path, size and modification time: a changed input is another
// result), the annotation file's contents, the command and the block.
// Params add the group size and ranks. Repetitions are left out: they
// make a time more trustworthy, not another configuration, and `pario
// farm --group auto` finds the record without knowing them.
func (f Farm) ID() (string, error) {
	in, err := filepath.Abs(f.In)
	if err != nil {
		return "", fmt.Errorf("search: farm objective: input %s: %w", f.In, err)
	}
	fi, err := os.Stat(in)
	if err != nil {
		return "", fmt.Errorf("search: farm objective: %w", err)
	}
	ann := "env"
	if f.Annotations != "" {
		b, err := os.ReadFile(f.Annotations)
		if err != nil {
			return "", fmt.Errorf("search: farm objective: %w", err)
		}
		ann = fmt.Sprintf("%x", sha256.Sum256(b))[:16]
	} else if v := os.Getenv("PARIO_ANNOTATIONS"); v != "" {
		ann = "env:" + v
	}
	return fmt.Sprintf("farm/v1 in=%s size=%d mtime=%d annotations=%s argv=%q block=%d",
		in, fi.Size(), fi.ModTime().UnixNano(), ann, f.Argv, f.Block), nil
}

// Args are the pario arguments of one run with group g on r ranks, its
// output under out.
func (f Farm) Args(g, r int64, out string) []string {
	args := []string{"farm", "-q", "-N", strconv.FormatInt(r, 10), "--group", strconv.FormatInt(g, 10),
		"--in", f.In, "--out", out}
	if f.Annotations != "" {
		args = append(args, "--annotations", f.Annotations)
	}
	if f.Block > 0 {
		args = append(args, "--block", strconv.FormatInt(f.Block, 10))
	}
	return append(append(args, "--"), f.Argv...)
}

// Evaluate runs the farm for the point. A group larger than the ranks is
// infeasible (+Inf, not run): it would be the same run as a group of all
// the ranks.
func (f Farm) Evaluate(ctx context.Context, x Params) (float64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	g, ok := x.Get(FarmGroup)
	if !ok || g < 1 {
		return 0, fmt.Errorf("search: farm objective: point %v has no group size", x)
	}
	r, ok := x.Get(FarmRanks)
	if !ok || r < 1 {
		return 0, fmt.Errorf("search: farm objective: point %v: %d ranks", x, r)
	}
	if g > r {
		return math.Inf(1), nil
	}
	out := filepath.Join(f.Dir, fmt.Sprintf("out-g%d-r%d", g, r))
	args := f.Args(g, r, out)
	run := f.Run
	if run == nil {
		run = f.exec
	}
	best := math.Inf(1)
	for range f.Repetitions {
		t, err := run(ctx, args)
		removeOutputs(out)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("pario %s: %w", strings.Join(args, " "), err)
		}
		best = min(best, t)
	}
	return best, nil
}

// exec runs Exe and times it; a failure carries the end of its stderr,
// where the farm names the failing segment.
func (f Farm) exec(ctx context.Context, args []string) (float64, error) {
	cmd := exec.CommandContext(ctx, f.Exe, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		msg := stderr.String()
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return 0, fmt.Errorf("%w: %s", err, strings.TrimSpace(msg))
	}
	return d.Seconds(), nil
}

// removeOutputs removes a run's output files: OUT.0, OUT.1, ... with
// --group.
func removeOutputs(out string) {
	names, _ := filepath.Glob(out + ".*")
	for _, n := range append(names, out) {
		os.Remove(n)
	}
}

// FarmRequest is a search of farm layouts.
type FarmRequest struct {
	Farm Farm
	// Groups and Ranks are "MIN:MAX" (powers of two from MIN to MAX, and
	// both bounds) or one value.
	Groups, Ranks string
	// System names the results in Store; empty means FarmSystem().
	System string
	Store  ResultStore
}

// MaxFarmPoints bounds a farm search: every point is a real run (or
// several), and the search is exhaustive.
const MaxFarmPoints = 64

// FarmSystem is the results database's default system name of farm
// searches: the machine the runs were timed on.
func FarmSystem() string {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return "farm:" + host
}

// FarmSpace is the space of a farm search: group sizes and ranks.
func FarmSpace(groups, ranks string) (*Space, error) {
	glo, ghi, err := parseRange("farm-group", groups, parseCount)
	if err != nil {
		return nil, err
	}
	rlo, rhi, err := parseRange("farm-ranks", ranks, parseCount)
	if err != nil {
		return nil, err
	}
	s, err := NewSpace(Dim{Name: FarmGroup, Kind: Pow2, Min: glo, Max: ghi}, Dim{Name: FarmRanks, Kind: Pow2, Min: rlo, Max: rhi})
	if err != nil {
		return nil, err
	}
	if s.Size() > MaxFarmPoints {
		return nil, fmt.Errorf("--farm-group %q, --farm-ranks %q: %d points, more than the %d real runs a farm search makes; narrow them", groups, ranks, s.Size(), MaxFarmPoints)
	}
	return s, nil
}

// FarmRecommendation is what SearchFarm found.
type FarmRecommendation struct {
	Request      FarmRequest
	Space        *Space
	Result       *Result
	Hits, Misses int64
	DB, System   string
	// Best is the fastest point (nil when no point was feasible), Value
	// its wall time in seconds.
	Best  Params
	Value float64
}

// SearchFarm runs every point of the farm space through req.Store (a
// point measured before, with the same input, annotations, command and
// settings, is not run again) and returns the fastest.
func SearchFarm(ctx context.Context, req FarmRequest) (FarmRecommendation, error) {
	rec := FarmRecommendation{Request: req}
	if req.Store == nil {
		return rec, errors.New("search: farm: no results store")
	}
	if err := req.Farm.Validate(); err != nil {
		return rec, err
	}
	space, err := FarmSpace(req.Groups, req.Ranks)
	if err != nil {
		return rec, err
	}
	rec.Space = space
	id, err := req.Farm.ID()
	if err != nil {
		return rec, err
	}
	rec.System = req.System
	if rec.System == "" {
		rec.System = FarmSystem()
	}
	memo, err := req.Store.Memo(rec.System, id, "farm", req.Farm)
	if err != nil {
		return rec, err
	}
	rec.DB = req.Store.Path()
	r, err := Run(ctx, space, memo, Exhaustive{}, Options{Budget: int(space.Size())})
	if err != nil {
		return rec, fmt.Errorf("farm search: %w", err)
	}
	rec.Result, rec.Hits, rec.Misses = r, memo.Hits(), memo.Misses()
	if r.Best != nil && !math.IsInf(r.BestValue, 1) {
		rec.Best, rec.Value = space.Params(r.Best), r.BestValue
	}
	return rec, nil
}

// Group is the recommended group size and ranks (0, 0 when none).
func (rec FarmRecommendation) Group() (group, ranks int64) {
	if rec.Best == nil {
		return 0, 0
	}
	group, _ = rec.Best.Get(FarmGroup)
	ranks, _ = rec.Best.Get(FarmRanks)
	return group, ranks
}

// WriteFarmText writes the table of every point's wall time, fastest
// first, and the recommendation as a pario farm command.
func WriteFarmText(w io.Writer, rec FarmRecommendation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "farm search: %s over %s, %d points (%d from the database, %d run)\n",
		strings.Join(rec.Request.Farm.Argv, " "), rec.Request.Farm.In, rec.Space.Size(), rec.Hits, rec.Misses)
	fmt.Fprintf(&b, "results: %s, system %s\n\n", rec.DB, rec.System)
	fmt.Fprintf(&b, "%6s %6s %12s\n", "ranks", "group", "wall (s)")
	if rec.Result != nil {
		evals := slices.Clone(rec.Result.Trace)
		// Fastest first; a stable sort keeps ties in trace order.
		slices.SortStableFunc(evals, func(a, b Eval) int { return cmp.Compare(a.Value, b.Value) })
		for _, e := range evals {
			if math.IsInf(e.Value, 1) {
				continue
			}
			ps := rec.Space.Params(e.Point)
			g, _ := ps.Get(FarmGroup)
			r, _ := ps.Get(FarmRanks)
			fmt.Fprintf(&b, "%6d %6d %12.3f\n", r, g, e.Value)
		}
	}
	g, r := rec.Group()
	if rec.Best == nil {
		b.WriteString("\nno feasible point (every group larger than the ranks)\n")
	} else {
		var words []string
		for _, a := range rec.Request.Farm.Args(g, r, "OUT") {
			if a != "-q" { // the search's runs are quiet; the user's need not be
				words = append(words, shellQuote(a))
			}
		}
		fmt.Fprintf(&b, "\nrecommended: -N %d --group %d (%.3f s)\n  pario %s\n", r, g, rec.Value, strings.Join(words, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FarmGroupFrom picks the group size of the fastest run on ranks ranks
// among stored farm results, which each calls fn with (the results
// database's Each for a system and a Farm's ID, as `pario farm --group
// auto` reads it); ok is false when none was measured on that many ranks.
func FarmGroupFrom(ranks int64, each func(fn func(x Params, wall float64) error) error) (group int64, wall float64, ok bool, err error) {
	wall = math.Inf(1)
	err = each(func(x Params, v float64) error {
		g, gok := x.Get(FarmGroup)
		r, rok := x.Get(FarmRanks)
		if gok && rok && r == ranks && !math.IsInf(v, 1) && (!ok || v < wall || (v == wall && g < group)) {
			group, wall, ok = g, v, true
		}
		return nil
	})
	return group, wall, ok, err
}

// shellQuote quotes s for a POSIX shell when it needs it, so that the
// recommended command can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+-@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
