package calib

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"github.com/pario/pario/internal/golden"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/report")

// The defaults of `pario tune calibrate --run`.
var defaultGrid = GridArgs{Strips: []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20}, Transfers: []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20},
	Servers: []int{1}, Size: 64 << 20, Ranks: 1, Repetitions: 3}

func TestParseGrid(t *testing.T) {
	ok := []struct {
		name string
		edit func(*GridArgs)
		runs int
		size int64
	}{
		{"defaults", func(*GridArgs) {}, 10, 64 << 20},
		{"two server counts", func(a *GridArgs) { a.Servers = []int{1, 2} }, 20, 64 << 20},
		{"two strips, one transfer", func(a *GridArgs) {
			a.Strips = []int64{65536, 1 << 20}
			a.Transfers = []int64{64 << 10}
			a.Size = 8388608
		}, 2, 8 << 20},
		{"ranks divide the size", func(a *GridArgs) { a.Ranks = 4; a.Size = 8 << 20 }, 10, 8 << 20},
		{"a terabyte", func(a *GridArgs) { a.Size = 1 << 40 }, 10, 1 << 40},
	}
	for _, tc := range ok {
		a := defaultGrid
		tc.edit(&a)
		g, err := ParseGrid(a)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if n := len(g.Runs("/x")); n != tc.runs || g.Size != tc.size || g.Ranks != a.Ranks || g.Repetitions != a.Repetitions {
			t.Errorf("%s: %d runs, size %d, grid %+v; want %d runs, size %d", tc.name, n, g.Size, g, tc.runs, tc.size)
		}
	}

	// The messages of `pario tune calibrate --run` (usage errors, exit 2).
	bad := []struct {
		edit func(*GridArgs)
		want string
	}{
		// Malformed sizes are the units flags' errors; these are what a
		// caller filling GridArgs by hand can still get wrong.
		{func(a *GridArgs) { a.Strips = []int64{64 << 10}; a.Transfers = []int64{1 << 20} }, "no grid point with transfer size <= strip size"},
		{func(a *GridArgs) { a.Size = 0 }, `--size 0: want a positive size (e.g. 64m)`},
		{func(a *GridArgs) { a.Size = -1 }, `--size -1: want a positive size`},
		{func(a *GridArgs) { a.Strips = []int64{0} }, `--strip-sizes 0: want positive sizes, e.g. 64k,1m`},
		{func(a *GridArgs) { a.Transfers = []int64{1 << 20, -4} }, `--transfer-sizes -4: want positive sizes`},
		{func(a *GridArgs) { a.Strips = nil }, "--strip-sizes: empty"},
		{func(a *GridArgs) { a.Transfers = []int64{} }, "--transfer-sizes: empty"},
		{func(a *GridArgs) { a.Ranks = 0 }, "--ranks and --repetitions must be >= 1"},
		{func(a *GridArgs) { a.Repetitions = -1 }, "--ranks and --repetitions must be >= 1"},
		{func(a *GridArgs) { a.Ranks = 3 }, "--size 64m is not a multiple of --ranks 3"},
		{func(a *GridArgs) { a.Servers = []int{1, 0} }, "--servers 0: want >= 1"},
	}
	for _, tc := range bad {
		a := defaultGrid
		tc.edit(&a)
		if _, err := ParseGrid(a); err == nil || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseGrid(%+v): %v, want %q", a, err, tc.want)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	cases := []struct {
		strip   int64
		targets int
		want    Layout
		err     string
	}{
		{0, 0, Layout{}, ""},
		{1 << 20, 4, Layout{Strip: 1 << 20, Targets: 4}, ""},
		{-1, 1, Layout{}, `--strip-size -1: want a positive size`},
	}
	for _, tc := range cases {
		l, err := ParseDefaults(tc.strip, tc.targets)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseDefaults(%d): %v, want %q", tc.strip, err, tc.err)
			}
			continue
		}
		if err != nil || l != tc.want {
			t.Errorf("ParseDefaults(%d, %d) = %+v, %v; want %+v", tc.strip, tc.targets, l, err, tc.want)
		}
	}
}

// exampleReport is a report with round numbers, one point on one target
// and one on two.
func exampleReport(overhead bool) Report {
	r := Report{
		Fit: Fit{
			Params:        Params{V: 500 * MiB, Overhead: 250e-6, Lambda: 20, Gamma: 50},
			OverheadUsed:  overhead,
			ServiceError2: 0.00125, NoOverheadErr2: 0.0125, MeanWait: 0.004,
		},
		Bandwidth: Errors{Error1: 0.0125, Error2: 0.000625}, Time: Errors{Error1: -0.01, Error2: 0.0005},
		ModelVsMeasE: Errors{Error1: 0.02, Error2: 0.001}, Experiments: 2000, Seed: 7,
	}
	r.Points = []Compared{
		{Point: Point{Strip: 1 << 20, Transfer: 256 << 10, Targets: 1, Size: 64 << 20, Times: []float64{0.1, 0.12}, Warmup: []float64{0.5}},
			Service: 0.105, Model: 0.107, Sim: 0.108, MeasuredMiB: 581.8, SimMiB: 592.6},
		{Point: Point{Strip: 4 << 20, Transfer: 1 << 20, Targets: 2, Size: 64 << 20, Times: []float64{0.05}},
			Service: 0.048, Model: 0.05, Sim: 0.052, MeasuredMiB: 1280, SimMiB: 1230.8},
	}
	if overhead {
		r.Confidence = &Confidence{Rounds: 100, Seed: 7, V: Interval{480 * MiB, 530 * MiB}, Overhead: Interval{200e-6, 300e-6},
			Gamma: Interval{45, 56}, Lambda: Interval{15, 24}, Rho: Interval{0.33, 0.43}, OverheadKept: 100, SingleRep: 1}
	}
	r.residuals()
	return r
}

// badReport is a fit that does not explain its data: every warning.
func badReport() Report {
	r := exampleReport(true)
	r.Params.Lambda = 49.6 // rho 0.992
	r.VByTargets = map[int]float64{1: 500 * MiB, 2: 1000 * MiB}
	r.Confidence.Lambda = Interval{5, 49}
	r.Confidence.OverheadKept = 60
	r.Points[1].Model = 0.09
	r.Points = append(r.Points, r.Points[0])
	r.Points[2].Model = 0.3
	r.residuals()
	return r
}

func TestWriteTextGolden(t *testing.T) {
	for _, tc := range []struct {
		name     string
		overhead bool
		bad      bool
	}{{"overhead", true, false}, {"no-overhead", false, false}, {"warnings", true, true}} {
		rep := exampleReport(tc.overhead)
		if tc.bad {
			rep = badReport()
		}
		var b bytes.Buffer
		if err := WriteText(&b, rep, "2 results file(s)"); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata", "report", tc.name+".txt"), b.Bytes())
	}
	if err := WriteText(failWriter{}, exampleReport(true), "x"); err == nil {
		t.Error("WriteText to a failing writer: no error")
	}
}

// A real fit of the example results prints a usable command.
func TestWriteTextOfAFit(t *testing.T) {
	pts, err := ReadFile("testdata/points.csv", Layout{})
	if err != nil {
		t.Fatal(err)
	}
	fit, err := FitParams(Merge(pts), Options{Overhead: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(context.Background(), fit, 500, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, rep, "points.csv"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"calibrate: 2 points from points.csv\n", "\nuse: pario tune model --lambda ", "500 experiments per point, seed 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// checkGolden compares got with the file at path, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) { golden.Check(t, path, got, *update) }

func TestSavePlot(t *testing.T) {
	dir := t.TempDir()
	paths, err := SavePlot(exampleReport(true), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "calibration.png"), filepath.Join(dir, "calibration.svg")}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("paths %v, want %v", paths, want)
	}
	png, err := os.ReadFile(want[0])
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s: not a PNG (%v)", want[0], err)
	}
	svg, err := os.ReadFile(want[1])
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("measured, 2 server(s), 64m file")) {
		t.Errorf("%s: not the SVG of both rows (%v)", want[1], err)
	}
}
