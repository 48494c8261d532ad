package search

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/tune/model"
)

func fakeBench(t *testing.T) (Bench, string) {
	t.Helper()
	exe, err := filepath.Abs("testdata/fakebench/pario")
	if err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(t.TempDir(), "count")
	t.Setenv("FAKEBENCH_COUNT", count)
	return Bench{Exe: exe, Servers: 4, FileSize: 64 << 20, Ranks: 2, Repetitions: 3, Dir: t.TempDir()}, count
}

func runs(t *testing.T, count string) int {
	b, err := os.ReadFile(count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run")
}

func TestBenchArgs(t *testing.T) {
	b := Bench{Exe: "pario", Servers: 4, FileSize: 10 << 20, Ranks: 3, Repetitions: 2, Dir: "d"}
	tests := []struct {
		name    string
		cluster string
		t       int64
		want    string
		written int64
	}{
		// 10 MiB / 3 ranks = 3.33 MiB: blocks of 3 whole 1 MiB transfers.
		{"embedded", "", 1 << 20, "bench --servers 4 -N 3 -b 3145728 -t 1048576 --pario.strip-size 2097152 --pario.servers 2 -w -e -i 2 -O summaryFormat=JSON -O summaryFile=f", 9 << 20},
		// A transfer larger than a rank's share: one transfer each.
		{"cluster", "/c/cluster", 4 << 20, "--cluster /c/cluster bench -a PARIO -o pario:/tune-bench-2-2097152-4194304 -N 3 -b 4194304 -t 4194304", 12 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.Cluster = tt.cluster
			args, written := b.Args(2, 2<<20, tt.t, "f")
			if got := strings.Join(args, " "); !strings.HasPrefix(got, tt.want) || written != tt.written {
				t.Errorf("args %q, %d bytes; want %q..., %d", got, written, tt.want, tt.written)
			}
		})
	}
}

// TestBenchObjective: each evaluation runs pario bench (a stand-in here)
// and reads its summary: the slow first repetition is set aside, the time
// scaled to the file size; a failed run says what pario printed.
func TestBenchObjective(t *testing.T) {
	b, count := fakeBench(t)
	point := func(n, s, tr int64) Params {
		return Params{{Name: StripeCount, Value: n}, {Name: StripSize, Value: s}, {Name: TransferSize, Value: tr}}
	}
	v, err := b.Evaluate(context.Background(), point(3, 1<<20, 1<<20))
	if err != nil || v != 10 {
		t.Errorf("n=3, s=t: %v, %v; want 10 s (the 100 s warm-up set aside)", v, err)
	}
	// 64 MiB over 2 ranks in 48 MiB transfers: 96 MiB written, scaled by 2/3.
	if v, err := b.Evaluate(context.Background(), point(1, 64<<20, 48<<20)); err != nil || v != 13*2.0/3 {
		t.Errorf("scaled: %v, %v; want %v", v, err, 13*2.0/3)
	}
	if _, err := b.Evaluate(context.Background(), point(99, 1<<20, 1<<20)); err == nil || !strings.Contains(err.Error(), "the cluster has 4 I/O servers") {
		t.Errorf("failed run: %v, want pario's last line", err)
	}
	if n := runs(t, count); n != 3 {
		t.Errorf("%d runs, want 3", n)
	}
	if err := (Bench{Exe: "x", FileSize: 1, Ranks: 1, Repetitions: 1, Dir: "d"}).Validate(); err == nil || !strings.Contains(err.Error(), "--bench-servers 0: want at least 1 I/O server") {
		t.Errorf("no servers: %v", err)
	}
}

// TestRecommendBench: --objective bench searches measurements, keeps them
// in the results database (a repeated search runs nothing) and reports
// them as measured.
func TestRecommendBench(t *testing.T) {
	b, count := fakeBench(t)
	a := defaultArgs
	a.Objective, a.StripeCount, a.StripSize, a.TransferSize, a.Methods, a.Budget, a.Targets = "bench", "1:4", "1m:2m", "1m:2m", "exhaustive", 10, 4
	req, err := ParseRequest(a)
	if err != nil {
		t.Fatal(err)
	}
	req.Model = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}
	req.Bench, req.Seed, req.Store = &b, 1, &memStore{}
	rec, err := Recommend(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n, s, tr := rec.Striping(); n != 3 || s != tr || rec.PickValue != 10 {
		t.Errorf("recommended %d, %d, %d at %v s; want 3 targets, strip = transfer, 10 s", n, s, tr, rec.PickValue)
	}
	if n := runs(t, count); n != 16 || rec.Check != nil {
		t.Errorf("%d runs (want the 16 points), model check %v (want none)", n, rec.Check)
	}
	var out bytes.Buffer
	if err := WriteText(&out, rec, "DIR"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"objective: measured: the mean write time of pario bench on an embedded cluster of 4 I/O servers per run (2 rank(s), 3 repetition(s)", "10.000 s measured"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	again, err := Recommend(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Misses != 0 || runs(t, count) != 16 {
		t.Errorf("repeated search: %d misses, %d runs; want 0 and still 16", again.Misses, runs(t, count))
	}
	// A fraction of the space as the budget would be thousands of runs.
	a.Budget = 0.15
	if _, err := ParseRequest(a); err == nil || !strings.Contains(err.Error(), "--objective bench: give --budget as a count") {
		t.Errorf("fraction budget: %v", err)
	}
	a.Budget, a.StripeCount, a.StripSize, a.Targets = 10, "1:160", "1m:256m", 0
	if _, err := ParseRequest(a); err == nil || !strings.Contains(err.Error(), "more than the 500 pario bench runs") {
		t.Errorf("exhaustive over 12960 points: %v", err)
	}
}
