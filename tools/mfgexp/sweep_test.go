package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeRun answers like pario mcmc: serial runs take 4 s, an MFG run 1 s
// plus 0.1 s per --lambda, and it counts the runs of each kind.
type fakeRun struct{ serial, mfg int }

func (f *fakeRun) run(_ context.Context, args []string) (float64, string, error) {
	i := slices.Index(args, "--io")
	if i < 0 || i+1 >= len(args) || !slices.Contains(args, "-o") {
		return 0, "", os.ErrInvalid
	}
	if args[i+1] == "serial" {
		f.serial++
		return 4, "time 4 s\n", nil
	}
	f.mfg++
	t := 1.0
	if j := slices.Index(args, "--lambda"); j >= 0 {
		l, _ := strconv.Atoi(args[j+1])
		t += 0.1 * float64(l)
	}
	return t, "I/O share 50.0%", nil
}

// TestSweeps runs every experiment's points through a fake pario: each
// serial baseline is run once, the speedups and Delta_perf follow from the
// times, and the CSV reads back and plots.
func TestSweeps(t *testing.T) {
	for name, mk := range sweeps {
		t.Run(name, func(t *testing.T) {
			s := mk()
			if s.name != name || len(s.points) == 0 {
				t.Fatalf("sweep %q: name %q, %d points", name, s.name, len(s.points))
			}
			keys := map[string]bool{}
			for _, p := range s.points {
				keys[strings.Join(p.serial, " ")] = true
				if p.mfg[0] != "mcmc" || !slices.Contains(p.mfg, "--runs") || !slices.Contains(p.mfg, "--layout") {
					t.Errorf("point %+v: MFG arguments %q", p, p.mfg)
				}
			}
			f := &fakeRun{}
			dir := t.TempDir()
			if err := runSweep(context.Background(), s, dir, dir, f.run); err != nil {
				t.Fatal(err)
			}
			if f.serial != len(keys) || f.mfg != len(s.points) {
				t.Errorf("%d serial runs for %d baselines, %d MFG runs for %d points", f.serial, len(keys), f.mfg, len(s.points))
			}
			rows, err := readSweepCSV(filepath.Join(dir, "mfg-"+name+".csv"))
			if err != nil || len(rows) != len(s.points) {
				t.Fatalf("CSV: %d rows, %v; want %d", len(rows), err, len(s.points))
			}
			first := map[string]float64{}
			for _, r := range rows {
				if want := r.serial / r.parallel; r.speedup < want-0.001 || r.speedup > want+0.001 {
					t.Errorf("%+v: speedup %v, want %v", r, r.speedup, want)
				}
				ref, ok := first[r.series]
				if !ok {
					ref, first[r.series] = r.parallel, r.parallel
				}
				if want := (ref - r.parallel) / ref * 100; r.deltaPerf < want-0.01 || r.deltaPerf > want+0.01 {
					t.Errorf("%+v: Delta_perf %v, want %v", r, r.deltaPerf, want)
				}
			}
			if fi, err := os.Stat(filepath.Join(dir, "mfg-"+name+".png")); err != nil || fi.Size() == 0 {
				t.Errorf("plot: %v", err)
			}
		})
	}
}

// TestNpSweepShape: the np sweep has the thesis' series (8, 4, 2 nodes),
// no more nodes than processes, and one baseline: one process, serial.
func TestNpSweepShape(t *testing.T) {
	s := npSweep()
	series := map[string][]float64{}
	for _, p := range s.points {
		series[p.series] = append(series[p.series], p.x)
		if i := slices.Index(p.serial, "--np"); p.serial[i+1] != "1" {
			t.Errorf("baseline %q is not one process", p.serial)
		}
	}
	if len(series) != 3 || len(series["2 nodes"]) != 5 || len(series["8 nodes"]) != 3 {
		t.Errorf("series %v", series)
	}
}

func TestSweepCSVErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.csv")
	_ = os.WriteFile(p, []byte(strings.Join(sweepHeader, ",")+"\na,x,1,1,1,1,\n"), 0o644)
	if _, err := readSweepCSV(p); err == nil {
		t.Error("a CSV with x = \"x\" read")
	}
	_ = os.WriteFile(p, []byte("a,b\n1,2\n"), 0o644)
	if _, err := readSweepCSV(p); err == nil {
		t.Error("a CSV of 2 fields read")
	}
}
