package main

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeMpirun writes a script that stands for mpirun: it records its
// arguments in args.txt beside it and prints out.
func fakeMpirun(t *testing.T, out string, status int) string {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "mpirun")
	body := "#!/bin/sh\necho \"$@\" > " + filepath.Join(dir, "args.txt") + "\ncat " + out + "\nexit " + string(rune('0'+status)) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func TestRunMdtest(t *testing.T) {
	sample, err := filepath.Abs("testdata/mdtest-4.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	sample41, err := filepath.Abs("testdata/mdtest-4.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, []byte("mdtest: no summary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		out    string
		status int
		want   map[string]float64 // nil: an error
	}{
		{"summary", sample, 0, map[string]float64{"create": 2834.125, "stat": 2423, "remove": 1499}},
		{"summary of mdtest-4.1.0+dev, no colons", sample41, 0, map[string]float64{"create": 31.648, "stat": 5049.272, "remove": 688.468}},
		{"no summary", empty, 0, nil},
		{"failed", sample, 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := config{mpirun: fakeMpirun(t, tc.out, tc.status), mdtest: "/opt/mdtest", ranks: 4, files: 10}
			dir := filepath.Join(t.TempDir(), "run")
			got, err := runMdtest(c, dir, true)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("runMdtest = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s rate = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
			args, err := os.ReadFile(filepath.Join(filepath.Dir(c.mpirun), "args.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "-np 4 --oversubscribe /opt/mdtest -n 10 -F -C -T -r -d " + dir + " -u\n"; string(args) != want {
				t.Errorf("mpirun got %q, want %q", args, want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("mdtest's directory left behind: %v", err)
			}
		})
	}
}
