package plot

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/tune/model"
)

var paperParams = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}

// checkFiles checks that path is a decodable PNG or a well-formed SVG of a
// non-trivial size.
func checkFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 5000 {
		t.Errorf("%s: only %d bytes", path, len(b))
	}
	switch filepath.Ext(path) {
	case ".png":
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", path, err)
		}
		if r := img.Bounds(); r.Dx() < 200 || r.Dy() < 150 {
			t.Errorf("%s: %v is too small", path, r)
		}
	case ".svg":
		s := string(b)
		if !strings.Contains(s, "<svg") || !strings.Contains(s, "</svg>") || strings.Count(s, "<path") < 5 {
			t.Errorf("%s: not a complete SVG with drawn paths", path)
		}
	default:
		t.Fatalf("unexpected file %s", path)
	}
}

func TestModelFigures(t *testing.T) {
	dir := t.TempDir()
	exact, err := model.TimeCurve(paperParams, 50, 60, model.Exact)
	if err != nil {
		t.Fatal(err)
	}
	paper, err := model.TimeCurve(paperParams, 50, 60, model.Paper)
	if err != nil {
		t.Fatal(err)
	}
	fig3, err := TimeCurve(50, []string{"exact", "paper formula"}, [][]float64{exact, paper})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := fig3.SaveAll(dir, "fig3")
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]float64, 200)
	for i := range sizes {
		sizes[i] = float64(5 * (i + 1))
	}
	ne, _, err := model.OptimalNCurve(paperParams, sizes, 1000, model.Exact)
	if err != nil {
		t.Fatal(err)
	}
	np, _, err := model.OptimalNCurve(paperParams, sizes, 1000, model.Paper)
	if err != nil {
		t.Fatal(err)
	}
	fig4, err := OptimalNCurve(sizes, []string{"exact", "paper formula"}, [][]int{ne, np})
	if err != nil {
		t.Fatal(err)
	}
	more, err := fig4.SaveAll(dir, "fig4")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(paths, more...) {
		checkFile(t, p)
	}
	if _, err := OptimalNCurve(sizes, []string{"a"}, [][]int{ne[:3]}); err == nil {
		t.Error("OptimalNCurve accepted a curve shorter than the sizes")
	}
	if _, err := TimeCurve(50, []string{"a", "b"}, [][]float64{exact}); err == nil {
		t.Error("TimeCurve accepted two labels for one curve")
	}
}

func TestSearchTrace(t *testing.T) {
	dir := t.TempDir()
	var traces []Trace
	for k, name := range []string{"neldermead", "annealing", "genetic", "swarm", "orthogonal", "random", "lhs", "extra"} {
		best := make([]float64, 300)
		v := 400.0
		for i := range best {
			v = math.Min(v, 115+300/float64(i+k+1))
			best[i] = v
		}
		traces = append(traces, Trace{Method: name, BestSoFar: best})
	}
	traces = append(traces, Trace{Method: "empty"})
	fig := SearchTrace("Search for a 10 GiB file", "best predicted time (s)", traces)
	for _, name := range []string{"trace.png", "trace.svg"} {
		p := filepath.Join(dir, name)
		if err := fig.Save(p); err != nil {
			t.Fatal(err)
		}
		checkFile(t, p)
	}
	var buf bytes.Buffer
	if err := fig.Render(&buf, SVG); err != nil || !bytes.Contains(buf.Bytes(), []byte("neldermead")) {
		t.Errorf("Render SVG: %v, legend present: %v", err, bytes.Contains(buf.Bytes(), []byte("neldermead")))
	}
}

func TestErrors(t *testing.T) {
	fig := SearchTrace("t", "y", []Trace{{Method: "a", BestSoFar: []float64{math.Inf(1), math.NaN()}}})
	var buf bytes.Buffer
	if err := fig.Render(&buf, PNG); err == nil || !strings.Contains(err.Error(), "nothing to draw") {
		t.Errorf("figure without finite points: %v", err)
	}
	good := SearchTrace("t", "y", []Trace{{Method: "a", BestSoFar: []float64{3, 2, 1}}})
	if err := good.Render(&buf, "jpeg"); err == nil {
		t.Error("jpeg accepted")
	}
	if err := good.Save(filepath.Join(t.TempDir(), "x.gif")); err == nil {
		t.Error(".gif accepted")
	}
	if err := good.Save(filepath.Join(t.TempDir(), "missing", "x.png")); err == nil {
		t.Error("saving into a missing directory succeeded")
	}
	bad := Figure{Series: []Series{{Label: "x", X: []float64{1, 2}, Y: []float64{1}}}}
	if err := bad.Render(&buf, SVG); err == nil {
		t.Error("mismatched series accepted")
	}
}

// tune model --plot's figures, drawn here since they moved out of the
// command: fig3 and fig4, PNG and SVG, in a directory SaveModelFigures makes.
func TestSaveModelFigures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "figs")
	paths, err := SaveModelFigures(paperParams, 10, 40, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fig3.png", "fig3.svg", "fig4.png", "fig4.svg"}
	if len(paths) != len(want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	for i, p := range paths {
		if p != filepath.Join(dir, want[i]) {
			t.Errorf("path %d: %s, want %s", i, p, want[i])
		}
		checkFile(t, p)
	}
	if _, err := SaveModelFigures(model.Params{Lambda: 1, Gamma: 0.5, V: 1}, 10, 40, dir); !errors.Is(err, model.ErrUnstable) {
		t.Errorf("an unstable system: %v, want model.ErrUnstable", err)
	}
}
