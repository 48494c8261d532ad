package estimate

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// figure2 is the paper's figure 2 as a log: jobs A and B arrive (their last
// blocks do) at 10 s, C at 30 s, D and E at 50 s.
var figure2 = []Block{
	{"A", 0, 1}, {"A", 10, 2},
	{"B", 10, 1},
	{"C", 5, 1}, {"C", 30, 1},
	{"E", 45, 1}, {"D", 50, 1}, {"E", 50, 0},
}

func TestJobs(t *testing.T) {
	tests := []struct {
		name   string
		blocks []Block
		window float64
		want   []Job
	}{
		{"figure 2", figure2, 0, []Job{
			{[]string{"A", "B"}, 10, 4},
			{[]string{"C"}, 30, 2},
			{[]string{"E", "D"}, 50, 2},
		}},
		{"a job arrives with its last block, not its first", []Block{{"x", 0, 1}, {"x", 7, 1}, {"y", 3, 1}}, 0, []Job{
			{[]string{"y"}, 3, 1},
			{[]string{"x"}, 7, 2},
		}},
		{"window merges near arrivals with the first of them", []Block{{"a", 0, 1}, {"b", 0.5, 1}, {"c", 1.5, 1}}, 1, []Job{
			{[]string{"a", "b"}, 0, 2},
			{[]string{"c"}, 1.5, 1},
		}},
		{"no blocks", nil, 0, []Job{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Jobs(tt.blocks, tt.window)
			if len(got) != len(tt.want) {
				t.Fatalf("Jobs = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if !slices.Equal(g.Names, w.Names) || g.Arrival != w.Arrival || g.Service != w.Service {
					t.Errorf("job %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	tests := []struct {
		name                string
		blocks              []Block
		window              float64
		lambda, gamma       float64
		jobs, arrivals      int
		wantErr, errContain string
	}{
		// Arrivals at 10, 30, 50: two gaps of 20 s; services 4, 2, 2.
		{name: "figure 2", blocks: figure2, lambda: 1.0 / 20, gamma: 3.0 / 8, jobs: 5, arrivals: 3},
		// The paper's Table I: 13.47804 s between arrivals, 4.453082 s of service.
		{name: "Table I", blocks: []Block{{"1", 0, 4.453082}, {"2", 13.47804, 4.453082}, {"3", 2 * 13.47804, 4.453082}},
			lambda: 1 / 13.47804, gamma: 1 / 4.453082, jobs: 3, arrivals: 3},
		{name: "simultaneous jobs only", blocks: []Block{{"a", 5, 1}, {"b", 5, 1}}, errContain: "fewer than two"},
		{name: "no service", blocks: []Block{{"a", 0, 0}, {"b", 1, 0}}, errContain: "every service time is 0"},
		{name: "negative window", blocks: figure2, window: -1, errContain: "window -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Estimate(tt.blocks, tt.window)
			if tt.errContain != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errContain) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errContain)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !near(r.Lambda, tt.lambda) || !near(r.Gamma, tt.gamma) {
				t.Errorf("lambda, gamma = %v, %v; want %v, %v", r.Lambda, r.Gamma, tt.lambda, tt.gamma)
			}
			if r.Jobs != tt.jobs || r.Arrivals != tt.arrivals {
				t.Errorf("jobs, arrivals = %d, %d; want %d, %d", r.Jobs, r.Arrivals, tt.jobs, tt.arrivals)
			}
			if !near(r.Rho, r.Lambda/r.Gamma) {
				t.Errorf("rho = %v, want lambda/gamma = %v", r.Rho, r.Lambda/r.Gamma)
			}
			if !(r.LambdaLow < r.Lambda && r.Lambda < r.LambdaHigh && r.GammaLow < r.Gamma && r.Gamma < r.GammaHigh) {
				t.Errorf("intervals do not contain the estimates: %+v", r)
			}
		})
	}
	if _, err := Estimate([]Block{{"a", 1, 1}}, 0); !errors.Is(err, ErrTooFew) {
		t.Errorf("one job: err = %v, want ErrTooFew", err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestEstimateRecoversRates: a log of an M/M/1 system's jobs with the
// paper's rates, each job cut into blocks, gives its rates back inside the
// 95% intervals, which are a few percent wide, and raises no warning.
func TestEstimateRecoversRates(t *testing.T) {
	const lambda, gamma = 1 / 13.47804, 1 / 4.453082
	rng := rand.New(rand.NewPCG(1, 2))
	var blocks []Block
	at := 0.0
	for i := range 5000 {
		at += rng.ExpFloat64() / lambda
		service := rng.ExpFloat64() / gamma
		// Three blocks, the last one at the job's arrival; the services add up.
		name := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		blocks = append(blocks,
			Block{name, at - 0.001, service / 4},
			Block{name, at, service / 2},
			Block{name, at - 0.002, service / 4})
	}
	r, err := Estimate(blocks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Arrivals != 5000 || r.Jobs != 5000 || r.Blocks != 15000 {
		t.Fatalf("arrivals %d jobs %d blocks %d", r.Arrivals, r.Jobs, r.Blocks)
	}
	if !(r.LambdaLow <= lambda && lambda <= r.LambdaHigh) || !(r.GammaLow <= gamma && gamma <= r.GammaHigh) {
		t.Errorf("lambda %v in [%v, %v]? gamma %v in [%v, %v]?", lambda, r.LambdaLow, r.LambdaHigh, gamma, r.GammaLow, r.GammaHigh)
	}
	if w := (r.LambdaHigh - r.LambdaLow) / r.Lambda; w > 0.06 {
		t.Errorf("lambda's interval is %.1f%% wide, want < 6%% with 5000 arrivals", 100*w)
	}
	if ws := r.Warnings(); len(ws) != 0 {
		t.Errorf("warnings %q, want none", ws)
	}
}

func TestWarnings(t *testing.T) {
	// Arrivals every second exactly (cv 0), served 2 s each: unstable and
	// not exponential.
	var blocks []Block
	for i := range 40 {
		blocks = append(blocks, Block{string(rune('A' + i)), float64(i), 2})
	}
	r, err := Estimate(blocks, 0)
	if err != nil {
		t.Fatal(err)
	}
	ws := strings.Join(r.Warnings(), "\n")
	for _, want := range []string{"rho = 2 >= 1", "inter-arrival times vary with a coefficient of variation of 0.00", "service times vary"} {
		if !strings.Contains(ws, want) {
			t.Errorf("warnings %q lack %q", ws, want)
		}
	}
	r, _ = Estimate(figure2, 0)
	if ws := strings.Join(r.Warnings(), "\n"); !strings.Contains(ws, "only 3 arrivals") {
		t.Errorf("warnings %q lack the few arrivals", ws)
	}
}
