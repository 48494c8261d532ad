package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
)

// renderAuto draws a sweep of one bandwidth (a panel whose axes span one
// value) and a report with only a loaded point (no panel data) without
// panicking.
func TestRenderAutoOnePoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows [][]string
	}{
		{"one bandwidth", [][]string{
			{"q4", "1729", "207037", "50000", "0", "0", "zstd", "1.01"},
			{"q4", "1729", "207037", "50000", "0", "0", "blast", "0.55"},
		}},
		{"only under load", [][]string{
			{"q36", "20687", "2327455", "1e+06", "0", "1", "zstd", "1.01"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := os.Create(filepath.Join(dir, "a.csv"))
			if err != nil {
				t.Fatal(err)
			}
			w := csv.NewWriter(f)
			w.Write(autoHeader)
			for _, r := range tc.rows {
				rec := make([]string, len(autoHeader))
				copy(rec, r)
				for i := len(r); i < len(rec); i++ {
					rec[i] = "0.5"
				}
				w.Write(rec)
			}
			w.Flush()
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := renderAuto(dir, "a"); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(filepath.Join(dir, "a.png")); err != nil || st.Size() == 0 {
				t.Fatalf("no figure: %v", err)
			}
		})
	}
}
