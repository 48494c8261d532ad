package mfg

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pario/pario/dist"
)

// taxa16 is MrBayes 3.1's output at 16 taxa as the thesis' appendix A.5
// shows it: 401 B of lines per run and generation (table A.4) and 300 B
// of headers (the varstrip file of A.5.3.4 holds 701 B per run after one
// generation). Only those sums are the thesis'; the split between the t
// and p files is an estimate from the lines printed in A.5.
func taxa16(runs int, gens int64) Desc {
	return Desc{
		Sections: []Section{
			{Name: "t", Header: 248, Record: 346},
			{Name: "p", Header: 52, Record: 55},
		},
		Runs: runs, Gens: gens, SampleFreq: 1,
	}
}

// recordBytes is the part of pieces that is lines, not headers: the
// thesis' "buffer size in MM before write".
func recordBytes(pieces []Piece) int64 {
	var n int64
	for _, p := range pieces {
		if p.Kind == Records {
			n += p.Len
		}
	}
	return n
}

// The worked cases of chapters 5 and 7 and appendix A.5.
func TestThesisPatterns(t *testing.T) {
	for _, tc := range []struct {
		c         Config
		pattern   string
		swaps     int
		patterns  int64 // eq. 5.1
		buffers   []int64
		firstView []int64 // with the headers of the first generation
	}{
		// Figures 4.5, 4.6 and 5.1: 3 I/O swaps, 8 patterns.
		{Config{3, 5, 4}, "Partial-1", 3, 8, []int64{401, 401, 401, 0}, []int64{701, 701, 701, 0}},
		// A.5.2: ParIO_Simple_65536_7_1_401_802_9_3_8_1, Complete+1.
		{Config{9, 3, 8}, "Complete+1", 2, 4, []int64{802, 401, 401, 401, 401, 401, 401, 401},
			[]int64{1402, 701, 701, 701, 701, 701, 701, 701}},
		// A.5.3: ParIO_Simple_65536_8_0_401_401_8_3_8_1, Complete-1 = pi_1.
		{Config{8, 3, 8}, "pi_1", 0, 1, []int64{401, 401, 401, 401, 401, 401, 401, 401},
			[]int64{701, 701, 701, 701, 701, 701, 701, 701}},
		// A.5.4: ParIO_Simple_65536_1_7_0_401_7_3_8_1, Partial-1.
		{Config{7, 3, 8}, "Partial-1", 2, 4, []int64{401, 401, 401, 401, 401, 401, 401, 0},
			[]int64{701, 701, 701, 701, 701, 701, 701, 0}},
		// A.5.3.3: the varstrip case, 8 runs x 4 chains.
		{Config{8, 4, 8}, "pi_1", 0, 1, []int64{401, 401, 401, 401, 401, 401, 401, 401},
			[]int64{701, 701, 701, 701, 701, 701, 701, 701}},
		// One run: eq. 5.1 gives np.
		{Config{1, 4, 4}, "Partial-1", 3, 4, []int64{401, 0, 0, 0}, []int64{701, 0, 0, 0}},
	} {
		t.Run(tc.c.String(), func(t *testing.T) {
			if err := tc.c.Validate(); err != nil {
				t.Fatal(err)
			}
			a := tc.c.Initial()
			p, err := tc.c.Classify(a)
			if err != nil {
				t.Fatal(err)
			}
			if p.String() != tc.pattern {
				t.Errorf("pattern = %s, want %s (runs per rank %v)", p, tc.pattern, p.Runs)
			}
			if got := tc.c.IOSwaps(); got != tc.swaps {
				t.Errorf("Tsio_1 = %d, want %d", got, tc.swaps)
			}
			if got := tc.c.Patterns().Int64(); got != tc.patterns {
				t.Errorf("eq. 5.1 patterns = %d, want %d", got, tc.patterns)
			}
			m, err := New(taxa16(tc.c.Runs, 1))
			if err != nil {
				t.Fatal(err)
			}
			var buffers, views []int64
			for k := range tc.c.Procs {
				v, err := m.ViewAt(k, 1, a)
				if err != nil {
					t.Fatal(err)
				}
				buffers = append(buffers, recordBytes(v))
				views = append(views, Bytes(v))
			}
			if !slices.Equal(buffers, tc.buffers) {
				t.Errorf("line buffers per rank = %v, want %v", buffers, tc.buffers)
			}
			if !slices.Equal(views, tc.firstView) {
				t.Errorf("first write per rank = %v, want %v", views, tc.firstView)
			}
		})
	}
}

// A.5.3.4: the pi_1 file of 8 runs x 4 chains on 8 processes, one
// generation, stored with varstrip: dist_params 0:701;1:701;...;7:701.
func TestThesisVarstrip848(t *testing.T) {
	m, err := New(taxa16(8, 1))
	if err != nil {
		t.Fatal(err)
	}
	got, placement, err := Strips(m, Config{8, 4, 8}, RoundRobin(8, 8))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(placement, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("placement = %v, want datafile d on server d", placement)
	}
	if want := "0:701;1:701;2:701;3:701;4:701;5:701;6:701;7:701"; got != want {
		t.Errorf("strips = %q, want %q", got, want)
	}
	if m.Size() != 5608 {
		t.Errorf("file size = %d, want 5608 (\"5.4 KB\", 7.5)", m.Size())
	}
}

// Equation 5.1 counts 2^Tsio_1 patterns; when a run spans more than two
// processes there are fewer distinct assignments.
func TestPatternsAndAssignments(t *testing.T) {
	for _, tc := range []struct {
		c                    Config
		patterns, assignment int64
	}{
		{Config{3, 5, 4}, 8, 8},
		{Config{2, 4, 8}, 64, 16},
		{Config{64, 4, 8}, 1, 1},
		{Config{1, 4, 4}, 4, 4},
	} {
		if got := tc.c.Patterns().Int64(); got != tc.patterns {
			t.Errorf("%s: Patterns = %d, want %d", tc.c, got, tc.patterns)
		}
		if got := tc.c.Assignments().Int64(); got != tc.assignment {
			t.Errorf("%s: Assignments = %d, want %d", tc.c, got, tc.assignment)
		}
	}
}

func TestClassifyTypes(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		a    Assignment
		want string
	}{
		// 4 runs x 4 chains on 8: run r on ranks 2r and 2r+1.
		{Config{4, 4, 8}, Assignment{0, 2, 4, 6}, "Partial-1"},
		{Config{4, 4, 8}, Assignment{1, 2, 5, 7}, "Partial-1"},
		// Figure 4.5: run 0 on ranks 0,1; run 1 on 1,2; run 2 on 2,3.
		{Config{3, 5, 4}, Assignment{0, 1, 2}, "Partial-1"},
		{Config{3, 5, 4}, Assignment{0, 1, 3}, "Partial-1"},
		{Config{3, 5, 4}, Assignment{1, 1, 2}, "Partial+1"},
		{Config{3, 5, 4}, Assignment{1, 1, 3}, "Partial+1"},
		{Config{3, 5, 4}, Assignment{0, 2, 2}, "Partial+1"},
		// 6 runs x 2 chains on 4: runs 1 and 4 span two ranks.
		{Config{6, 2, 4}, Assignment{0, 0, 1, 2, 2, 3}, "Complete+1"},
		{Config{6, 2, 4}, Assignment{0, 1, 1, 2, 3, 3}, "Complete+1"},
		// pi_1 with several runs per process is still Complete-1 (7.6.1:
		// 64 runs on 8 processes).
		{Config{64, 4, 8}, Config{64, 4, 8}.Initial(), "pi_1"},
		{Config{4, 3, 2}, Assignment{0, 0, 1, 1}, "pi_1"},
		// One run on one process: Complete-1, but pi_1 needs nruns >= 2.
		{Config{1, 4, 1}, Assignment{0}, "Complete-1"},
	} {
		p, err := tc.c.Classify(tc.a)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.c, tc.a, err)
		}
		if p.String() != tc.want {
			t.Errorf("%s %v: %s, want %s (runs per rank %v)", tc.c, tc.a, p, tc.want, p.Runs)
		}
	}
}

func TestMoves(t *testing.T) {
	n, err := Moves(Assignment{0, 1, 2}, Assignment{1, 1, 3})
	if err != nil || n != 2 {
		t.Errorf("Moves = %d, %v; want 2", n, err)
	}
	if _, err := Moves(Assignment{0}, Assignment{0, 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Moves of different lengths: %v", err)
	}
}

func TestChainDistribution(t *testing.T) {
	// 9 runs x 3 chains on 8 processes: 27 chains, 3 each and one more
	// for ranks 0..2 (P_rem = 3).
	c := Config{9, 3, 8}
	var got []string
	for k := range c.Procs {
		first, n := c.ChainRange(k)
		got = append(got, fmt.Sprintf("%d+%d", first, n))
		for g := first; g < first+n; g++ {
			if r := c.RankOf(g); r != k {
				t.Errorf("RankOf(%d) = %d, want %d", g, r, k)
			}
		}
	}
	if want := "0+4 4+4 8+4 12+3 15+3 18+3 21+3 24+3"; strings.Join(got, " ") != want {
		t.Errorf("chains per rank = %s, want %s", strings.Join(got, " "), want)
	}
	if a := c.Initial(); !slices.Equal(a, Assignment{0, 0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("first generation's writers = %v", a)
	}
	if got := c.RanksOfRun(1); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("run 1's ranks = %v, want [0 1]", got)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no runs", Config{0, 4, 4}.Validate(), "runs must be at least 1"},
		{"no chains", Config{1, 0, 4}.Validate(), "chains must be at least 1"},
		{"no processes", Config{1, 4, 0}.Validate(), "processes must be at least 1"},
		{"too many processes", Config{2, 4, 9}.Validate(), "9 processes for 2 runs x 4 chains = 8 chains"},
		{"desc no runs", errOf(New(Desc{Sections: []Section{{Record: 1}}, Gens: 1, SampleFreq: 1})), "runs must be at least 1"},
		{"desc no samples", errOf(New(Desc{Sections: []Section{{Record: 1}}, Runs: 1, Gens: 9, SampleFreq: 10})), "no generation is sampled"},
		{"desc zero record", errOf(New(Desc{Sections: []Section{{Name: "t", Record: 0}}, Runs: 1, Gens: 1, SampleFreq: 1})), `section 0 "t": record size`},
		{"desc too big", errOf(New(Desc{Sections: []Section{{Record: 1 << 40}}, Runs: 1 << 20, Gens: 1 << 20, SampleFreq: 1})), "exceed"},
		{"varstrip Complete+1", errOf3(Strips(mustMap(t, taxa16(9, 100)), Config{9, 3, 8}, RoundRobin(8, 8))), "9/3/8"},
		{"varstrip Partial-1", errOf3(Strips(mustMap(t, taxa16(7, 100)), Config{7, 3, 8}, RoundRobin(8, 8))), "use simple_stripe"},
		{"varstrip runs", errOf3(Strips(mustMap(t, taxa16(7, 1)), Config{8, 3, 8}, RoundRobin(8, 8))), "the map has 7 runs"},
		{"varstrip server", errOf3(Strips(mustMap(t, taxa16(8, 1)), Config{8, 3, 8}, []int{0, 0, 0, 0, 2, 2, 2, -1})), "rank 7 on server -1"},
		{"varstrip servers", errOf3(Strips(mustMap(t, taxa16(8, 1)), Config{8, 3, 8}, []int{0, 0})), "2 servers named for 8 processes"},
		{"lambda", CheckLambda(100, []Node{{Name: "node01", Memory: 1 << 30, SwapThreshold: 1 << 28, ProcMemory: 1 << 28, LineMemory: 1 << 20, LocalRuns: 8}}), `node "node01" has room for 64 generations`},
		{"lambda swapping", CheckLambda(2, []Node{{Name: "a", Memory: 1 << 30, LineMemory: 1, LocalRuns: 1}, {Name: "node02", Memory: 1 << 30, LineMemory: 1, LocalRuns: 1, Swapping: true}}), `node "node02" swapped`},
		{"not sampled", errOf(mustMap(t, Desc{Sections: []Section{{Record: 1}}, Runs: 1, Gens: 10, SampleFreq: 5}).ViewAt(0, 3, Assignment{0})), "generation 3 is not sampled"},
		{"wrong rank", errOf(Config{3, 5, 4}.Classify(Assignment{0, 3, 2})), "run 1 on rank 3, but its chains are on ranks 1..2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			if !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", tc.err, tc.want)
			}
			if !errors.Is(tc.err, ErrInvalid) && !errors.Is(tc.err, ErrNotFixed) && !errors.Is(tc.err, ErrLambda) && !errors.Is(tc.err, dist.ErrInvalid) {
				t.Errorf("error %q matches none of the package's sentinels", tc.err)
			}
		})
	}
	if err := errOf3(Strips(mustMap(t, taxa16(9, 1)), Config{9, 3, 8}, RoundRobin(8, 8))); !errors.Is(err, ErrNotFixed) {
		t.Errorf("varstrip for Complete+1: %v, want ErrNotFixed", err)
	}
	if err := CheckLambda(100, []Node{{Memory: 1 << 30, LineMemory: 1 << 30, LocalRuns: 1}}); !errors.Is(err, ErrLambda) {
		t.Errorf("CheckLambda: %v, want ErrLambda", err)
	}
}

func errOf[T any](_ T, err error) error { return err }

func errOf3[T, U any](_ T, _ U, err error) error { return err }

func mustMap(t *testing.T, d Desc) *Map {
	t.Helper()
	m, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A config Validate refuses gives zero values, never a panic.
func TestInvalidConfigMethods(t *testing.T) {
	for _, c := range []Config{{0, 0, 0}, {1, 0, 1}, {2, 4, 9}, {-1, 2, 3}, {3, -1, 1}, {1, 1, -1}} {
		if c.Initial() != nil || c.IOSwaps() != 0 || c.Patterns().Sign() != 0 || c.Assignments().Sign() != 0 ||
			c.Pi1() || c.RunGroups() || c.RanksOfRun(0) != nil {
			t.Errorf("%s: methods of an invalid config give values", c)
		}
		if first, n := c.ChainRange(0); first != 0 || n != 0 {
			t.Errorf("%s: ChainRange(0) = %d, %d", c, first, n)
		}
		if RoundRobin(c.Procs, c.Procs) != nil && c.Procs < 1 {
			t.Errorf("RoundRobin(%d, %d) is not nil", c.Procs, c.Procs)
		}
		if _, err := c.Classify(Assignment{0}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Classify: %v", c, err)
		}
	}
}
