package mfg

import (
	"errors"
	"fmt"
	"math"
)

// ErrLambda is wrapped by CheckLambda's error: lambda generations of lines
// do not fit in some node's memory without swapping.
var ErrLambda = errors.New("mfg: lambda does not fit in memory")

// Node is what equation 6.1 needs to know of one node, in bytes.
type Node struct {
	Name          string // for messages
	Memory        int64  // M_T: physical main memory
	SwapThreshold int64  // M_ST: free memory below which the OS swaps
	ProcMemory    int64  // M_Proc: the processes' own memory
	LineMemory    int64  // M_Line: one run's lines of one generation
	LocalRuns     int    // R_l: the runs its processes hold
	Swapping      bool   // the OS swapped during the first generation
}

// LambdaMax is equation 6.1: (M_T - (M_ST + M_Proc)) / (M_Line * R_l), the
// most generations of lines the node can keep before it swaps; 0 when not
// even one fits. A node without lines to keep has no bound:
// math.MaxInt64.
func LambdaMax(n Node) (int64, error) {
	switch {
	case n.Memory < 0 || n.SwapThreshold < 0 || n.ProcMemory < 0 || n.LineMemory < 0 || n.LocalRuns < 0:
		return 0, invalid("node %q: memory sizes and local runs must not be negative (%+v)", n.Name, n)
	case n.LineMemory == 0 || n.LocalRuns == 0:
		return math.MaxInt64, nil
	}
	if n.SwapThreshold > n.Memory || n.ProcMemory >= n.Memory-n.SwapThreshold {
		return 0, nil
	}
	free := n.Memory - n.SwapThreshold - n.ProcMemory
	if n.LineMemory > free/int64(n.LocalRuns) {
		return 0, nil
	}
	return free / (n.LineMemory * int64(n.LocalRuns)), nil
}

// LambdaLimit is the largest lambda to use on nodes: 75% of the smallest
// lambda_max over all nodes, and 1 if any node swapped in the first
// generation or cannot keep even one generation (lines must be written in
// any case, so lambda 1 is always allowed). math.MaxInt64 when no node has
// lines to keep.
func LambdaLimit(nodes []Node) (int64, error) {
	if len(nodes) == 0 {
		return 0, invalid("lambda: no nodes")
	}
	least := int64(math.MaxInt64)
	for _, n := range nodes {
		lm, err := LambdaMax(n)
		if err != nil {
			return 0, err
		}
		if n.Swapping {
			lm = 0
		}
		least = min(least, lm)
	}
	if least == math.MaxInt64 {
		return least, nil
	}
	return share(least), nil
}

// share is 75% of lambda_max (6.3.2), rounded down, and at least 1:
// lambda 1 is always allowed, the lines must be written.
func share(lm int64) int64 {
	q := lm - lm/4
	if lm%4 != 0 {
		q--
	}
	return max(1, q)
}

// CheckLambda reports a lambda larger than LambdaLimit(nodes), naming the
// node that bounds it.
func CheckLambda(lambda int64, nodes []Node) error {
	if lambda < 1 {
		return invalid("lambda must be at least 1, got %d", lambda)
	}
	limit, err := LambdaLimit(nodes)
	if err != nil {
		return err
	}
	if lambda <= limit {
		return nil
	}
	for _, n := range nodes {
		lm, _ := LambdaMax(n)
		switch {
		case n.Swapping:
			return fmt.Errorf("%w: lambda %d: node %q swapped in the first generation, so lambda is 1", ErrLambda, lambda, n.Name)
		case share(lm) == limit:
			return fmt.Errorf("%w: lambda %d: at most %d (75%% of the smallest lambda_max, eq. 6.1): node %q has room for %d generations of %d runs x %d B",
				ErrLambda, lambda, limit, n.Name, lm, n.LocalRuns, n.LineMemory)
		}
	}
	return fmt.Errorf("%w: lambda %d: at most %d", ErrLambda, lambda, limit)
}

// DepthRef is the reference strip of the depth of I/O parallelism: 64 KiB,
// simple_stripe's default (7.3).
const DepthRef = 65536

// DepthIOZ is delta_ioz, the depth of I/O parallelism of one generation:
// the 64 KiB strips each server receives per generation. The thesis'
// arithmetic in 7.7.1 fixes the reading: delta_ioz = 8 is 4 MB per
// generation on 8 nodes, 512 KB per node.
func DepthIOZ(dataGen int64, servers int) (float64, error) {
	if dataGen < 0 || servers < 1 {
		return 0, invalid("depth: data per generation %d and servers %d: want >= 0 and >= 1", dataGen, servers)
	}
	return float64(dataGen) / float64(servers) / DepthRef, nil
}

// Thresholds of the automatic lambda (8.2.4.1, 7.7.2.3).
const (
	LambdaAutoMax   = 16  // the largest lambda the thesis found to help
	LambdaAutoDepth = 4.0 // lambda > 1 helps up to this delta_ioz
	DepthLimit      = 8.0 // DP_lim: from here lambda > 1 hurts
)

// AutoLambda is the thesis' rule for lambda: 1 if a node swapped in the
// first generation or delta_ioz > 4 (8.2.4.1 says from DP_lim = 8; 7.7.2.3
// measured that lambda > 1 already costs time above 4 and applies lambda 1
// there, so the stricter bound is used), else up to 16, within limit (see
// LambdaLimit) and the number of samples (a buffer never holds more than
// the whole run: eq. 7.6's lambda = wnum).
func AutoLambda(depth float64, swapping bool, limit, samples int64) (int64, error) {
	if depth < 0 || math.IsNaN(depth) || limit < 1 || samples < 1 {
		return 0, invalid("auto lambda: depth %v, limit %d, samples %d: want depth >= 0, limit and samples >= 1", depth, limit, samples)
	}
	if swapping || depth > LambdaAutoDepth {
		return 1, nil
	}
	return min(int64(LambdaAutoMax), limit, samples), nil
}

// SuThreshold is su_threshold of 8.2.4.2: strips from it up to su_max were
// within 2% of the best in 7.7.1.
const SuThreshold = 100

// SuMax is equation 7.4: data_gen / N_IO, the largest strip that still
// spreads one generation over every server (delta_iox = 100%); at least 1.
func SuMax(dataGen int64, servers int) (int64, error) {
	if dataGen < 1 || servers < 1 {
		return 0, invalid("su_max: data per generation %d and servers %d must be at least 1", dataGen, servers)
	}
	return max(1, dataGen/int64(servers)), nil
}

// SuGood says whether strip size su is in [su_threshold, su_max], the range
// 8.2.4.2 recommends. When su_max is below the threshold only su_max is.
func SuGood(su, dataGen int64, servers int) (bool, error) {
	sm, err := SuMax(dataGen, servers)
	if err != nil {
		return false, err
	}
	if su < 1 {
		return false, invalid("strip size must be at least 1, got %d", su)
	}
	return su <= sm && su >= min(int64(SuThreshold), sm), nil
}

// VscsMin is equation 7.5: the smallest varstrip chunk, data_gen / N_IO,
// one generation per write (lambda = 1).
func VscsMin(dataGen int64, servers int) (int64, error) {
	if dataGen < 1 || servers < 1 {
		return 0, invalid("vscs_min: data per generation %d and servers %d must be at least 1", dataGen, servers)
	}
	return dataGen / int64(servers), nil
}

// VscsMax is equation 7.6: the largest varstrip chunk, data_total / N_IO,
// the whole run in one write (lambda = wnum). The run-major layout's
// strips (Strips) are this size.
func VscsMax(dataTotal int64, servers int) (int64, error) {
	if dataTotal < 1 || servers < 1 {
		return 0, invalid("vscs_max: total data %d and servers %d must be at least 1", dataTotal, servers)
	}
	return dataTotal / int64(servers), nil
}
