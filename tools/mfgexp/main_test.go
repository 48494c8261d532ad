package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportParsing(t *testing.T) {
	out := "time           0.238 s (slowest rank), 10.19 MB/s\nphases         compute 0.007 s, I/O 0.233 s (slowest rank in each): I/O share 97.3% (def. 2.1)\n"
	if v, err := reportTime(out); err != nil || v != 0.238 {
		t.Errorf("reportTime = %v, %v", v, err)
	}
	if got := reportIOShare(out); got != "97.3" {
		t.Errorf("reportIOShare = %q", got)
	}
	if _, err := reportTime("nothing"); err == nil {
		t.Error("a report without a time parsed")
	}
	if _, err := parseInts("8,x"); err == nil {
		t.Error("--runs 8,x accepted")
	}
}

func TestOutputs(t *testing.T) {
	dir := t.TempDir()
	rows := []row{{series: allSeries[0].name, runs: 8, pattern: "pi_1", serial: 2, parallel: 0.5, speedup: 4, ioShare: "90"},
		{series: allSeries[2].name, runs: 9, pattern: "Complete+1", serial: 2, parallel: 1, speedup: 2}}
	if err := writeCSV(filepath.Join(dir, "x.csv"), rows); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "x.csv"))
	if !strings.Contains(string(b), "pi_1 varstrip,8,pi_1,2.000,0.500,4.000,90") {
		t.Errorf("CSV:\n%s", b)
	}
	back, err := readCSV(filepath.Join(dir, "x.csv"))
	if err != nil || len(back) != 2 || back[0] != rows[0] || back[1] != rows[1] {
		t.Errorf("readCSV = %+v, %v; want %+v", back, err, rows)
	}
	if err := savePlot(filepath.Join(dir, "x.png"), rows); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "x.png")); err != nil || fi.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
}
