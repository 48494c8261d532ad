package bench_test

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// checkJSONFile checks that a JSON report parses and has IOR's keys.
func checkJSONFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, b)
	}
	tests := doc["tests"].([]any)
	res := tests[0].(map[string]any)["Results"].([]any)
	for _, k := range []string{"access", "bwMiB", "blockKiB", "xferKiB", "iops", "latency", "openTime", "wrRdTime", "closeTime", "totalTime"} {
		if _, ok := res[0].(map[string]any)[k]; !ok {
			t.Errorf("Results[0] lacks %q", k)
		}
	}
	sum := doc["summary"].([]any)
	for _, k := range []string{"operation", "API", "bwMaxMIB", "bwMinMIB", "bwMeanMIB", "bwStdMIB", "OPsMax", "OPsMin", "OPsMean", "OPsSD", "MeanTime", "xsizeMiB"} {
		if _, ok := sum[0].(map[string]any)[k]; !ok {
			t.Errorf("summary[0] lacks %q", k)
		}
	}
}

// checkRankCSV checks the per-rank CSV: a row per rank and phase, and the
// first-done / last-done rows.
func checkRankCSV(t *testing.T, path string, ranks int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "iter,access,rank,open_s,io_s,close_s,total_s,done_s,bytes,transfers,MiBps,IOPS,latency_s" {
		t.Errorf("header %v", rows[0])
	}
	// write and read phases: ranks + 2 rows each.
	if len(rows) != 1+2*(ranks+2) {
		t.Errorf("%d rows, want %d", len(rows), 1+2*(ranks+2))
	}
	var first, last int
	for _, r := range rows[1:] {
		switch r[2] {
		case "first-done":
			first++
		case "last-done":
			last++
		}
	}
	if first != 2 || last != 2 {
		t.Errorf("first-done rows %d, last-done rows %d", first, last)
	}
}
