package search

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pario/pario/tune/model"
	"github.com/pario/pario/tune/sim"
	"github.com/pario/pario/units"
)

// Recommend is `pario tune search` without the command line: the command
// parses its flags with ParseRequest, opens the results database, calls
// Recommend and prints the Recommendation with WriteText. Keeping the
// command that thin lets the flag checks and the report be tested in
// process (recommend_test.go) instead of by running the binary.

// Args are the flags of `pario tune search` that need checking. Size is
// already bytes (its flag is a units.SizeFlag); the ranges stay text, as
// MIN:MAX, and each bound is read by units.ParseSize.
type Args struct {
	Methods      string  // --method: comma separated names, or "all"
	Size         int64   // --size: bytes (a units.SizeFlag)
	Objective    string  // --objective: model or sim
	Budget       float64 // --budget: a fraction of the space (<= 1) or a count
	StripeCount  string  // --stripe-count MIN:MAX
	StripSize    string  // --strip-size MIN:MAX
	TransferSize string  // --transfer-size MIN:MAX
	// Targets, when above 0, is how many targets the recommendation may
	// use (the I/O servers of the cluster --apply sets it on): larger
	// stripe counts are not searched.
	Targets int
	// Files and ProcsPerFile (--files, --procs-per-file MIN:MAX) add the
	// dimensions of ParallelStriping unless both are "" or "1".
	Files, ProcsPerFile string
	// TrustModel lets a search with the model objective run although the
	// simulator disagrees with the model (the report warns instead).
	TrustModel bool
	// Experiments (--experiments) is the simulator's count per stripe
	// count with the sim objective; 0 means NewSimStriping's default.
	Experiments int
}

// Request is one recommendation to make.
type Request struct {
	Size      int64 // bytes of the file to write
	Space     *Space
	Methods   []Method
	Budget    int // evaluations per method
	Objective string
	// Model is the system: lambda, gamma, V.
	Model model.Params
	// Experiments and Seed: the simulator's with Objective "sim"; Seed is
	// also every method's.
	Experiments int
	Seed        uint64
	// System names the results in Store; empty means one derived from Model.
	System string
	// Store answers points already evaluated and keeps the new ones.
	Store ResultStore
	// Targets is Args.Targets; Capped is the stripe count maximum asked
	// for when Targets lowered it, else 0.
	Targets, Capped int
	// TrustModel is Args.TrustModel.
	TrustModel bool
	// Bench is the measurement of Objective "bench", set by the caller.
	Bench *Bench
	// Parallel: the space has the Files and ProcsPerFile dimensions and
	// the objective is ParallelStriping.
	Parallel bool
}

// ResultStore is the results database as a search sees it (tune/results
// implements it; it cannot be named here, as it imports this package).
type ResultStore interface {
	// Memo wraps obj so that its values are stored under system and
	// objective, and answered from the store when already there.
	Memo(system, objective, source string, obj Objective) (Memo, error)
	Path() string
}

// Memo is an Objective that counts its answers from the store (hits) and
// its new evaluations (misses).
type Memo interface {
	Objective
	Hits() int64
	Misses() int64
}

// MethodResult is one method's search.
type MethodResult struct {
	Method       string
	Result       *Result
	Hits, Misses int64
}

// Recommendation is what Recommend found.
type Recommendation struct {
	Request Request
	// ModelN is the model's optimal stripe count; Start the point every
	// method started from.
	ModelN int
	Start  Params
	// Methods in Request order; Best is the best of their results (nil
	// when no method evaluated a point).
	Methods      []MethodResult
	Best         *Result
	Hits, Misses int64
	DB           string
	// Check is the simulator's check of the model, made before a search
	// with the model objective (nil otherwise).
	Check *Agreement
	// Pick is the recommended point (see pick), PickValue its predicted
	// time and PickMethod the first method that found it. Found is the
	// stripe count as found when Pick lowered it to the file's number of
	// strips, else 0.
	Pick       Params
	PickValue  float64
	PickMethod string
	Found      int64
}

// ParseRequest checks the flags and parses the ranges; every error it returns
// is a usage error, naming the flag. The caller fills in Model,
// Experiments, Seed, System and Store.
func ParseRequest(a Args) (Request, error) {
	var req Request
	var err error
	if a.Size <= 0 {
		return req, fmt.Errorf("--size %d: must be positive", a.Size)
	}
	req.Size = a.Size
	req.TrustModel = a.TrustModel
	dims := TableIVSequential()
	for i, fl := range []struct{ name, val string }{{"stripe-count", a.StripeCount}, {"strip-size", a.StripSize}, {"transfer-size", a.TransferSize}} {
		parse := func(s string) (int64, error) { return units.ParseSize(s) }
		if i == 0 {
			parse = parseCount
		}
		if dims[i].Min, dims[i].Max, err = parseRange(fl.name, fl.val, parse); err != nil {
			return req, err
		}
	}
	if one := func(v string) bool { return v == "" || v == "1" || v == "1:1" }; !one(a.Files) || !one(a.ProcsPerFile) {
		req.Parallel = true
		par := TableIVFiles()[3:]
		for i, fl := range []struct{ name, val string }{{"files", a.Files}, {"procs-per-file", a.ProcsPerFile}} {
			if fl.val == "" {
				fl.val = "1"
			}
			if par[i].Min, par[i].Max, err = parseRange(fl.name, fl.val, parseCount); err != nil {
				return req, err
			}
		}
		dims = append(dims, par...)
		if a.Objective != "model" {
			return req, fmt.Errorf("--files and --procs-per-file: only --objective model prices them (got %q)", a.Objective)
		}
	}
	// A layout of more datafiles than the cluster has servers cannot be
	// set: check it now rather than after the search.
	if req.Targets = a.Targets; a.Targets > 0 {
		if dims[0].Min > int64(a.Targets) {
			return req, fmt.Errorf("--stripe-count %q: the cluster has %d I/O servers, fewer than the smallest stripe count", a.StripeCount, a.Targets)
		}
		if dims[0].Max > int64(a.Targets) {
			req.Capped = int(dims[0].Max)
			dims[0].Max = int64(a.Targets)
		}
	}
	if req.Space, err = NewSpace(dims...); err != nil {
		return req, err
	}
	budget := a.Budget
	switch {
	case math.IsNaN(budget) || budget <= 0:
		return req, fmt.Errorf("--budget %v: want a fraction of the space in (0, 1] or a count above 1", budget)
	case budget <= 1:
		req.Budget = max(1, int(math.Ceil(budget*float64(req.Space.Size()))))
	case budget != math.Trunc(budget) || budget > 1e9:
		return req, fmt.Errorf("--budget %v: a count must be a whole number", budget)
	default:
		req.Budget = int(budget)
	}
	for name := range strings.SplitSeq(a.Methods, ",") {
		name = strings.TrimSpace(name)
		if name == "all" {
			req.Methods = append(req.Methods, Heuristics()...)
			continue
		}
		m, err := MethodByName(name)
		if err != nil {
			return req, fmt.Errorf("--method: %v, or all", err)
		}
		if _, ok := m.(Exhaustive); ok {
			if err := checkExhaustive(req.Space); err != nil {
				return req, fmt.Errorf("--method %w", err)
			}
		}
		req.Methods = append(req.Methods, m)
	}
	switch a.Objective {
	case "sim":
		if a.Experiments < 0 || a.Experiments > sim.MaxExperiments {
			return req, fmt.Errorf("--experiments %d: want a count of simulated experiments from 1 to %d", a.Experiments, sim.MaxExperiments)
		}
		req.Objective, req.Experiments = a.Objective, a.Experiments
	case "model":
		req.Objective = a.Objective
	case "bench":
		// Every evaluation is a benchmark run: a fraction of the space
		// would be thousands of them.
		req.Objective = a.Objective
		if budget <= 1 {
			return req, fmt.Errorf("--objective bench: give --budget as a count of pario bench runs per method (e.g. 20), not a fraction (%v of the space is %d runs)", budget, req.Budget)
		}
		for _, m := range req.Methods {
			if _, ok := m.(Exhaustive); ok && req.Space.Size() > MaxBenchExhaustive {
				return req, fmt.Errorf("--objective bench --method exhaustive: the space has %d points, more than the %d pario bench runs an exhaustive measurement makes; narrow the bounds", req.Space.Size(), MaxBenchExhaustive)
			}
		}
	default:
		return req, fmt.Errorf("--objective %q: want model, sim, bench or farm", a.Objective)
	}
	return req, nil
}

// MaxBenchExhaustive is the largest space `--objective bench --method
// exhaustive` measures: a run takes a second or more.
const MaxBenchExhaustive = 500

// MaxExhaustive is the largest space `--method exhaustive` evaluates: with
// the model a point costs microseconds and a database record, so a million
// points take about a minute; beyond that the bounds should be narrowed.
const MaxExhaustive = 1_000_000

// checkExhaustive refuses a space too large to evaluate entirely. The
// exhaustive method is the reference the heuristics are judged by, so it
// is never cut short by --budget: it evaluates every point or none.
func checkExhaustive(space *Space) error {
	if n := space.Size(); n > MaxExhaustive {
		return fmt.Errorf("exhaustive: the space has %d points, more than the %d an exhaustive search evaluates; narrow --stripe-count, --strip-size or --transfer-size", n, MaxExhaustive)
	}
	return nil
}

// parseRange parses "MIN:MAX" (or one value for both) with parse.
func parseRange(flag, s string, parse func(string) (int64, error)) (lo, hi int64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		b = a
	}
	if lo, err = parse(a); err == nil {
		hi, err = parse(b)
	}
	if err != nil {
		example := map[string]string{"stripe-count": "1:160", "files": "1:128", "procs-per-file": "1:16",
			"farm-group": "1:8", "farm-ranks": "2:8"}[flag]
		if example == "" {
			example = "1m:256m" // the sizes: strip, transfer
		}
		return 0, 0, fmt.Errorf("--%s %q: %v (want MIN:MAX, e.g. %s)", flag, s, err, example)
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("--%s %q: inverted bounds: %d > %d", flag, s, lo, hi)
	}
	return lo, hi, nil
}

func parseCount(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if v < 1 {
		return 0, fmt.Errorf("%d is not positive", v)
	}
	return v, nil
}

// MethodNames lists the heuristics' names, for help texts.
func MethodNames() string {
	var names []string
	for _, m := range Heuristics() {
		names = append(names, m.Name())
	}
	return strings.Join(names, ", ")
}

// DefaultSystem is the system name of results made with model parameters p.
func DefaultSystem(p model.Params) string {
	return fmt.Sprintf("sim:lambda=%g,gamma=%g,V=%g", p.Lambda, p.Gamma, p.V)
}

// Recommend runs every method of req on the Striping objective (analytic,
// or with simulated waiting times) for a file of req.Size bytes, each
// starting from the model's optimal stripe count, through req.Store, and
// returns the best. No method finding a point is not an error here: the
// report still shows the table (Best is nil).
func Recommend(ctx context.Context, req Request) (Recommendation, error) {
	rec := Recommendation{Request: req}
	p := req.Model
	st := PaperStriping(req.Size)
	st.Model = p
	if err := p.Validate(); err != nil {
		return rec, err
	}
	if req.Store == nil {
		return rec, fmt.Errorf("search: recommend: no results store")
	}
	dims := req.Space.Dims()
	maxCount := dims[0].Values[len(dims[0].Values)-1]
	var obj Objective
	var objID, source string
	switch req.Objective {
	case "model":
		check, err := checkModel(ctx, p, req.Size, int(maxCount), CheckExperiments, req.Seed)
		if err != nil {
			return rec, err
		}
		rec.Check = &check
		if !check.OK() && !req.TrustModel {
			return rec, fmt.Errorf("search: %s: the model cannot be trusted for this system; search with --objective sim, or give --trust-model", check)
		}
		obj, objID, source = st, st.ID(), "model"
		if req.Parallel {
			// The system's targets: the cluster's, else the largest stripe
			// count (Table IV's 160).
			ps := ParallelStriping{Striping: st, Targets: int(maxCount)}
			if req.Targets > 0 {
				ps.Targets = req.Targets
			}
			obj, objID = ps, ps.ID()
		}
	case "sim":
		ss, err := NewSimStriping(st, req.Experiments, req.Seed, 0)
		if err != nil {
			return rec, err
		}
		if err := ss.Prefetch(ctx, int(maxCount)); err != nil {
			return rec, err
		}
		obj, objID, source = ss, ss.ID(), "simulator"
	case "bench":
		if req.Bench == nil {
			return rec, fmt.Errorf("search: objective bench: no benchmark settings")
		}
		if err := req.Bench.Validate(); err != nil {
			return rec, err
		}
		obj, objID, source = *req.Bench, req.Bench.ID(), "bench"
	default:
		return rec, fmt.Errorf("search: objective %q: want model, sim or bench", req.Objective)
	}
	system := req.System
	switch {
	case system != "":
	case req.Objective == "bench":
		system = req.Bench.System()
	default:
		system = DefaultSystem(p)
	}
	rec.DB = req.Store.Path()

	// The model proposes the starting point: its optimal stripe count for
	// this size (strip and transfer sizes mid-range).
	nModel, _, err := model.OptimalN(p, float64(req.Size)/1e9, int(maxCount))
	if err != nil {
		return rec, err
	}
	start, err := req.Space.Nearest(Params{{Name: StripeCount, Value: int64(nModel)}})
	if err != nil {
		return rec, err
	}
	rec.ModelN, rec.Start = nModel, req.Space.Params(start)
	for _, m := range req.Methods {
		memo, err := req.Store.Memo(system, objID, source, obj)
		if err != nil {
			return rec, err
		}
		budget := req.Budget
		_, exhaustive := m.(Exhaustive)
		if exhaustive {
			if err := checkExhaustive(req.Space); err != nil {
				return rec, err
			}
			budget = int(req.Space.Size())
		}
		r, err := Run(ctx, req.Space, memo, m, Options{Budget: budget, Seed: req.Seed, Start: start})
		if err != nil {
			return rec, fmt.Errorf("%s: %w", m.Name(), err)
		}
		if exhaustive && int64(r.Evaluations) != req.Space.Size() {
			return rec, fmt.Errorf("exhaustive: evaluated %d of the %d points (%v)", r.Evaluations, req.Space.Size(), r.Stop)
		}
		rec.Hits += memo.Hits()
		rec.Misses += memo.Misses()
		rec.Methods = append(rec.Methods, MethodResult{Method: m.Name(), Result: r, Hits: memo.Hits(), Misses: memo.Misses()})
		if r.Best != nil && (rec.Best == nil || r.BestValue < rec.Best.BestValue) {
			rec.Best = r
		}
	}
	rec.pick(req.Size)
	return rec, nil
}

// tieTolerance is how close, relatively, a time must be to the best to tie
// with it. Ties are common, not accidental: every stripe count at or above
// the file's number of strips gives the same time, and strips of s and 2s
// often load the busiest target alike.
const tieTolerance = 1e-9

// pick chooses the recommendation among every point any method evaluated
// that ties with the best: the fewest targets (a target more costs a server
// and gains nothing), then the smallest strip and transfer sizes (less
// memory per request). A stripe count above the file's number of strips
// ceil(size/strip) would leave targets without data, and the objective
// cannot tell (T depends on min(count, strips)), so it is lowered to the
// number of strips, at the same predicted time, even below the searched
// range.
func (rec *Recommendation) pick(size int64) {
	if rec.Best == nil {
		return
	}
	limit := rec.Best.BestValue + math.Abs(rec.Best.BestValue)*tieTolerance
	space := rec.Request.Space
	var best Params
	for _, m := range rec.Methods {
		for _, e := range m.Result.Trace {
			if e.Value > limit {
				continue
			}
			ps := space.Params(e.Point)
			if best == nil || lessStriping(ps, best) {
				best, rec.PickValue, rec.PickMethod = ps, e.Value, m.Method
			}
		}
	}
	n, s, _ := striping(best)
	if strips := (size + s - 1) / s; n > strips {
		rec.Found = n
		best = slices.Clone(best)
		for i := range best {
			if best[i].Name == StripeCount {
				best[i].Value = strips
			}
		}
	}
	rec.Pick = best
}

// lessStriping orders points by stripe count, then strip size, then
// transfer size.
func lessStriping(a, b Params) bool {
	an, as, at := striping(a)
	bn, bs, bt := striping(b)
	if an != bn {
		return an < bn
	}
	if as != bs {
		return as < bs
	}
	if at != bt {
		return at < bt
	}
	// Fewer files, then fewer processes: the same time with less.
	af, _ := a.Get(Files)
	bf, _ := b.Get(Files)
	if af != bf {
		return af < bf
	}
	ap, _ := a.Get(ProcsPerFile)
	bp, _ := b.Get(ProcsPerFile)
	return ap < bp
}

// parallelNote names the assumptions of ParallelStriping in the report.
const parallelNote = "files on consecutive targets, a 10 Gbit/s client per process, a lock pass per process sharing a strip (assumed, not the paper's)"

// parallelTargets is the system's target count a parallel search assumes.
func parallelTargets(req Request) int {
	if req.Targets > 0 {
		return req.Targets
	}
	d := req.Space.Dims()[0].Values
	return int(d[len(d)-1])
}

// Striping returns the best point's stripe count, strip size and transfer
// size (zeros when there is none).
func (rec Recommendation) Striping() (n, s, t int64) {
	if rec.Best == nil {
		return 0, 0, 0
	}
	return striping(rec.Pick)
}

// Layout is the recommendation as a pario layout string.
func (rec Recommendation) Layout() string {
	n, s, _ := rec.Striping()
	return fmt.Sprintf("simple_stripe:strip_size=%s,num_datafiles=%d", units.FormatSize(s), n)
}

// Title is the search-trace figure's title.
func (rec Recommendation) Title() string {
	return fmt.Sprintf("Search for a %s file (%s objective)", units.FormatBytesExact(rec.Request.Size), rec.Request.Objective)
}

func striping(ps Params) (n, s, t int64) {
	n, _ = ps.Get(StripeCount)
	s, _ = ps.Get(StripSize)
	t, _ = ps.Get(TransferSize)
	return n, s, t
}

// WriteText writes the report of `pario tune search`: the setting, one
// row per method, the database's totals and, when there is one, the
// recommendation as commands for directory dir.
func WriteText(w io.Writer, rec Recommendation, dir string) error {
	req := rec.Request
	dims := req.Space.Dims()
	size := float64(req.Size)
	var b bytes.Buffer
	fmt.Fprintf(&b, "search: %s file, objective %s, %s\n", units.FormatBytesExact(req.Size), req.Objective, req.Model.Describe())
	switch {
	case req.Objective == "bench" && req.Bench != nil:
		where := fmt.Sprintf("an embedded cluster of %d I/O servers per run", req.Bench.Servers)
		if req.Bench.Cluster != "" {
			where = "the cluster " + req.Bench.Cluster
		}
		fmt.Fprintf(&b, "objective: measured: the mean write time of pario bench on %s (%d rank(s), %d repetition(s), the first set aside when more, fsync)\n",
			where, req.Bench.Ranks, req.Bench.Repetitions)
	default:
		waits := "the model's"
		if req.Objective == "sim" {
			waits = "simulated"
		}
		fmt.Fprintf(&b, "objective: write time with %s waits, %s\n", waits, PaperStriping(req.Size).Describe())
	}
	budget := fmt.Sprintf("budget %d per method", req.Budget)
	for _, m := range req.Methods {
		if _, ok := m.(Exhaustive); ok {
			budget += fmt.Sprintf(" (exhaustive: all %d)", req.Space.Size())
			break
		}
	}
	fmt.Fprintf(&b, "space: %d points (stripe count %d..%d, strip size %s..%s, transfer size %s..%s), %s, seed %d\n",
		req.Space.Size(), dims[0].Values[0], dims[0].Values[len(dims[0].Values)-1],
		units.FormatBytesExact(dims[1].Values[0]), units.FormatBytesExact(dims[1].Values[len(dims[1].Values)-1]),
		units.FormatBytesExact(dims[2].Values[0]), units.FormatBytesExact(dims[2].Values[len(dims[2].Values)-1]), budget, req.Seed)
	if req.Parallel {
		fmt.Fprintf(&b, "       files %d..%d, processes per file %d..%d on %d targets: %s\n", dims[3].Values[0], dims[3].Values[len(dims[3].Values)-1],
			dims[4].Values[0], dims[4].Values[len(dims[4].Values)-1], parallelTargets(req), parallelNote)
	}
	if req.Capped > 0 {
		fmt.Fprintf(&b, "stripe count limited to %d (of %d asked): the cluster has %d I/O servers\n", req.Targets, req.Capped, req.Targets)
	}
	if rec.Check != nil {
		fmt.Fprintln(&b, rec.Check)
		if !rec.Check.OK() {
			fmt.Fprintln(&b, "warning: searching the model anyway (--trust-model)")
		}
	}
	fmt.Fprintf(&b, "model's proposal: stripe count %d (start: %s)\n\n", rec.ModelN, rec.Start)

	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	extra, extraDash := "", ""
	if req.Parallel {
		extra, extraDash = "files\tprocs/file\t", "-\t-\t"
	}
	fmt.Fprintln(tw, "method\tstripe count\tstrip size\ttransfer size\t"+extra+"time (s)\tMiB/s\tevals\thits\tmisses\t")
	for _, m := range rec.Methods {
		r := m.Result
		if r.Best == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s-\t-\t%d\t%d\t%d\t\n", m.Method, extraDash, r.Evaluations, m.Hits, m.Misses)
			continue
		}
		n, s, t := striping(r.BestParams)
		cols := ""
		if req.Parallel {
			f, _ := r.BestParams.Get(Files)
			p, _ := r.BestParams.Get(ProcsPerFile)
			cols = fmt.Sprintf("%d\t%d\t", f, p)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s%.3f\t%.1f\t%d\t%d\t%d\t\n", m.Method, n, units.FormatBytesExact(s), units.FormatBytesExact(t), cols,
			r.BestValue, size/(1<<20)/r.BestValue, r.Evaluations, m.Hits, m.Misses)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\ndatabase %s: %d hits, %d misses\n", rec.DB, rec.Hits, rec.Misses)
	if rec.Best == nil {
		_, err := w.Write(b.Bytes())
		return err
	}
	n, s, t := rec.Striping()
	how := "predicted"
	if req.Objective == "bench" {
		how = "measured"
	}
	fmt.Fprintf(&b, "recommendation: stripe count %d, strip size %s, transfer size %s: %.3f s %s, %.1f MiB/s (found by %s)\n",
		n, units.FormatBytesExact(s), units.FormatBytesExact(t), rec.PickValue, how, size/(1<<20)/rec.PickValue, rec.PickMethod)
	if rec.Found > 0 {
		fmt.Fprintf(&b, "  (found with stripe count %d, but the file has only %d strips of %s: %d targets would get no data)\n",
			rec.Found, n, units.FormatBytesExact(s), rec.Found-n)
	}
	if req.Parallel {
		f, _ := rec.Pick.Get(Files)
		p, _ := rec.Pick.Get(ProcsPerFile)
		fmt.Fprintf(&b, "  write %d file(s) of %s, each by %d processes (%d processes in all)\n", f, units.FormatBytesExact((req.Size+f-1)/f), p, f*p)
	}
	fmt.Fprintf(&b, "  Lustre: lfs setstripe -c %d -S %s %s\n", n, strings.ToUpper(units.FormatSize(s)), dir)
	fmt.Fprintf(&b, "  pario:  pario layout set %s %s\n", dir, rec.Layout())
	fmt.Fprintf(&b, "  write in %s transfers (e.g. pario bench -t %s, ior -t %s)\n", units.FormatBytesExact(t), units.FormatSize(t), units.FormatSize(t))
	_, err := w.Write(b.Bytes())
	return err
}
