package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneSearchFarm: tune search --objective farm runs the real pario
// farm for every group size and recommends the fastest, which a command
// sleeping in proportion to its segment's bytes makes known: with blocks
// larger than the input, each group of g ranks runs its part as one
// segment, so the run takes about g/N of the whole input's sleep and
// groups of one rank are fastest. The second search runs nothing, and
// pario farm --group auto takes the size found.
func TestTuneSearchFarm(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, ">q%03d\nACGTACGT\n", i) // 15 bytes a record, 3000 in all
	}
	if err := os.WriteFile(filepath.Join(dir, "in.fa"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "io.ann"), []byte(farmOrdered), 0o644); err != nil {
		t.Fatal(err)
	}
	// 3000 bytes sleep 2 s: groups of 4, 2 and 1 take about 2, 1 and 0.5 s.
	script := `d=$(cat); sleep $(awk "BEGIN{print ${#d}/1500}"); printf '%s\n' "$d" | tr a-z A-Z`
	env := append(os.Environ(), "PARIO_HOME="+filepath.Join(dir, "home"))
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(parioBin, args...)
		cmd.Dir, cmd.Env = dir, env
		return cmd.CombinedOutput()
	}
	// Before any search, auto has nothing to go by.
	if out, err := run("farm", "-N", "4", "--group", "auto", "--in", "in.fa", "--out", "hits", "--annotations", "io.ann", "--block", "1m", "--", "sh", "-c", script); err == nil || !strings.Contains(string(out), "pario tune search --objective farm") {
		t.Errorf("farm --group auto before a search: %v, want an error saying what to run\n%s", err, out)
	}
	search := func() string {
		t.Helper()
		out, err := run("tune", "search", "--objective", "farm",
			"--farm-in", "in.fa", "--farm-annotations", "io.ann", "--farm-ranks", "4", "--farm-group", "1:4",
			"--farm-block", "1m", "--farm-repetitions", "1", "--", "sh", "-c", script)
		if err != nil {
			t.Fatalf("pario tune search --objective farm: %v\n%s", err, out)
		}
		return string(out)
	}
	first := search()
	t.Logf("first search:\n%s", first)
	if !strings.Contains(first, "3 points (0 from the database, 3 run)") {
		t.Errorf("first search did not run the 3 group sizes:\n%s", first)
	}
	if !strings.Contains(first, "recommended: -N 4 --group 1 ") {
		t.Errorf("want groups of 1 rank recommended:\n%s", first)
	}
	second := search()
	if !strings.Contains(second, "3 points (3 from the database, 0 run)") {
		t.Errorf("second search ran the farm again:\n%s", second)
	}
	if !strings.Contains(second, "recommended: -N 4 --group 1 ") {
		t.Errorf("second search changed its recommendation:\n%s", second)
	}

	out, err := run("farm", "-N", "4", "--group", "auto", "--in", "in.fa", "--out", "hits", "--annotations", "io.ann", "--block", "1m", "--", "sh", "-c", script)
	if err != nil {
		t.Fatalf("farm --group auto: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--group auto: 1 ") {
		t.Errorf("farm --group auto did not say it chose 1:\n%s", out)
	}
	var got strings.Builder
	for g := range 4 { // groups of one rank: four files
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("hits.%d", g)))
		if err != nil {
			t.Fatal(err)
		}
		got.Write(b)
	}
	if want := strings.ToUpper(in.String()); got.String() != want {
		t.Errorf("hits.0-3 concatenated are not the sequential output:\n%q\nwant\n%q", got.String(), want)
	}
}

// Without --objective farm, a command after -- is a mistake, not ignored.
func TestTuneSearchArgsOnlyWithFarm(t *testing.T) {
	out, err := exec.Command(parioBin, "tune", "search", "--", "cat").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "only with --objective farm") {
		t.Errorf("tune search -- cat: %v\n%s", err, out)
	}
}
