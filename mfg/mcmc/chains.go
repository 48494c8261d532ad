// Package mcmc is the write workload of MrBayes' parallel
// Metropolis-coupled MCMC, p(MC)^3, as seed 000 measured it: nruns x
// nchains chains with heats beta_j = 1/(1 + dT (j-1)) spread over np
// processes as MrBayes spreads them, heat swaps within a run accepted with
// a seeded random draw (so the process holding each run's cold chain moves
// semi-randomly), and per sampled generation one .t and one .p line per
// run from its cold chain, in MrBayes 3.1's format (the thesis') or
// 3.2.7's (Debian's), padded to a fixed width so that mfg can map them.
//
// Run drives the workload over any communicator with rank 0 writing the
// 2 x nruns files (serial), every rank writing its view of the parallel
// file with one vectored write (MFG), or no I/O; Split turns a parallel
// file back into the serial files, checking it byte by byte. Matrix
// writes the NEXUS input matrices of the thesis' gtaxa.
//
// The package is pure: files, ranks and the store come in as interfaces.
// See docs/mfg.md.
package mcmc

import (
	"errors"
	"fmt"
	"math"

	"github.com/pario/pario/mfg"
)

// ErrInvalid is wrapped by every error about bad parameters or a file
// Split cannot account for.
var ErrInvalid = errors.New("mcmc: invalid input")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// DeltaT is the heating increment of the thesis' chapter 7.
const DeltaT = 0.5

// Heat is beta of heat index j (0 is cold): 1/(1 + dT j).
func Heat(j int) float64 { return 1 / (1 + DeltaT*float64(j)) }

// Limits that keep lines and the file bounded.
const (
	MinTaxa = 4       // MrBayes needs four taxa for an unrooted tree
	MaxTaxa = 1 << 16 // 24 B per taxon: 1.5 MB lines
	MaxGens = 1 << 40
)

// Params is one analysis.
type Params struct {
	Runs, Chains, Procs int
	Taxa                int
	Gens                int64 // generations 1..Gens
	SampleFreq          int64 // a generation g with g % SampleFreq == 0 is sampled
	SwapFreq            int64 // heat swaps are tried every SwapFreq generations
	Seed                uint64
	Format              Format
	// FileID is the files' "[ID: N]"; 0 takes ten digits from the seed.
	// Split sets it from the file (MrBayes' IDs need not be ten digits).
	FileID uint64
}

// Config is the chain distribution of p.
func (p Params) Config() mfg.Config {
	return mfg.Config{Runs: p.Runs, Chains: p.Chains, Procs: p.Procs}
}

// Validate reports parameters MrBayes (or the map) would refuse.
func (p Params) Validate() error {
	if err := p.Config().Validate(); err != nil {
		return fmt.Errorf("mcmc: %w", err)
	}
	switch {
	case p.Taxa < MinTaxa || p.Taxa > MaxTaxa:
		return invalid("taxa must be in [%d, %d], got %d", MinTaxa, MaxTaxa, p.Taxa)
	case p.Gens < 1 || p.Gens > MaxGens:
		return invalid("generations must be in [1, %d], got %d", int64(MaxGens), p.Gens)
	case p.SampleFreq < 1:
		return invalid("sample frequency must be at least 1, got %d", p.SampleFreq)
	case p.SwapFreq < 1:
		return invalid("swap frequency must be at least 1, got %d", p.SwapFreq)
	case p.Format != MB31 && p.Format != MB327:
		return invalid("unknown format %d", p.Format)
	}
	if _, err := mfg.New(p.Desc()); err != nil {
		return fmt.Errorf("mcmc: %w", err)
	}
	return nil
}

// splitmix64 is the mixing function of every draw: the whole workload is
// a function of the seed, so every rank can compute any chain's state and
// every run's swaps without asking another rank.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func hash(seed uint64, vs ...uint64) uint64 {
	h := splitmix64(seed)
	for _, v := range vs {
		h = splitmix64(h ^ v)
	}
	return h
}

// unit is a draw in [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// Stream tags keep the draws of different purposes apart.
const (
	tagLnL = iota + 1
	tagSwap
	tagTree
	tagParam
)

// LnL is the log likelihood of run r's chain c at generation gen: a draw
// in (-(1000 + 500 taxa), -1000], as if the chain's state were new every
// generation.
func (p Params) LnL(r, c int, gen int64) float64 {
	return -1000 - 500*float64(p.Taxa)*unit(hash(p.Seed, tagLnL, uint64(r), uint64(c), uint64(gen)))
}

// RunState is one run's chains: heat[c] is chain c's heat index (0 is cold).
// Chains keep their states and swap heats, as in MrBayes.
type RunState struct {
	p    Params
	r    int
	heat []int
	cold int // the chain whose heat index is 0
	gen  int64
}

// NewRun is run r at generation 0: chain c has heat index c.
func (p Params) NewRun(r int) *RunState {
	h := make([]int, p.Chains)
	for c := range h {
		h[c] = c
	}
	return &RunState{p: p, r: r, heat: h}
}

// Cold is the chain holding the cold heat.
func (u *RunState) Cold() int { return u.cold }

// Gen is the generation the run is at.
func (u *RunState) Gen() int64 { return u.gen }

// Step advances the run one generation: every SwapFreq generations two
// distinct chains are drawn and their heats swapped with the Metropolis
// probability min(1, exp((beta_i - beta_j)(lnL_j - lnL_i))).
func (u *RunState) Step() {
	u.gen++
	if u.p.Chains < 2 || u.gen%u.p.SwapFreq != 0 {
		return
	}
	h := hash(u.p.Seed, tagSwap, uint64(u.r), uint64(u.gen))
	n := uint64(u.p.Chains)
	i := int(h % n)
	j := int(splitmix64(h) % (n - 1))
	if j >= i {
		j++
	}
	bi, bj := Heat(u.heat[i]), Heat(u.heat[j])
	lr := (bi - bj) * (u.p.LnL(u.r, j, u.gen) - u.p.LnL(u.r, i, u.gen))
	if lr >= 0 || math.Log(unit(splitmix64(h^0xa5a5))) < lr {
		u.heat[i], u.heat[j] = u.heat[j], u.heat[i]
		switch {
		case u.heat[i] == 0:
			u.cold = i
		case u.heat[j] == 0:
			u.cold = j
		}
	}
}

// Holder is the rank holding the run's cold chain.
func (u *RunState) Holder() int { return u.p.Config().RankOf(u.r*u.p.Chains + u.cold) }
