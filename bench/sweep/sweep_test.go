package sweep

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseParamAndCombos(t *testing.T) {
	a, err := ParseParam("strip-size=64k, 1m")
	if err != nil || a.Flag != "--pario.strip-size" || !reflect.DeepEqual(a.Values, []string{"64k", "1m"}) {
		t.Fatalf("%+v %v", a, err)
	}
	b, _ := ParseParam("t=4k,8k,16k")
	got := Combos([]Param{a, b})
	if len(got) != 6 || !reflect.DeepEqual(got[0], []string{"64k", "4k"}) || !reflect.DeepEqual(got[5], []string{"1m", "16k"}) {
		t.Errorf("combos %v", got)
	}
	if args := Args([]Param{a, b}, got[1]); strings.Join(args, " ") != "--pario.strip-size 64k -t 8k" {
		t.Errorf("args %v", args)
	}
	for _, bad := range []string{"t", "=1", "t=", "t=1,,2", "colour=red"} {
		if _, err := ParseParam(bad); err == nil {
			t.Errorf("ParseParam(%q): want an error", bad)
		}
	}
}

func TestCSVAndPlots(t *testing.T) {
	a, _ := ParseParam("strip-size=64k,1m")
	b, _ := ParseParam("t=4k,8k,16k")
	params := []Param{a, b}
	var pts []Point
	for i, v := range Combos(params) {
		pts = append(pts, Point{Values: v, WriteMiB: float64(100 + i), ReadMiB: math.NaN()})
	}
	pts[3].WriteMiB, pts[3].Err = math.NaN(), "rank 1 failed"
	var sb strings.Builder
	if err := WriteCSV(&sb, params, pts); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(sb.String()), "\n")
	if len(lines) != 7 || lines[0] != "strip-size,t,write_MiBps,write_sd,read_MiBps,read_sd,error" || lines[4] != "1m,4k,,0.00,,0.00,rank 1 failed" {
		t.Errorf("csv:\n%s", sb.String())
	}
	dir := t.TempDir()
	p, err := Plot(params, pts, "write", "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(p, filepath.Join(dir, "heat")); err != nil {
		t.Fatal(err)
	}
	if _, err := Plot(params, pts, "read", "test"); err != nil {
		t.Fatal(err) // a heat map of nothing but NaN cells still draws
	}
	line, err := Plot(params[:1], pts[:2], "write", "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(line, filepath.Join(dir, "line")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"heat.png", "heat.svg", "line.png", "line.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := Plot(append(params, a), pts, "write", "x"); err == nil {
		t.Error("three parameters: want an error")
	}
}
