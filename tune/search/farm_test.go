package search

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeFarm is a Farm whose runs are not run: their time is cost(group,
// ranks) read off the arguments, and every run is recorded.
type fakeFarm struct {
	mu   sync.Mutex
	runs [][]string
}

func (ff *fakeFarm) farm(t *testing.T, cost func(g, r int64) float64) Farm {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.fa")
	ann := filepath.Join(dir, "io.ann")
	if err := os.WriteFile(in, []byte(">a\nAC\n>b\nGT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ann, []byte("in NEWSPAPER ro wo b farm=FASTA\nout NEWSPAPER rc wo b farm=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Farm{In: in, Annotations: ann, Argv: []string{"cat"}, Repetitions: 2, Dir: dir,
		Run: func(_ context.Context, args []string) (float64, error) {
			ff.mu.Lock()
			ff.runs = append(ff.runs, args)
			ff.mu.Unlock()
			return cost(flagValue(t, args, "--group"), flagValue(t, args, "-N")), nil
		}}
}

func flagValue(t *testing.T, args []string, flag string) int64 {
	t.Helper()
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("%v: no %s", args, flag)
	}
	v, err := strconv.ParseInt(args[i+1], 10, 64)
	if err != nil {
		t.Fatalf("%v: %s: %v", args, flag, err)
	}
	return v
}

func TestSearchFarmPicksFastestGroup(t *testing.T) {
	for _, tc := range []struct {
		name          string
		groups, ranks string
		cost          func(g, r int64) float64
		wantG, wantR  int64
		wantRuns      int // runs of pario farm (points x repetitions)
	}{
		// One output file per 4 ranks is best: gathering to one rank
		// costs with the group's size, a file per group costs too.
		{"group", "1:8", "8", func(g, r int64) float64 { return math.Abs(float64(g)-4) + 1 }, 4, 8, 4 * 2},
		{"group at the bound", "1:8", "8", func(g, r int64) float64 { return 10 - float64(g) }, 8, 8, 4 * 2},
		// Ranks too: more ranks are faster, groups of 2 best; groups
		// larger than the ranks are not run.
		{"group and ranks", "1:8", "2:8", func(g, r int64) float64 { return 100/float64(r) + math.Abs(float64(g)-2) }, 2, 8,
			2 * (2 + 3 + 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ff fakeFarm
			req := FarmRequest{Farm: ff.farm(t, tc.cost), Groups: tc.groups, Ranks: tc.ranks, System: "test", Store: &memStore{}}
			rec, err := SearchFarm(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if g, r := rec.Group(); g != tc.wantG || r != tc.wantR {
				t.Errorf("recommended group %d on %d ranks, want %d on %d", g, r, tc.wantG, tc.wantR)
			}
			if len(ff.runs) != tc.wantRuns {
				t.Errorf("%d runs of pario farm, want %d", len(ff.runs), tc.wantRuns)
			}
			var out bytes.Buffer
			if err := WriteFarmText(&out, rec); err != nil {
				t.Fatal(err)
			}
			want := "recommended: -N " + strconv.FormatInt(tc.wantR, 10) + " --group " + strconv.FormatInt(tc.wantG, 10)
			if !strings.Contains(out.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, out.String())
			}

			// The second search asks the store only.
			before := len(ff.runs)
			again, err := SearchFarm(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(ff.runs) != before || again.Misses != 0 || again.Hits != rec.Hits+rec.Misses {
				t.Errorf("second search: %d new runs, %d hits, %d misses; want none run, %d hits", len(ff.runs)-before, again.Hits, again.Misses, rec.Hits+rec.Misses)
			}
			if g, r := again.Group(); g != tc.wantG || r != tc.wantR {
				t.Errorf("second search recommended group %d on %d ranks, want %d on %d", g, r, tc.wantG, tc.wantR)
			}
		})
	}
}

// A changed annotation file or command is another configuration: its
// points are run again, not answered with the old one's times.
func TestSearchFarmKeyedByConfiguration(t *testing.T) {
	var ff fakeFarm
	store := &memStore{}
	f := ff.farm(t, func(g, r int64) float64 { return float64(g) })
	req := FarmRequest{Farm: f, Groups: "1:2", Ranks: "8", System: "test", Store: store}
	if _, err := SearchFarm(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	for _, change := range []struct {
		name string
		edit func()
	}{
		{"annotations", func() {
			if err := os.WriteFile(f.Annotations, []byte("in NEWSPAPER ro wo b farm=FASTA\nout LOG rc wc b farm=0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"command", func() { req.Farm.Argv = []string{"tr", "a", "b"} }},
		{"ranks", func() { req.Ranks = "4" }},
		{"input", func() {
			if err := os.WriteFile(f.In, []byte(">a\nACGT\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		change.edit()
		rec, err := SearchFarm(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Misses != 2 || rec.Hits != 0 {
			t.Errorf("after changing the %s: %d hits, %d misses; want every point run again", change.name, rec.Hits, rec.Misses)
		}
	}
}

func TestFarmArgs(t *testing.T) {
	f := Farm{In: "q.fa", Annotations: "io.ann", Argv: []string{"hmmscan", "-"}, Block: 65536}
	got := strings.Join(f.Args(4, 16, "/tmp/o"), " ")
	want := "farm -q -N 16 --group 4 --in q.fa --out /tmp/o --annotations io.ann --block 65536 -- hmmscan -"
	if got != want {
		t.Errorf("args %q, want %q", got, want)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"hmmscan": "hmmscan", "--tblout": "--tblout", "/dev/stdout": "/dev/stdout",
		"": "''", "a b": "'a b'", "it's": `'it'\''s'`, "$(cat)": "'$(cat)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFarmSpaceErrors(t *testing.T) {
	for _, tc := range []struct {
		groups, ranks string
		want          string
	}{
		{"0:4", "4", "not positive"},
		{"8:2", "8", "inverted"},
		{"x", "4", "not a whole number"},
		{"1:4", "", "--farm-ranks"},
		{"1:4", "a:b", "--farm-ranks"},
		{"1:1024", "1:1024", "more than the 64"},
	} {
		if _, err := FarmSpace(tc.groups, tc.ranks); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FarmSpace(%q, %q): %v, want an error with %q", tc.groups, tc.ranks, err, tc.want)
		}
	}
}

func TestFarmValidate(t *testing.T) {
	ok := Farm{Exe: "pario", In: "in", Argv: []string{"cat"}, Repetitions: 1, Dir: "d"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Farm){
		"no binary":      func(f *Farm) { f.Exe = "" },
		"no input":       func(f *Farm) { f.In = "" },
		"no command":     func(f *Farm) { f.Argv = nil },
		"no repetitions": func(f *Farm) { f.Repetitions = 0 },
		"negative block": func(f *Farm) { f.Block = -1 },
		"no directory":   func(f *Farm) { f.Dir = "" },
	} {
		f := ok
		edit(&f)
		if err := f.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFarmGroupFrom(t *testing.T) {
	rec := func(g, r int64, v float64) [3]float64 { return [3]float64{float64(g), float64(r), v} }
	stored := [][3]float64{rec(1, 8, 3), rec(2, 8, 1.5), rec(4, 8, 1.5), rec(16, 8, math.Inf(1)), rec(1, 4, 0.5), rec(2, 4, 2)}
	each := func(fn func(Params, float64) error) error {
		for _, s := range stored {
			if err := fn(Params{{Name: FarmGroup, Value: int64(s[0])}, {Name: FarmRanks, Value: int64(s[1])}}, s[2]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, tc := range []struct {
		ranks, group int64
		wall         float64
		ok           bool
	}{
		{8, 2, 1.5, true}, // a tie goes to the smaller group
		{4, 1, 0.5, true},
		{16, 0, 0, false}, // never measured on 16 ranks
	} {
		g, w, ok, err := FarmGroupFrom(tc.ranks, each)
		if err != nil {
			t.Fatal(err)
		}
		if ok != tc.ok || (ok && (g != tc.group || w != tc.wall)) {
			t.Errorf("%d ranks: group %d (%g s, %v), want %d (%g s, %v)", tc.ranks, g, w, ok, tc.group, tc.wall, tc.ok)
		}
	}
}
