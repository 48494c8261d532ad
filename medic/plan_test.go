package medic_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"github.com/pario/pario/internal/golden"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/medic/medictest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/report")

func TestMakePlanGivenLink(t *testing.T) {
	path := writeFile(t, "report.txt", report(20000))
	req := medic.PlanRequest{
		Path: path,
		// liar-test cannot regenerate the output, nope does not exist:
		// both are skipped, with the reason.
		Plugins: []string{"zstd", " liar-test", "nope"},
		Link:    cost.Link{B: 1e6, RTT: 0.02, RoundTrip: medic.RoundTrips},
	}
	p, err := medic.MakePlan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if p.Size != st.Size() || p.LinkSource != "given" || p.Link != req.Link {
		t.Errorf("size %d, link %+v (%s); want %d, %+v (given)", p.Size, p.Link, p.LinkSource, st.Size(), req.Link)
	}
	var names []string
	for _, c := range p.Choices {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"raw", "zstd"}) {
		t.Errorf("choices %v, want raw and zstd", names)
	}
	if !slices.IsSortedFunc(p.Choices, func(a, b cost.Choice) int { return cmpFloat(a.A, b.A) }) {
		t.Errorf("choices not fastest first: %+v", p.Choices)
	}
	if len(p.Skipped) != 2 || p.Skipped[0].Plugin != "liar-test" || p.Skipped[1].Plugin != "nope" {
		t.Fatalf("skipped %+v, want liar-test and nope", p.Skipped)
	}
	if p.Skipped[0].Err == nil || p.Skipped[1].Err == nil {
		t.Errorf("skipped without a reason: %+v", p.Skipped)
	}
	// On a 1 MB/s link a 1.4 MB text report pays to compress.
	if p.Choices[0].Name != "zstd" {
		t.Errorf("best %s, want zstd", p.Choices[0].Name)
	}
	var out bytes.Buffer
	if err := p.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(given), RTT 20.0 ms\n", "skipped liar-test: ", "skipped nope: ", "best: zstd, "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestMakePlanMeasuredLink(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "report.txt", report(2000))
	for _, rtt := range []float64{0, 0.25} {
		p, err := medic.MakePlan(context.Background(), medic.PlanRequest{Path: path, Plugins: []string{"raw"},
			Link: cost.Link{RTT: rtt}, Measure: medic.SendOptions{Addr: s.addr, Key: s.key}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.LinkSource, "measured") || p.Link.B <= 0 {
			t.Errorf("link %+v (%s), want a measured bandwidth", p.Link, p.LinkSource)
		}
		// A given RTT stays; a zero one is measured.
		if rtt != 0 && p.Link.RTT != rtt || rtt == 0 && p.Link.RTT <= 0 {
			t.Errorf("given RTT %v: plan's %v", rtt, p.Link.RTT)
		}
		if len(p.Choices) != 1 || p.Choices[0].Name != "raw" || len(p.Skipped) != 0 {
			t.Errorf("raw only: %+v, skipped %+v", p.Choices, p.Skipped)
		}
	}
}

func TestMakePlanErrors(t *testing.T) {
	path := writeFile(t, "report.txt", report(10))
	ctx := context.Background()
	if _, err := medic.MakePlan(ctx, medic.PlanRequest{Path: filepath.Join(t.TempDir(), "nope"), Link: cost.Link{B: 1e6}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing output: %v", err)
	}
	if _, err := medic.MakePlan(ctx, medic.PlanRequest{Path: path}); err == nil || !strings.Contains(err.Error(), "no bandwidth") {
		t.Errorf("no bandwidth, no receiver: %v", err)
	}
	// A receiver that is not there: the error names it.
	_, err := medic.MakePlan(ctx, medic.PlanRequest{Path: path, Measure: medic.SendOptions{Addr: "127.0.0.1:1", Key: medictest.Key(t)}})
	if err == nil || !strings.Contains(err.Error(), "measure the link to 127.0.0.1:1") {
		t.Errorf("unreachable receiver: %v", err)
	}
}

// examplePlan has round numbers: a plugin that pays, one that never does,
// one that always does, and raw.
func examplePlan(rtt, window float64) medic.Plan {
	return medic.Plan{
		Size: 10 << 20, Link: cost.Link{B: 1e6, RTT: rtt, Window: window, RoundTrip: medic.RoundTrips}, LinkSource: "given",
		Choices: []cost.Choice{
			{Estimate: cost.Estimate{Name: "free", X: 1 << 10}, A: 0.25, Speedup: 42},
			{Estimate: cost.Estimate{Name: "zstd", X: 2 << 20, F: 0.5, G: 0.25}, A: 3.25, Speedup: 3.25},
			{Estimate: cost.Estimate{Name: "raw", X: 10 << 20}, A: 10.5, Speedup: 1},
			{Estimate: cost.Estimate{Name: "slow", X: 11 << 20, F: 1, G: 1}, A: 13.5, Speedup: 0.78},
		},
		Skipped: []medic.Skipped{{Plugin: "blast", Err: errors.New("blast: param program=\"\": want one of blastp, blastn")}},
	}
}

func TestPlanWriteTextGolden(t *testing.T) {
	rawBest := examplePlan(0, 0)
	rawBest.Choices = rawBest.Choices[2:]
	for _, tc := range []struct {
		name string
		plan medic.Plan
	}{
		{"plugins", examplePlan(0, 0)},
		{"rtt-window", examplePlan(0.05, 1<<14)},
		{"raw-best", rawBest},
	} {
		var b bytes.Buffer
		if err := tc.plan.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "report", tc.name+".txt")
		golden.Check(t, path, b.Bytes(), *update)
	}
}
