package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestMedians(t *testing.T) {
	runs := []run{
		{"b", "write", 3}, {"a", "write", 1}, {"b", "write", 1}, {"b", "write", 2},
		{"a", "write", 4}, {"a", "read", 7},
	}
	order, med := medians(runs)
	if want := []string{"b", "a"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want first-seen %v", order, want)
	}
	for k, want := range map[key]stat{
		{"b", "write"}: {2, 3},   // odd count: the middle value
		{"a", "write"}: {2.5, 2}, // even count: the mean of the middle two
		{"a", "read"}:  {7, 1},
	} {
		if got := med[k]; got != want {
			t.Errorf("%v: median %v, want %v", k, got, want)
		}
	}
}

func TestLoadRejectsBadRows(t *testing.T) {
	for name, body := range map[string]string{
		"short rows": "stage,config,operation\npatterns,x,write\n",
		"bad MiB/s":  "stage,config,operation,ranks,rep,MiBps,disk_rate,date\npatterns,x,write,10,1,fast,4MB/s,d\n",
		"missing":    "",
		// A stage whose every run failed leaves only the header; plotting
		// nothing panicked in gonum/plot.
		"header only": "stage,config,operation,ranks,rep,MiBps,disk_rate,date\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.csv")
			if body != "" {
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := load(p); err == nil {
				t.Errorf("load(%q) = nil error", body)
			}
		})
	}
}
