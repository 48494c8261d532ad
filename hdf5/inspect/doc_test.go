package inspect

import (
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	f := &File{Path: "f.nc", Datasets: []Dataset{{Name: "data"}, {Name: "x", Scale: true}}}
	if d, err := f.Find(""); err != nil || d.Name != "data" {
		t.Errorf("Find(\"\") = %v, %v; want data (x is a dimension scale)", d, err)
	}
	if d, err := f.Find("x"); err != nil || d.Name != "x" {
		t.Errorf("Find(x) = %v, %v", d, err)
	}
	if _, err := f.Find("nope"); err == nil || !strings.Contains(err.Error(), `f.nc has no dataset "nope" (it has: data, x)`) {
		t.Errorf("Find(nope): %v", err)
	}
	f.Datasets = append(f.Datasets, Dataset{Name: "more"})
	if _, err := f.Find(""); err == nil || !strings.Contains(err.Error(), "pick one with --var") {
		t.Errorf("two datasets: %v", err)
	}
}
