package search

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/pario/pario/tune/model"
	"github.com/pario/pario/tune/sim"
)

// Groups is the dimension of the multi-group space: m, the number of files
// (groups of processes, each writing one file) a job is written as.
const Groups = "groups"

// The paper's future work: a job of M GB written by m groups at once, each
// group's file (M/m GB) striped over n of the system's N targets chosen at
// random, so that blocks of several groups may share a target. Which (m, n)
// minimises the time to the last block has no closed form; the simulator
// (sim.RunGroups) is the model, and the search looks over (m, n).

// GroupSim is the multi-group objective: the simulated mean time of the
// job for the point's Groups (m) and StripeCount (n). The same Seed gives
// every point the same background traffic (common random numbers), so the
// differences between points are estimated more precisely than their
// values.
type GroupSim struct {
	Model       model.Params
	Size        float64 // GB, the whole job
	Targets     int     // N
	Experiments int
	Seed        uint64
}

// ID describes the objective and its settings, for a results database key.
func (g GroupSim) ID() string {
	return fmt.Sprintf("groups-sim/v1 lambda=%g gamma=%g V=%g size=%gGB targets=%d experiments=%d seed=%d",
		g.Model.Lambda, g.Model.Gamma, g.Model.V, g.Size, g.Targets, g.Experiments, g.Seed)
}

// Evaluate implements Objective on a space with the Groups and StripeCount
// dimensions.
func (g GroupSim) Evaluate(ctx context.Context, x Params) (float64, error) {
	m, ok1 := x.Get(Groups)
	n, ok2 := x.Get(StripeCount)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("search: groups objective needs %s and %s, got %v", Groups, StripeCount, x)
	}
	r, err := sim.RunGroups(ctx, sim.Config{
		Lambda: g.Model.Lambda, Gamma: g.Model.Gamma, V: g.Model.V, FileSize: g.Size,
		Stripes: int(n), Time: 20, Experiments: g.Experiments, Seed: g.Seed,
	}, int(m), g.Targets)
	if err != nil {
		return 0, err
	}
	return r.Mean, nil
}

// GroupsRequest is one multi-group search (`pario tune groups`).
type GroupsRequest struct {
	Model       model.Params
	Size        float64 // GB, the whole job
	Targets     int     // N
	MaxGroups   int     // m is searched in 1..MaxGroups
	Methods     []Method
	Budget      int // evaluations per heuristic; exhaustive evaluates all
	Experiments int // per point
	Seed        uint64
	System      string
	Store       ResultStore
}

// ParseGroups checks the flags of `pario tune groups`; its errors are usage
// errors naming the flag.
func ParseGroups(size float64, targets, maxGroups int, methods string, budget float64, experiments int) (GroupsRequest, error) {
	var req GroupsRequest
	switch {
	case !(size > 0) || math.IsInf(size, 0):
		return req, fmt.Errorf("--size %v: must be a positive number of GB", size)
	case targets < 1:
		return req, fmt.Errorf("--targets %d: must be at least 1", targets)
	case maxGroups < 1:
		return req, fmt.Errorf("--max-groups %d: must be at least 1", maxGroups)
	case experiments < 1:
		return req, fmt.Errorf("--experiments %d: must be at least 1", experiments)
	}
	req.Size, req.Targets, req.MaxGroups, req.Experiments = size, targets, maxGroups, experiments
	space, err := req.Space()
	if err != nil {
		return req, err
	}
	switch {
	case math.IsNaN(budget) || budget <= 0:
		return req, fmt.Errorf("--budget %v: want a fraction of the space in (0, 1] or a count above 1", budget)
	case budget <= 1:
		req.Budget = max(1, int(math.Ceil(budget*float64(space.Size()))))
	default:
		req.Budget = int(budget)
	}
	for name := range strings.SplitSeq(methods, ",") {
		m, err := MethodByName(strings.TrimSpace(name))
		if err != nil {
			return req, fmt.Errorf("--method: %v", err)
		}
		req.Methods = append(req.Methods, m)
	}
	return req, nil
}

// Space is the (m, n) space: Groups 1..MaxGroups, StripeCount 1..Targets.
func (req GroupsRequest) Space() (*Space, error) {
	return NewSpace(
		Dim{Name: Groups, Kind: Int, Min: 1, Max: int64(req.MaxGroups)},
		Dim{Name: StripeCount, Kind: Int, Min: 1, Max: int64(req.Targets)},
	)
}

// GroupsResult is what SearchGroups found.
type GroupsResult struct {
	Request GroupsRequest
	Methods []MethodResult
	Best    *Result
	// One is the simulated time of the one-file job (m = 1) on the model's
	// optimal n, OneN: the paper's model's answer, for comparison.
	One          float64
	OneN         int
	Hits, Misses int64
	DB           string
}

// SearchGroups runs every method of req over the (m, n) space, each
// starting from m = 1 and the model's optimal n, through req.Store.
func SearchGroups(ctx context.Context, req GroupsRequest) (GroupsResult, error) {
	res := GroupsResult{Request: req}
	if err := req.Model.Validate(); err != nil {
		return res, err
	}
	if req.Store == nil {
		return res, fmt.Errorf("search: groups: no results store")
	}
	space, err := req.Space()
	if err != nil {
		return res, err
	}
	obj := GroupSim{Model: req.Model, Size: req.Size, Targets: req.Targets, Experiments: req.Experiments, Seed: req.Seed}
	system := req.System
	if system == "" {
		system = DefaultSystem(req.Model)
	}
	res.DB = req.Store.Path()
	n, _, err := model.OptimalN(req.Model, req.Size, req.Targets)
	if err != nil {
		return res, err
	}
	res.OneN = n
	start, err := space.PointOf(Params{{Name: Groups, Value: 1}, {Name: StripeCount, Value: int64(n)}})
	if err != nil {
		return res, err
	}
	for _, m := range req.Methods {
		memo, err := req.Store.Memo(system, obj.ID(), "simulator", obj)
		if err != nil {
			return res, err
		}
		budget := req.Budget
		if _, ok := m.(Exhaustive); ok {
			budget = int(space.Size())
		}
		r, err := Run(ctx, space, memo, m, Options{Budget: budget, Seed: req.Seed, Start: start})
		if err != nil {
			return res, fmt.Errorf("%s: %w", m.Name(), err)
		}
		res.Hits += memo.Hits()
		res.Misses += memo.Misses()
		res.Methods = append(res.Methods, MethodResult{Method: m.Name(), Result: r, Hits: memo.Hits(), Misses: memo.Misses()})
		if r.Best != nil && (res.Best == nil || r.BestValue < res.Best.BestValue) {
			res.Best = r
		}
		// Every method evaluates its start first: the one-file answer.
		if v, ok := lookup(r, start); ok {
			res.One = v
		}
	}
	return res, nil
}

func lookup(r *Result, p Point) (float64, bool) {
	for _, e := range r.Trace {
		if e.Point.Equal(p) {
			return e.Value, true
		}
	}
	return 0, false
}

// WriteGroupsText writes the report of `pario tune groups`.
func WriteGroupsText(w io.Writer, res GroupsResult) error {
	req := res.Request
	var b bytes.Buffer
	fmt.Fprintf(&b, "groups: a %g GB job written as m files at once, each on n of %d targets chosen at random, %s\n", req.Size, req.Targets, req.Model.Describe())
	fmt.Fprintf(&b, "space: m 1..%d x n 1..%d (%d points), budget %d per heuristic, simulator %d experiments per point, seed %d\n",
		req.MaxGroups, req.Targets, req.MaxGroups*req.Targets, req.Budget, req.Experiments, req.Seed)
	fmt.Fprintf(&b, "one file (m = 1) on the model's n = %d: %.3f s simulated\n\n", res.OneN, res.One)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\tm\tn\ttime (s)\tvs one file\tevals\thits\tmisses\t")
	for _, m := range res.Methods {
		r := m.Result
		if r.Best == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%d\t%d\t%d\t\n", m.Method, r.Evaluations, m.Hits, m.Misses)
			continue
		}
		g, _ := r.BestParams.Get(Groups)
		n, _ := r.BestParams.Get(StripeCount)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%+.1f%%\t%d\t%d\t%d\t\n", m.Method, g, n, r.BestValue, 100*(r.BestValue/res.One-1), r.Evaluations, m.Hits, m.Misses)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\ndatabase %s: %d hits, %d misses\n", res.DB, res.Hits, res.Misses)
	if res.Best != nil {
		g, _ := res.Best.BestParams.Get(Groups)
		n, _ := res.Best.BestParams.Get(StripeCount)
		fmt.Fprintf(&b, "recommendation: %d group(s) of %g GB, each striped over %d targets: %.3f s simulated (found by %s)\n",
			g, req.Size/float64(g), n, res.Best.BestValue, bestMethod(res))
	}
	_, err := w.Write(b.Bytes())
	return err
}

func bestMethod(res GroupsResult) string {
	for _, m := range res.Methods {
		if m.Result == res.Best {
			return m.Method
		}
	}
	return ""
}
