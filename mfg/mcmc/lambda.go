package mcmc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pario/pario/mfg"
)

// NodeOf is equation 6.1's view of a node for p: memory as given, the
// lines of one run and generation (M_Line), and the runs whose lines the
// node's ranks keep (R_l): the runs of ranks, the ranks on the node.
func (p Params) NodeOf(name string, memory, swapThreshold, procMemory int64, ranks []int, swapping bool) mfg.Node {
	runs := 0
	for _, k := range ranks {
		lo, hi := p.Config().RunsOf(k)
		runs += hi - lo
	}
	return mfg.Node{Name: name, Memory: memory, SwapThreshold: swapThreshold, ProcMemory: procMemory,
		LineMemory: p.TWidth() + p.PWidth(), LocalRuns: runs, Swapping: swapping}
}

// Lambda is the lambda of a run: requested, if it is within limit
// (mfg.LambdaLimit over all nodes); with auto, the thesis' rule
// (mfg.AutoLambda) for p's data per generation over servers. A lambda
// larger than the samples is cut to them: a buffer never holds more than
// the whole run.
func (p Params) Lambda(requested int64, auto bool, servers int, limit int64, swapping bool) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	m, err := mfg.New(p.Desc())
	if err != nil {
		return 0, fmt.Errorf("mcmc: %w", err)
	}
	if limit < 1 {
		return 0, invalid("lambda limit %d: want at least 1", limit)
	}
	if auto {
		depth, err := mfg.DepthIOZ(m.DataGen(), servers)
		if err != nil {
			return 0, fmt.Errorf("mcmc: %w", err)
		}
		l, err := mfg.AutoLambda(depth, swapping, limit, m.Samples())
		if err != nil {
			return 0, fmt.Errorf("mcmc: %w", err)
		}
		return l, nil
	}
	if requested < 1 {
		return 0, invalid("lambda must be at least 1, got %d", requested)
	}
	requested = min(requested, m.Samples())
	switch {
	case swapping && requested > 1:
		return 0, fmt.Errorf("%w: lambda %d: a node swapped in the first generation, so lambda is 1", mfg.ErrLambda, requested)
	case requested > limit:
		return 0, fmt.Errorf("%w: lambda %d: at most %d generations of %d B per run fit in memory (75%% of the smallest lambda_max, eq. 6.1)",
			mfg.ErrLambda, requested, limit, p.TWidth()+p.PWidth())
	}
	return requested, nil
}

// Unlimited is the limit of nodes that keep no lines.
const Unlimited = math.MaxInt64

// ParseMeminfo reads MemTotal and MemAvailable, in bytes, from the text of
// Linux's /proc/meminfo.
func ParseMeminfo(b []byte) (total, avail int64, err error) {
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || v < 0 || v > math.MaxInt64>>10 {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			total = v << 10
		case "MemAvailable:":
			avail = v << 10
		}
	}
	if total == 0 || avail == 0 {
		return 0, 0, errors.New("no MemTotal or MemAvailable in /proc/meminfo")
	}
	return total, avail, nil
}

// LambdaLimitOn is eq. 6.1's limit on a node with total bytes of memory of
// which avail are available now (what the other processes use and the
// kernel's reserve count as the swap threshold), counting the lines of the
// runs of all ranks as if all ran there.
func (p Params) LambdaLimitOn(host string, total, avail int64, ranks int) (int64, error) {
	all := make([]int, ranks)
	for k := range all {
		all[k] = k
	}
	return mfg.LambdaLimit([]mfg.Node{p.NodeOf(host, total, total-avail, 0, all, false)})
}
