package sweep

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pario/pario/internal/testenv"
)

// bench sweep's outputs on a full disk: WriteFiles fails saying so, and
// sweep.csv and the figures of an earlier sweep stay whole; none is left
// half-written. Before, os.Create (and gonum's Save) truncated them first.
func TestWriteFilesOnFullDisk(t *testing.T) {
	disk := testenv.Tmpfs(t, "256k")
	old := []byte("an earlier, complete output")
	names := []string{"sweep.csv", "write.png", "write.svg"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(disk, n), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}

	p, _ := ParseParam("t=4k,16k")
	pts := []Point{{Values: []string{"4k"}, WriteMiB: 4, ReadMiB: math.NaN()}, {Values: []string{"16k"}, WriteMiB: 16, ReadMiB: math.NaN()}}
	if err := WriteFiles(disk, []Param{p}, pts, "full", io.Discard); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("WriteFiles onto a full disk: %v, want ENOSPC", err)
	}
	// Plots too, each on its own.
	pl, err := Plot([]Param{p}, pts, "write", "full")
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(pl, filepath.Join(disk, "write")); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Save onto a full disk: %v, want ENOSPC", err)
	}
	ents, _ := os.ReadDir(disk)
	if len(ents) != len(names)+1 {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Errorf("the disk holds %v, want the earlier outputs and the filler alone", got)
	}
	for _, n := range names {
		if b, _ := os.ReadFile(filepath.Join(disk, n)); !bytes.Equal(b, old) {
			t.Errorf("%s became %d bytes %.20q, want the earlier output whole", n, len(b), b)
		}
	}
}
