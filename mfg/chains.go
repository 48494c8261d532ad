package mfg

import (
	"fmt"
	"math/big"
)

// MaxChains bounds runs x chains, the chains of one analysis.
const MaxChains = 1 << 24

// Config is an analysis as MrBayes' p(MC)^3 spreads it: Runs x Chains
// chains over Procs processes. Global chain g belongs to run g / Chains;
// chain 0 of every run is cold at the first generation.
type Config struct {
	Runs, Chains, Procs int
}

// Validate reports a config MrBayes would refuse.
func (c Config) Validate() error {
	switch {
	case c.Runs < 1:
		return invalid("config: runs must be at least 1, got %d", c.Runs)
	case c.Chains < 1:
		return invalid("config: chains must be at least 1, got %d", c.Chains)
	case c.Procs < 1:
		return invalid("config: processes must be at least 1, got %d", c.Procs)
	case c.Runs > MaxChains || c.Chains > MaxChains || c.Runs*c.Chains > MaxChains:
		return invalid("config: %d runs x %d chains exceed %d chains", c.Runs, c.Chains, MaxChains)
	case c.Procs > c.Runs*c.Chains:
		// MrBayes refuses this too: a process without a chain has nothing
		// to compute (the thesis, 7.6.1: "nruns = 1 was not possible").
		return invalid("config: %d processes for %d runs x %d chains = %d chains: every process needs a chain",
			c.Procs, c.Runs, c.Chains, c.Runs*c.Chains)
	}
	return nil
}

func (c Config) String() string { return fmt.Sprintf("%d/%d/%d", c.Runs, c.Chains, c.Procs) }

// ChainRange is rank's chains [first, first+n): Ch_proc = chains / procs
// each, the remainder P_rem one each to the lowest ranks (table A.1).
// Like the other methods below it gives zero values for a config Validate
// refuses, or a rank out of range.
func (c Config) ChainRange(rank int) (first, n int) {
	if c.Validate() != nil || rank < 0 || rank >= c.Procs {
		return 0, 0
	}
	total := c.Runs * c.Chains
	per, rem := total/c.Procs, total%c.Procs
	first = rank*per + min(rank, rem)
	n = per
	if rank < rem {
		n++
	}
	return first, n
}

// RankOf is the rank holding global chain g.
func (c Config) RankOf(g int) int {
	if c.Validate() != nil || g < 0 || g >= c.Runs*c.Chains {
		return 0
	}
	total := c.Runs * c.Chains
	per, rem := total/c.Procs, total%c.Procs
	if g < rem*(per+1) {
		return g / (per + 1)
	}
	return rem + (g-rem*(per+1))/per
}

// RunsOf is the runs [lo, hi) rank holds chains of: the only runs it can
// ever write.
func (c Config) RunsOf(rank int) (lo, hi int) {
	first, n := c.ChainRange(rank)
	if n == 0 {
		return 0, 0
	}
	return first / c.Chains, (first+n-1)/c.Chains + 1
}

// Initial is the assignment of the first generation: every run's chain 0 is
// cold.
func (c Config) Initial() Assignment {
	if c.Validate() != nil {
		return nil
	}
	a := make(Assignment, c.Runs)
	for r := range a {
		a[r] = c.RankOf(r * c.Chains)
	}
	return a
}

// RanksOfRun are the ranks holding run r's chains, lowest first: the ranks
// its cold chain can move to.
func (c Config) RanksOfRun(r int) []int {
	if c.Validate() != nil || r < 0 || r >= c.Runs {
		return nil
	}
	lo, hi := c.RankOf(r*c.Chains), c.RankOf(r*c.Chains+c.Chains-1)
	out := make([]int, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		out = append(out, k)
	}
	return out
}

// IOSwaps is Tsio_1 (definitions 5.1 and 5.2): the I/O swaps that can occur
// in the first generation, one per other process holding a heated chain of
// a run. 3 runs x 5 chains on 4 processes have 3 (figure 5.1).
func (c Config) IOSwaps() int {
	if c.Validate() != nil {
		return 0
	}
	n := 0
	for r := 0; r < c.Runs; r++ {
		n += len(c.RanksOfRun(r)) - 1
	}
	return n
}

// Patterns is equation 5.1: the number of semi-random temporal parallel
// I/O access patterns, 2^Tsio_1 with more than one run, np with one.
func (c Config) Patterns() *big.Int {
	if c.Validate() != nil {
		return new(big.Int)
	}
	if c.Runs == 1 {
		return big.NewInt(int64(c.Procs))
	}
	return new(big.Int).Lsh(big.NewInt(1), uint(c.IOSwaps()))
}

// Assignments is the number of distinct writer assignments: the product
// over runs of the ranks its cold chain can be on. It equals Patterns
// when no run spans more than two processes (figure 5.1); otherwise eq. 5.1
// counts more patterns than there are (2 runs x 4 chains on 8 processes:
// 2^6 = 64, but 4 x 4 = 16 assignments).
func (c Config) Assignments() *big.Int {
	if c.Validate() != nil {
		return new(big.Int)
	}
	n := big.NewInt(1)
	for r := 0; r < c.Runs; r++ {
		n.Mul(n, big.NewInt(int64(len(c.RanksOfRun(r)))))
	}
	return n
}

// Pi1 says whether c gives pattern pi_1, the Complete-1 pattern that stays
// the same for the whole run: nruns mod np == 0 and nruns >= 2 (section
// 5.3, table 6.1). Every run's chains are then on one process, so no I/O
// swap can occur.
func (c Config) Pi1() bool { return c.Validate() == nil && c.Runs >= 2 && c.Runs%c.Procs == 0 }

// RunGroups says whether every process holds chains of a single run, as in
// the thesis' figure 7.5 cases with fewer runs than processes (2 and 4 runs
// x 4 chains on 8 processes): each run's cold chain moves, but only within
// its own group of processes.
func (c Config) RunGroups() bool {
	if c.Validate() != nil {
		return false
	}
	for k := 0; k < c.Procs; k++ {
		first, n := c.ChainRange(k)
		if first/c.Chains != (first+n-1)/c.Chains {
			return false
		}
	}
	return true
}

// Type is the type of one generation's writer assignment (table 5.1).
type Type uint8

const (
	Complete1     Type = iota // every process writes, all the same share
	Partial1                  // some write nothing, the writers all the same share
	CompletePlus1             // every process writes, at least one more than another
	PartialPlus1              // some write nothing, the writers unequal shares
)

func (t Type) String() string {
	switch t {
	case Complete1:
		return "Complete-1"
	case Partial1:
		return "Partial-1"
	case CompletePlus1:
		return "Complete+1"
	case PartialPlus1:
		return "Partial+1"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Pattern classifies one generation's assignment.
type Pattern struct {
	Type Type
	// Pi1: the config gives pi_1, so this Complete-1 pattern is the only
	// one of the whole run.
	Pi1 bool
	// Runs[k] is the number of runs rank k writes.
	Runs []int
}

func (p Pattern) String() string {
	if p.Pi1 {
		return "pi_1"
	}
	return p.Type.String()
}

// Classify gives the type of assignment a on c's processes. Table 5.1
// speaks of processes in "exactly one" or "at least two" I/O operations;
// since the thesis calls pi_1 Complete-1 also when every process writes
// several runs (64 runs on 8 processes, 7.6.1), "one" is read here as "the
// same share as every other writer" and "two or more" as "more than
// another writer". Where the smallest share is one run the two readings
// agree.
func (c Config) Classify(a Assignment) (Pattern, error) {
	if err := c.Validate(); err != nil {
		return Pattern{}, err
	}
	if err := c.check(a); err != nil {
		return Pattern{}, err
	}
	p := Pattern{Runs: make([]int, c.Procs)}
	for _, k := range a {
		p.Runs[k]++
	}
	lo, hi, idle := 0, 0, false
	for _, n := range p.Runs {
		switch {
		case n == 0:
			idle = true
		case lo == 0:
			lo, hi = n, n
		default:
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	switch {
	case !idle && lo == hi:
		p.Type = Complete1
	case !idle:
		p.Type = CompletePlus1
	case lo == hi:
		p.Type = Partial1
	default:
		p.Type = PartialPlus1
	}
	p.Pi1 = p.Type == Complete1 && c.Pi1()
	return p, nil
}

// check reports an assignment that c cannot produce: a run's cold chain on
// a process that holds none of the run's chains.
func (c Config) check(a Assignment) error {
	if len(a) != c.Runs {
		return invalid("assignment names %d runs, config %s has %d", len(a), c, c.Runs)
	}
	for r, k := range a {
		lo, hi := c.RankOf(r*c.Chains), c.RankOf(r*c.Chains+c.Chains-1)
		if k < lo || k > hi {
			return invalid("assignment: run %d on rank %d, but its chains are on ranks %d..%d", r, k, lo, hi)
		}
	}
	return nil
}

// Moves counts the I/O swaps that happened between two consecutive
// assignments: the runs whose cold chain changed process.
func Moves(prev, next Assignment) (int, error) {
	if len(prev) != len(next) {
		return 0, invalid("moves: assignments of %d and %d runs", len(prev), len(next))
	}
	n := 0
	for r := range prev {
		if prev[r] != next[r] {
			n++
		}
	}
	return n, nil
}
