package search

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pario/pario/tune/model"
)

// tune search --plot's figure, drawn here since it moved out of the
// command: search-trace.png and .svg in a directory SaveTrace makes.
func TestSaveTrace(t *testing.T) {
	a := defaultArgs
	a.StripeCount, a.Methods, a.Budget = "1:8", "genetic,lhs", 40
	req, err := ParseRequest(a)
	if err != nil {
		t.Fatal(err)
	}
	req.Model, req.Seed, req.Store = model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}, 1, &memStore{}
	req.TrustModel = true
	rec, err := Recommend(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "figs")
	paths, err := SaveTrace(rec, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || paths[0] != filepath.Join(dir, "search-trace.png") || paths[1] != filepath.Join(dir, "search-trace.svg") {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() < 2000 {
			t.Errorf("%s: %v", p, err)
		}
	}
}
