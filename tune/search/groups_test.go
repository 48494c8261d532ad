package search

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/tune/model"
)

func TestParseGroups(t *testing.T) {
	tests := []struct {
		name                 string
		size                 float64
		targets, maxG, exper int
		methods              string
		budget               float64
		want                 string
		wantBudget           int
	}{
		{name: "fraction", size: 100, targets: 40, maxG: 8, exper: 500, methods: "annealing", budget: 0.25, wantBudget: 80},
		{name: "count", size: 100, targets: 40, maxG: 8, exper: 500, methods: "exhaustive,random", budget: 30, wantBudget: 30},
		{name: "size", size: 0, targets: 40, maxG: 8, exper: 500, methods: "random", budget: 1, want: "--size 0"},
		{name: "targets", size: 1, targets: 0, maxG: 8, exper: 500, methods: "random", budget: 1, want: "--targets 0"},
		{name: "groups", size: 1, targets: 4, maxG: 0, exper: 500, methods: "random", budget: 1, want: "--max-groups 0"},
		{name: "experiments", size: 1, targets: 4, maxG: 2, exper: 0, methods: "random", budget: 1, want: "--experiments 0"},
		{name: "budget", size: 1, targets: 4, maxG: 2, exper: 10, methods: "random", budget: -1, want: "--budget -1"},
		{name: "method", size: 1, targets: 4, maxG: 2, exper: 10, methods: "hillclimb", budget: 1, want: "--method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseGroups(tt.size, tt.targets, tt.maxG, tt.methods, tt.budget, tt.exper)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Budget != tt.wantBudget {
				t.Errorf("budget %d, want %d", req.Budget, tt.wantBudget)
			}
		})
	}
}

// TestSearchGroupsGolden: the multi-group search over (m, n) finds, for a
// 40 GB job on 12 targets, a point at least as good as one file on the
// model's n, the heuristic finds the exhaustive optimum, and the report is
// the golden one; a repeated search is answered by the database.
func TestSearchGroupsGolden(t *testing.T) {
	req, err := ParseGroups(40, 12, 4, "exhaustive,annealing", 20, 200)
	if err != nil {
		t.Fatal(err)
	}
	req.Model, req.Seed, req.Store = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}, 1, &memStore{}
	res, err := SearchGroups(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.BestValue > res.One || res.One == 0 {
		t.Fatalf("best %v, one file %v", res.Best, res.One)
	}
	if ex, an := res.Methods[0].Result, res.Methods[1].Result; ex.Evaluations != 48 || an.BestValue < ex.BestValue {
		t.Errorf("exhaustive evaluated %d of 48; annealing %v below the exhaustive optimum %v", ex.Evaluations, an.BestValue, ex.BestValue)
	}
	var out bytes.Buffer
	if err := WriteGroupsText(&out, res); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "groups", "40gb-12-targets.txt"), out.Bytes())
	again, err := SearchGroups(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Misses != 0 {
		t.Errorf("repeated search: %d misses", again.Misses)
	}
}

func TestParseRequestParallel(t *testing.T) {
	tests := []struct {
		name, files, procs, objective string
		parallel                      bool
		size                          int64
		want                          string
	}{
		{name: "default: the sequential space", files: "", procs: "", objective: "model", size: 12960},
		{name: "one file of one process is the sequential space", files: "1", procs: "1:1", objective: "model", size: 12960},
		{name: "files and processes", files: "1:8", procs: "1:12288", objective: "model", parallel: true, size: 12960 * 4 * 15},
		{name: "processes only", files: "1", procs: "64", objective: "model", parallel: true, size: 12960},
		{name: "bad range", files: "8:1", procs: "", objective: "model", want: "--files \"8:1\": inverted bounds"},
		{name: "bad count", files: "1", procs: "0:4", objective: "model", want: "--procs-per-file \"0:4\""},
		{name: "not with sim", files: "1:4", procs: "", objective: "sim", want: "only --objective model prices them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := defaultArgs
			a.Files, a.ProcsPerFile, a.Objective = tt.files, tt.procs, tt.objective
			req, err := ParseRequest(a)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Parallel != tt.parallel || req.Space.Size() != tt.size {
				t.Errorf("parallel %v, %d points; want %v, %d", req.Parallel, req.Space.Size(), tt.parallel, tt.size)
			}
		})
	}
}

// TestParallelStriping: one file of one process is Striping; more
// processes lift the client limit; more files than the targets hold queue
// behind each other; processes sharing strips pay for the lock.
func TestParallelStriping(t *testing.T) {
	st := PaperStriping(10e9)
	ps := ParallelStriping{Striping: st, Targets: 160}
	for _, c := range [][3]int64{{1, 1 << 20, 1 << 20}, {5, 128 << 20, 128 << 20}, {10, 4 << 20, 1 << 20}} {
		want, _ := st.Time(c[0], c[1], c[2])
		got, err := ps.Time(c[0], c[1], c[2], 1, 1)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("F = p = 1, %v: %v (%v), want Striping's %v", c, got, err, want)
		}
	}
	// A fast target (V = 10 GB/s) makes one client of 1.25 GB/s the limit:
	// 8 processes are faster than one.
	fast := ps
	fast.Model.V = 10
	one, _ := fast.Time(8, 128<<20, 128<<20, 1, 1)
	eight, _ := fast.Time(8, 128<<20, 128<<20, 1, 8)
	if !(eight < one-5) {
		t.Errorf("client-bound file: 8 processes %v s, one %v s; want 8 faster by the client time", eight, one)
	}
	// 4 files of 8 targets on a 16-target system: two files per target.
	small := ParallelStriping{Striping: st, Targets: 16}
	shared, _ := small.Time(8, 128<<20, 128<<20, 4, 1)
	alone, _ := small.Time(8, 128<<20, 128<<20, 2, 1)
	if !(shared > alone) {
		t.Errorf("4 files sharing 16 targets: %v s, 2 files: %v s; want sharing slower", shared, alone)
	}
	// 1 MiB transfers into 64 MiB strips by 16 processes: 15 lock passes a strip.
	lone, _ := ps.Time(4, 64<<20, 1<<20, 1, 1)
	crowd, _ := ps.Time(4, 64<<20, 1<<20, 1, 16)
	if !(crowd > lone) {
		t.Errorf("16 processes sharing strips: %v s, one: %v s; want the lock passes to cost", crowd, lone)
	}
	if _, err := ps.Time(4, 1<<20, 1<<20, 0, 1); err == nil {
		t.Error("0 files: no error")
	}
}
