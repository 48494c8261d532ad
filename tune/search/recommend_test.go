package search

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pario/pario/internal/golden"
	"github.com/pario/pario/tune/model"
)

// The defaults of `pario tune search`.
var defaultArgs = Args{Methods: "all", Size: 10 << 30, Objective: "model", Budget: 0.15,
	StripeCount: "1:160", StripSize: "1m:256m", TransferSize: "1m:256m"}

func TestParseRequest(t *testing.T) {
	ok := []struct {
		name    string
		edit    func(*Args)
		size    int64
		points  int64
		budget  int
		methods int
	}{
		{"defaults", func(*Args) {}, 10 << 30, 12960, 1944, 7},
		{"a count budget", func(a *Args) { a.Budget = 300 }, 10 << 30, 12960, 300, 7},
		{"one value for both bounds", func(a *Args) { a.StripeCount = "4"; a.StripSize = "1m" }, 10 << 30, 9, 2, 7},
		{"methods with spaces", func(a *Args) { a.Methods = "genetic, lhs,exhaustive" }, 10 << 30, 12960, 1944, 3},
		{"all twice", func(a *Args) { a.Methods = "all,all" }, 10 << 30, 12960, 1944, 14},
		{"a tiny budget is one point", func(a *Args) { a.Budget = 1e-9 }, 10 << 30, 12960, 1, 7},
		{"sim", func(a *Args) { a.Objective = "sim"; a.Size = 1 << 30 }, 1 << 30, 12960, 1944, 7},
		// --apply on a 4-server cluster: counts above 4 are not searched.
		{"4 targets", func(a *Args) { a.Targets = 4 }, 10 << 30, 4 * 81, 49, 7},
		{"targets above the range", func(a *Args) { a.Targets = 400 }, 10 << 30, 12960, 1944, 7},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			a := defaultArgs
			tc.edit(&a)
			req, err := ParseRequest(a)
			if err != nil {
				t.Fatal(err)
			}
			if req.Size != tc.size || req.Space.Size() != tc.points || req.Budget != tc.budget || len(req.Methods) != tc.methods {
				t.Errorf("size %d, %d points, budget %d, %d methods; want %d, %d, %d, %d",
					req.Size, req.Space.Size(), req.Budget, len(req.Methods), tc.size, tc.points, tc.budget, tc.methods)
			}
			if req.Objective != a.Objective {
				t.Errorf("objective %q, want %q", req.Objective, a.Objective)
			}
		})
	}

	// The messages `pario tune search` prints (as usage errors, exit 2).
	bad := []struct {
		edit func(*Args)
		want string
	}{
		{func(a *Args) { a.StripeCount = "160:1" }, `--stripe-count "160:1": inverted bounds: 160 > 1`},
		{func(a *Args) { a.StripSize = "256m:1m" }, `--strip-size "256m:1m": inverted bounds`},
		{func(a *Args) { a.TransferSize = "1m:x" }, `--transfer-size "1m:x": `},
		{func(a *Args) { a.TransferSize = "1m:x" }, `(want MIN:MAX, e.g. 1m:256m)`},
		{func(a *Args) { a.StripeCount = "0:4" }, `--stripe-count "0:4": 0 is not positive (want MIN:MAX, e.g. 1:160)`},
		{func(a *Args) { a.StripeCount = "one:4" }, `"one" is not a whole number`},
		{func(a *Args) { a.Methods = "hillclimb" }, "--method: search: unknown method \"hillclimb\" (known: neldermead, annealing, genetic, swarm, orthogonal, random, lhs, exhaustive), or all"},
		{func(a *Args) { a.Methods = "genetic," }, `unknown method ""`},
		{func(a *Args) { a.Objective = "oracle" }, `--objective "oracle": want model, sim, bench or farm`},
		{func(a *Args) { a.Objective = "sim"; a.Experiments = -1 }, `--experiments -1: want a count of simulated experiments from 1 to 1073741824`},
		{func(a *Args) { a.Objective = "sim"; a.Experiments = 1 << 40 }, `--experiments 1099511627776: want a count`},
		{func(a *Args) { a.Budget = -1 }, "--budget -1: want a fraction of the space in (0, 1] or a count above 1"},
		{func(a *Args) { a.Budget = 0 }, "--budget 0: want a fraction"},
		{func(a *Args) { a.Budget = 2.5 }, "--budget 2.5: a count must be a whole number"},
		{func(a *Args) { a.Budget = 2e9 }, "a count must be a whole number"},
		{func(a *Args) { a.Size = 0 }, "--size 0: must be positive"},
		{func(a *Args) { a.Size = -1 }, "--size -1: must be positive"},
		// The bounds are sizes as units reads them: binary, MB refused.
		{func(a *Args) { a.StripSize = "1MB:256m" }, `--strip-size "1MB:256m": size "1MB": MB is ambiguous`},
		{func(a *Args) { a.TransferSize = "1m:0" }, `--transfer-size "1m:0": size "0": must be positive`},
		{func(a *Args) { a.StripeCount = "8:16"; a.Targets = 4 }, `--stripe-count "8:16": the cluster has 4 I/O servers, fewer than the smallest stripe count`},
	}
	for _, tc := range bad {
		a := defaultArgs
		tc.edit(&a)
		_, err := ParseRequest(a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRequest(%+v): %v, want an error containing %q", a, err, tc.want)
		}
	}
}

// memStore is a ResultStore in memory.
type memStore struct {
	mu   sync.Mutex
	vals map[string]float64
}

func (s *memStore) Path() string { return "mem.db" }

func (s *memStore) Memo(system, objective, _ string, obj Objective) (Memo, error) {
	if s.vals == nil {
		s.vals = map[string]float64{}
	}
	return &memMemo{s: s, prefix: system + "/" + objective + "/", obj: obj}, nil
}

type memMemo struct {
	s            *memStore
	prefix       string
	obj          Objective
	hits, misses int64
}

func (m *memMemo) Evaluate(ctx context.Context, x Params) (float64, error) {
	k := m.prefix + x.String()
	m.s.mu.Lock()
	v, ok := m.s.vals[k]
	if ok {
		m.hits++
	}
	m.s.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := m.obj.Evaluate(ctx, x)
	if err != nil {
		return 0, err
	}
	m.s.mu.Lock()
	m.s.vals[k] = v
	m.misses++
	m.s.mu.Unlock()
	return v, nil
}

func (m *memMemo) Hits() int64   { return m.hits }
func (m *memMemo) Misses() int64 { return m.misses }

// failStore fails every Memo.
type failStore struct{}

func (failStore) Path() string { return "fail.db" }
func (failStore) Memo(string, string, string, Objective) (Memo, error) {
	return nil, errors.New("results: database closed")
}

// TestRecommendGolden checks the whole report of `pario tune search` for
// a few requests against testdata/recommend/*.txt (-update rewrites them),
// and that a repeated search is answered from the store.
func TestRecommendGolden(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Args)
		dir  string
	}{
		{"model-10g", func(a *Args) { a.StripeCount = "1:8" }, "DIR"},
		{"model-1g-genetic-lhs", func(a *Args) { a.Size = 1 << 30; a.StripeCount = "1:4"; a.Methods = "genetic,lhs"; a.Budget = 40 }, "/runs"},
		{"sim", func(a *Args) { a.Objective = "sim"; a.StripeCount = "1:6"; a.Methods = "annealing"; a.Budget = 30 }, "DIR"},
		{"apply-4-servers", func(a *Args) { a.Targets = 4; a.Methods = "genetic"; a.Budget = 100 }, "/runs"},
		{"parallel", func(a *Args) {
			a.Size, a.StripeCount, a.Files, a.ProcsPerFile, a.Methods, a.Budget = 100<<30, "1:16", "1:8", "1:64", "genetic,annealing", 400
		}, "DIR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := defaultArgs
			tc.edit(&a)
			req, err := ParseRequest(a)
			if err != nil {
				t.Fatal(err)
			}
			req.Model = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}
			req.Experiments, req.Seed = 200, 1
			store := &memStore{}
			req.Store = store
			rec, err := Recommend(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteText(&out, rec, tc.dir); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "recommend", tc.name+".txt"), out.Bytes())

			again, err := Recommend(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if again.Misses != 0 || again.Hits != rec.Hits+rec.Misses {
				t.Errorf("repeated search: %d hits, %d misses; want %d, 0", again.Hits, again.Misses, rec.Hits+rec.Misses)
			}
			if again.Layout() != rec.Layout() {
				t.Errorf("repeated search recommends %s, first %s", again.Layout(), rec.Layout())
			}
		})
	}
}

func TestRecommendErrors(t *testing.T) {
	req, err := ParseRequest(defaultArgs)
	if err != nil {
		t.Fatal(err)
	}
	req.Model = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}
	cases := []struct {
		name string
		edit func(*Request)
		want string
	}{
		{"unstable", func(r *Request) { r.Model.Lambda = 0.3 }, "unstable"},
		{"no V", func(r *Request) { r.Model.V = 0 }, "V = 0 is not positive"},
		{"no store", func(r *Request) { r.Store = nil }, "no results store"},
		{"store fails", func(r *Request) { r.Store = failStore{} }, "database closed"},
		{"objective", func(r *Request) { r.Objective = "oracle" }, `objective "oracle"`},
		{"sim without experiments", func(r *Request) { r.Objective = "sim"; r.Experiments = -1 }, "xperiments"},
	}
	for _, tc := range cases {
		r := req
		r.Store = &memStore{}
		tc.edit(&r)
		if _, err := Recommend(context.Background(), r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	// A cancelled search says where it stopped: in the model check...
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := req
	r.Store = &memStore{}
	if _, err := Recommend(ctx, r); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "model check") {
		t.Errorf("cancelled: %v, want model check: ... context.Canceled", err)
	}
	// ...or, past it, in a method.
	defer func(f func(context.Context, model.Params, int64, int, int, uint64) (Agreement, error)) {
		checkModel = f
	}(checkModel)
	checkModel = func(context.Context, model.Params, int64, int, int, uint64) (Agreement, error) {
		return Agreement{}, nil
	}
	if _, err := Recommend(ctx, r); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "neldermead: ") {
		t.Errorf("cancelled: %v, want neldermead: ... context.Canceled", err)
	}
}

func TestRecommendationNoBest(t *testing.T) {
	var rec Recommendation
	if n, s, tr := rec.Striping(); n != 0 || s != 0 || tr != 0 {
		t.Errorf("no best: %d %d %d", n, s, tr)
	}
}

func TestWriteTextWriteError(t *testing.T) {
	req, _ := ParseRequest(defaultArgs)
	rec := Recommendation{Request: req}
	if err := WriteText(failWriter{}, rec, "DIR"); err == nil {
		t.Error("WriteText to a failing writer: no error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// checkGolden compares got with the file at path, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) { golden.Check(t, path, got, *update) }

// TestRecommendExhaustive checks that --method exhaustive evaluates the
// whole space whatever --budget says (it is the reference), and refuses a
// space too large to evaluate, naming its size.
func TestRecommendExhaustive(t *testing.T) {
	a := defaultArgs
	a.Methods, a.StripeCount = "exhaustive,random", "1:8"
	req, err := ParseRequest(a)
	if err != nil {
		t.Fatal(err)
	}
	req.Model = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}
	req.Store = &memStore{}
	rec, err := Recommend(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	points := req.Space.Size()
	if ex := rec.Methods[0].Result; int64(ex.Evaluations) != points || ex.Stop != StopExhausted {
		t.Errorf("exhaustive evaluated %d of %d points (%v) with a budget of %d", ex.Evaluations, points, ex.Stop, req.Budget)
	}
	if r := rec.Methods[1].Result; r.Evaluations != req.Budget {
		t.Errorf("random evaluated %d points, want its budget %d", r.Evaluations, req.Budget)
	}
	var out bytes.Buffer
	if err := WriteText(&out, rec, "DIR"); err != nil {
		t.Fatal(err)
	}
	if want := "budget 98 per method (exhaustive: all 648)"; !strings.Contains(out.String(), want) {
		t.Errorf("report does not say %q:\n%s", want, out.String())
	}

	a.StripeCount = "1:20000" // 20000 x 9 x 9 points
	if _, err := ParseRequest(a); err == nil || !strings.Contains(err.Error(), "--method exhaustive: the space has 1620000 points") {
		t.Errorf("a space of 1,620,000 points: %v, want a refusal naming its size", err)
	}
	a.Methods = "all" // the heuristics sample any space
	if _, err := ParseRequest(a); err != nil {
		t.Errorf("heuristics on 1,620,000 points: %v", err)
	}
}

// TestRecommendNoIdleTargets: when stripe counts tie, the fewest targets
// are recommended, and never more than the file has strips (a 672 MiB file
// in 1 MiB strips has 672: with little background load every count from
// 672 up predicts the same time).
func TestRecommendNoIdleTargets(t *testing.T) {
	cases := []struct {
		name, count, methods string
		want, found          int64 // the recommended count; the count found, when lowered
	}{
		{"heuristics", "1:1000", "all", 672, -1},
		{"exhaustive", "600:1000", "exhaustive", 672, 0},
		{"range above the strips", "700:800", "annealing,exhaustive", 672, 700},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := defaultArgs
			a.Size, a.StripSize, a.TransferSize, a.StripeCount, a.Methods, a.Budget = 672<<20, "1m", "1m", tc.count, tc.methods, 0.3
			req, err := ParseRequest(a)
			if err != nil {
				t.Fatal(err)
			}
			req.Model = model.Params{Lambda: 1, Gamma: 1000, V: 0.0625}
			req.Store = &memStore{}
			rec, err := Recommend(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			n, s, tr := rec.Striping()
			if n != tc.want || (tc.found >= 0 && rec.Found != tc.found) {
				t.Errorf("recommended stripe count %d (found %d), want %d (found %d); best method result %v", n, rec.Found, tc.want, tc.found, rec.Best.BestParams)
			}
			st := PaperStriping(req.Size)
			st.Model = req.Model
			v, err := st.Time(n, s, tr)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(v-rec.PickValue) > 1e-9*v || rec.PickValue > rec.Best.BestValue*(1+1e-9) {
				t.Errorf("recommended point predicts %v s, report says %v, best found %v", v, rec.PickValue, rec.Best.BestValue)
			}
			if !strings.Contains(rec.Layout(), "num_datafiles=672") {
				t.Errorf("layout %s", rec.Layout())
			}
		})
	}
}

// FuzzParseRequest: the flags of `pario tune search`, whatever they say,
// give a request or an error, and an accepted request has a space with
// points and a method to search it.
func FuzzParseRequest(f *testing.F) {
	f.Add("all", int64(10<<30), "model", 0.15, "1:160", "1m:256m", "1m:256m", "", "")
	f.Add("sa,ga", int64(1), "sim", 40.0, "3", "64k", "1k:2k", "4", "1:8")
	f.Add("exhaustive", int64(1<<40), "bench", 1e300, "1:9223372036854775807", "1:1", "0:0", "0", "-1:-5")
	f.Fuzz(func(t *testing.T, methods string, size int64, objective string, budget float64, count, strip, xfer, files, procs string) {
		a := Args{Methods: methods, Size: size, Objective: objective, Budget: budget,
			StripeCount: count, StripSize: strip, TransferSize: xfer, Files: files, ProcsPerFile: procs}
		req, err := ParseRequest(a)
		if err != nil {
			return
		}
		if req.Space == nil || req.Space.Size() <= 0 || len(req.Methods) == 0 || req.Budget <= 0 {
			t.Fatalf("accepted %+v: space %v, %d methods, budget %d", a, req.Space, len(req.Methods), req.Budget)
		}
	})
}

// A count range's error gives a count as its example, not a size:
// `--files 0:4` suggested "e.g. 1m:256m".
func TestParseRangeExampleFitsTheFlag(t *testing.T) {
	for flag, want := range map[string]string{"files": "e.g. 1:128", "stripe-count": "e.g. 1:160", "strip-size": "e.g. 1m:256m"} {
		_, _, err := parseRange(flag, "0:4", parseCount)
		if err == nil || !strings.Contains(err.Error(), "--"+flag+` "0:4"`) || !strings.Contains(err.Error(), want) {
			t.Errorf("parseRange(%q, \"0:4\"): %v, want an error naming the flag with %q", flag, err, want)
		}
	}
}
