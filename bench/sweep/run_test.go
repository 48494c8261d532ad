package sweep

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeBench is a stand-in for the pario binary: it writes a JSON summary
// whose write bandwidth is the -t value in KiB, and fails for -t 8k.
const fakeBench = `#!/bin/sh
t=; f=
while [ $# -gt 0 ]; do
	case "$1" in
	-t) t=$2; shift ;;
	summaryFile=*) f=${1#summaryFile=} ;;
	esac
	shift
done
if [ "$t" = 8k ]; then echo "running"; echo "pario: -t 8k: the back end refused it" >&2; exit 1; fi
kib=${t%k}
printf '{"tests": [], "summary": [{"operation": "write", "bwMeanMIB": %s, "bwStdMIB": 0.5}]}' "$kib" > "$f"
echo "bench $*"
`

func TestRunAndWriteFiles(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "pario")
	if err := os.WriteFile(exe, []byte(fakeBench), 0o755); err != nil {
		t.Fatal(err)
	}
	p, _ := ParseParam("t=4k,8k,16k")
	var shown bytes.Buffer
	done := 0
	pts, err := Run(context.Background(), RunConfig{Exe: exe, Global: []string{"--cluster", "c"}, Params: []Param{p},
		BenchArgs: []string{"-N", "2"}, Dir: dir, Show: &shown, Done: func() { done++ }})
	if err != nil {
		t.Fatal(err)
	}
	if done != 3 || len(pts) != 3 {
		t.Fatalf("%d points, Done called %d times; want 3", len(pts), done)
	}
	if pts[0].WriteMiB != 4 || pts[0].WriteSD != 0.5 || !math.IsNaN(pts[0].ReadMiB) || pts[0].Err != "" {
		t.Errorf("point 4k: %+v", pts[0])
	}
	if !math.IsNaN(pts[1].WriteMiB) || pts[1].Err != "pario: -t 8k: the back end refused it" {
		t.Errorf("failed point 8k: %+v", pts[1])
	}
	if pts[2].WriteMiB != 16 {
		t.Errorf("point 16k: %+v", pts[2])
	}
	if !strings.Contains(shown.String(), "== -t 16k\n") {
		t.Errorf("Show: %q", shown.String())
	}

	out := filepath.Join(dir, "out")
	var w bytes.Buffer
	err = WriteFiles(out, []Param{p}, pts, "fake", &w)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 points failed") {
		t.Errorf("WriteFiles with a failed point: %v", err)
	}
	want := "3 points: " + filepath.Join(out, "sweep.csv") + "\nwrite: " + filepath.Join(out, "write") + ".png " + filepath.Join(out, "write") + ".svg\n"
	if w.String() != want {
		t.Errorf("WriteFiles said %q, want %q", w.String(), want)
	}
	for _, f := range []string{"sweep.csv", "write.png", "write.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "read.png")); err == nil {
		t.Error("read.png written though no point measured reads")
	}
}

func TestRunStopsWithContext(t *testing.T) {
	p, _ := ParseParam("t=4k,16k")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, RunConfig{Exe: "/bin/sh", Params: []Param{p}, Dir: t.TempDir()}); err != context.Canceled {
		t.Errorf("Run with a cancelled context: %v", err)
	}
}

// A heat map (two varied parameters) of an operation no point measured is
// not drawn either: `bench sweep -w` wrote an empty read.png and read.svg.
func TestWriteFilesTwoParamsWritesOnly(t *testing.T) {
	s, _ := ParseParam("s=1,2")
	tr, _ := ParseParam("t=4k,16k")
	params := []Param{s, tr}
	var pts []Point
	for _, v := range Combos(params) {
		pts = append(pts, Point{Values: v, WriteMiB: 10, ReadMiB: math.NaN(), WriteSD: 0, ReadSD: math.NaN()})
	}
	out := t.TempDir()
	var w bytes.Buffer
	if err := WriteFiles(out, params, pts, "writes only", &w); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "write.png")); err != nil {
		t.Error(err)
	}
	for _, f := range []string{"read.png", "read.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s written though no point measured reads; WriteFiles said:\n%s", f, w.String())
		}
	}
}

// TestValidate: two parameters setting one flag, and grids past
// MaxPoints, are refused before anything runs. Before, --vary t=64k
// --vary transfer-size=128k ran -t 64k -t 128k and plotted a heat map of
// a parameter that never varied, and a grid of 100 x 100 values started
// 10000 runs of pario bench.
func TestValidate(t *testing.T) {
	p := func(s string) Param {
		t.Helper()
		v, err := ParseParam(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	many := func(name string, n int) Param {
		var vals []string
		for i := range n {
			vals = append(vals, strconv.Itoa(i+1)+"k")
		}
		return p(name + "=" + strings.Join(vals, ","))
	}
	for _, tc := range []struct {
		params []Param
		want   string
	}{
		{[]Param{p("t=4k,8k"), p("b=1m,2m")}, ""},
		{[]Param{many("t", 64), many("b", 64)}, ""},
		{[]Param{p("t=4k"), p("transfer-size=8k")}, "--vary transfer-size: t is varied already (both set -t)"},
		{[]Param{p("N=1,2"), p("ranks=4")}, "--vary ranks: N is varied already"},
		{[]Param{many("t", 100), many("b", 100)}, "a grid of 100 x 100 = 10000 points, more than 4096"},
		{[]Param{many("t", MaxPoints+1)}, "a grid of 4097 points"},
	} {
		err := Validate(tc.params)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%v): %v, want %q", tc.params, err, tc.want)
		}
		if tc.want != "" {
			if _, err := Run(context.Background(), RunConfig{Exe: "/nonexistent", Params: tc.params, Dir: t.TempDir()}); err == nil {
				t.Errorf("Run(%v) ran", tc.params)
			}
		}
	}
}

// TestRunChecksEveryPointFirst: a point whose arguments Check refuses
// fails the sweep before any point runs, naming the point. Before, a
// typo in the last value (t=64k,256k,6q) was found only once every point
// before it had run.
func TestRunChecksEveryPointFirst(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "pario")
	if err := os.WriteFile(exe, []byte(fakeBench), 0o755); err != nil {
		t.Fatal(err)
	}
	p, _ := ParseParam("t=4k,16k,6q")
	var checked [][]string
	bad := errors.New(`size "6q": not a size`)
	ran := 0
	_, err := Run(context.Background(), RunConfig{Exe: exe, Params: []Param{p}, BenchArgs: []string{"-N", "2"}, Dir: dir,
		Done: func() { ran++ },
		Check: func(args []string) error {
			checked = append(checked, args)
			if slices.Contains(args, "6q") {
				return bad
			}
			return nil
		}})
	var pe *PointError
	if !errors.As(err, &pe) || !errors.Is(err, bad) || err.Error() != `bench sweep: the point -t 6q: size "6q": not a size` {
		t.Fatalf("Run: %v, want the point -t 6q refused", err)
	}
	if ran != 0 {
		t.Errorf("%d points ran before the bad one was found", ran)
	}
	if len(checked) != 3 || strings.Join(checked[0], " ") != "-N 2 -t 4k" {
		t.Errorf("Check saw %v, want every point's arguments", checked)
	}
}

// TestRunWarnsOfALongSweep: after the first point Run says how long the
// whole sweep will take at that pace, when that is past WarnAfter, and
// not otherwise.
func TestRunWarnsOfALongSweep(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "pario")
	if err := os.WriteFile(exe, []byte(fakeBench), 0o755); err != nil {
		t.Fatal(err)
	}
	p, _ := ParseParam("t=4k,16k,32k")
	var warn bytes.Buffer
	if _, err := Run(context.Background(), RunConfig{Exe: exe, Params: []Param{p}, Dir: dir, Warn: &warn, WarnAfter: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if s := warn.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "so the 3 points will take about") {
		t.Errorf("warning %q, want one line with the estimate", s)
	}
	warn.Reset()
	if _, err := Run(context.Background(), RunConfig{Exe: exe, Params: []Param{p}, Dir: dir, Warn: &warn}); err != nil {
		t.Fatal(err)
	}
	if warn.Len() > 0 {
		t.Errorf("a sweep of seconds warned: %q", warn.String())
	}
}

// TestRunUnreadableSummary: a run that exits 0 but leaves a summary that
// is empty, cut short, of the wrong types or without figures makes a
// failed point saying so. Before, the point was a blank row with no error,
// as if the run had been asked to measure nothing.
func TestRunUnreadableSummary(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"empty":     {"", "its JSON summary: " + "DIR/point-0.json: bench: JSON summary: unexpected end of JSON input"},
		"truncated": {`{"tests": [], "summary": [{"operation": "write", "bwMeanMIB": 4`, "unexpected end of JSON input"},
		"types":     {`{"tests": [], "summary": [{"operation": "write", "bwMeanMIB": "fast"}]}`, "cannot unmarshal string into Go struct field SummaryOp.summary.bwMeanMIB of type float64"},
		"no figure": {`{"tests": [], "summary": []}`, "has no write or read bandwidth"},
		"huge":      {`{"tests": [], "summary": [{"operation": "write", "bwMeanMIB": 1e999}]}`, "cannot unmarshal number 1e999"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "pario")
			script := "#!/bin/sh\nfor a; do case $a in summaryFile=*) f=${a#summaryFile=};; esac; done\nprintf '%s' '" + tc.doc + "' > \"$f\"\n"
			if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			p, _ := ParseParam("t=4k")
			pts, err := Run(context.Background(), RunConfig{Exe: exe, Params: []Param{p}, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if pts[0].Err == "" || !strings.Contains(pts[0].Err, want) || !math.IsNaN(pts[0].WriteMiB) {
				t.Errorf("point %+v, want NaN and an error saying %q", pts[0], want)
			}
		})
	}
}

// An interrupted sweep keeps the points it measured and marks the others
// not run: a Ctrl-C after hours of points used to throw them all away.
func TestRunInterruptedKeepsWhatItMeasured(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "pario")
	if err := os.WriteFile(exe, []byte(fakeBench), 0o755); err != nil {
		t.Fatal(err)
	}
	p, _ := ParseParam("t=4k,16k,32k")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pts, err := Run(ctx, RunConfig{Exe: exe, Params: []Param{p}, Dir: dir, Done: cancel})
	if err != context.Canceled {
		t.Fatalf("Run interrupted after its first point: %v", err)
	}
	if len(pts) != 3 || pts[0].WriteMiB != 4 || pts[0].Err != "" {
		t.Fatalf("points %+v: want the first measured", pts)
	}
	for _, pt := range pts[1:] {
		if pt.Err != NotRun || !math.IsNaN(pt.WriteMiB) || len(pt.Values) != 1 {
			t.Errorf("point %+v: want it marked %q with its values", pt, NotRun)
		}
	}
	if n := Measured(pts); n != 1 {
		t.Errorf("Measured = %d, want 1", n)
	}
	var out bytes.Buffer
	var failed *FailedPoints
	if err := WriteFiles(dir, []Param{p}, pts, "t", &out); !errors.As(err, &failed) || failed.Failed != 2 {
		t.Errorf("WriteFiles of an interrupted sweep: %v", err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	if err != nil || !strings.Contains(string(csv), "4k,4.00") || strings.Count(string(csv), NotRun) != 2 {
		t.Errorf("sweep.csv: %v\n%s", err, csv)
	}
}
