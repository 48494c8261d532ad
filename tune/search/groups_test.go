package search

import (
	"bytes"
	"context"
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
	golden(t, filepath.Join("testdata", "groups", "40gb-12-targets.txt"), out.Bytes())
	again, err := SearchGroups(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Misses != 0 {
		t.Errorf("repeated search: %d misses", again.Misses)
	}
}
