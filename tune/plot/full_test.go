package plot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	gplot "gonum.org/v1/plot"

	"github.com/pario/pario/internal/testenv"
)

// A figure that does not fit on the disk (or whose writer is stopped
// half-way) leaves no half-written PNG or SVG under its name, and an
// older figure there stays whole: Save and SaveGrid write under a
// temporary name and rename. Before, os.Create truncated the old figure
// and the full disk left a few KiB of a PNG in its place.
func TestSaveOnFullDisk(t *testing.T) {
	disk := testenv.Tmpfs(t, "256k")
	old := []byte("an older, complete figure")
	for _, name := range []string{"fig.png", "fig.svg", "grid.png", "grid.svg"} {
		if err := os.WriteFile(filepath.Join(disk, name), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, filepath.Join(disk, "filler"))

	fig := SearchTrace("trace", "s", []Trace{{Method: "m", BestSoFar: []float64{3, 2, 1}}})
	for _, name := range []string{"fig.png", "fig.svg"} {
		err := fig.Save(filepath.Join(disk, name))
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), filepath.Join(disk, name)) {
			t.Errorf("Save %s onto a full disk: %v, want ENOSPC naming the file", name, err)
		}
	}
	p := gplot.New()
	if _, err := SaveGrid(disk, "grid", [][]*gplot.Plot{{p}}, 0, 0); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("SaveGrid onto a full disk: %v, want ENOSPC", err)
	}
	ents, _ := os.ReadDir(disk)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if e.Name() == "filler" {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join(disk, e.Name())); !bytes.Equal(b, old) {
			t.Errorf("%s became %d bytes %.20q, want the older figure whole", e.Name(), len(b), b)
		}
	}
	if len(names) != 5 {
		t.Errorf("the disk holds %v, want the four older figures and the filler alone", names)
	}
}

// fill writes path until the disk is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
