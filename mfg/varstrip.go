package mfg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pario/pario/dist"
)

// ErrNotFixed is wrapped by Strips' error when the writers of the runs can
// change during the run: varstrip cannot follow them.
var ErrNotFixed = errors.New("mfg: the writer assignment changes during the run")

// RoundRobin places rank k on server k mod servers, the datafile Strips
// gives its bytes to.
func RoundRobin(procs, servers int) []int {
	out := make([]int, procs)
	for k := range out {
		out[k] = k % servers
	}
	return out
}

// Strips is the varstrip strips parameter ("d0:s0;d1:s1;...") that keeps
// every rank's bytes on its own server, serverOf[rank], for the whole run.
//
// With the run-major layout a rank's runs are one contiguous area of the
// file over all generations, so the strips are those areas, one per rank:
// eq. 7.6's vscs_max (lambda = wnum), not eq. 7.5's one-generation chunk,
// which in this layout would deal a rank's later generations to other
// servers. The file header goes with run 0. Adjacent strips on one server
// are merged.
//
// That needs an assignment that never changes: pi_1 (table 6.1: nruns mod
// np == 0, nruns >= 2). The thesis also ran varstrip with fewer runs than
// processes, each process holding chains of one run only (figure 7.5: 2
// and 4 runs x 4 chains on 8 processes); there a run's cold chain moves
// within its group of processes, and the strips keep each run's bytes on
// the server of the rank that writes it in the first generation. Every
// other config is refused with ErrNotFixed: use simple_stripe.
func Strips(m *Map, c Config, serverOf []int) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	if m.Runs() != c.Runs {
		return "", invalid("varstrip: the map has %d runs, config %s has %d", m.Runs(), c, c.Runs)
	}
	if len(serverOf) != c.Procs {
		return "", invalid("varstrip: %d servers named for %d processes", len(serverOf), c.Procs)
	}
	servers := 0
	for k, s := range serverOf {
		if s < 0 {
			return "", invalid("varstrip: rank %d on server %d", k, s)
		}
		servers = max(servers, s+1)
	}
	if !c.Pi1() && !c.RunGroups() {
		p, _ := c.Classify(c.Initial())
		return "", fmt.Errorf("%w: varstrip for %s (runs/chains/processes, %s in the first generation, %d I/O swaps possible) would move a run's lines between servers; varstrip needs pi_1 (runs a multiple of processes) or processes that each hold chains of one run; use simple_stripe",
			ErrNotFixed, c, p, c.IOSwaps())
	}
	type strip struct {
		df   int
		size int64
	}
	var strips []strip
	holders := c.Initial()
	for r := 0; r < c.Runs; r++ {
		size := m.RunSize()
		if r == 0 {
			size += m.RunOffset(0) // the file header
		}
		df := serverOf[holders[r]]
		if k := len(strips) - 1; k >= 0 && strips[k].df == df {
			strips[k].size += size
			continue
		}
		strips = append(strips, strip{df, size})
	}
	var b strings.Builder
	for i, s := range strips {
		if s.size > dist.MaxStripSize {
			return "", invalid("varstrip: the strip of datafile %d would be %d bytes, more than dist's limit of %d", s.df, s.size, int64(dist.MaxStripSize))
		}
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(strconv.Itoa(s.df))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(s.size, 10))
	}
	out := b.String()
	if _, err := dist.New(dist.Varstrip, "strips="+out, servers); err != nil {
		return "", fmt.Errorf("mfg: varstrip strips for %s: %w", c, err)
	}
	return out, nil
}
