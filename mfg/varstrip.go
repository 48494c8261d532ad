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

// RoundRobin places rank k on server k mod servers, the server Strips
// keeps its bytes on; nil if either count is below 1.
func RoundRobin(procs, servers int) []int {
	if procs < 1 || servers < 1 {
		return nil
	}
	out := make([]int, procs)
	for k := range out {
		out[k] = k % servers
	}
	return out
}

// Strips is the varstrip strips parameter ("d0:s0;d1:s1;...") that keeps
// every rank's bytes on its own server, serverOf[rank], for the whole run,
// and the placement of its datafiles: datafile d must be on server
// placement[d]. Datafiles are numbered in the order the file first reaches
// them (varstrip wants them numbered without gaps, and a server without a
// writer gets none), so with RoundRobin and pi_1 datafile d is server d.
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
func Strips(m *Map, c Config, serverOf []int) (strips string, placement []int, err error) {
	if err := c.Validate(); err != nil {
		return "", nil, err
	}
	if m.Runs() != c.Runs {
		return "", nil, invalid("varstrip: the map has %d runs, config %s has %d", m.Runs(), c, c.Runs)
	}
	if len(serverOf) != c.Procs {
		return "", nil, invalid("varstrip: %d servers named for %d processes", len(serverOf), c.Procs)
	}
	for k, s := range serverOf {
		if s < 0 {
			return "", nil, invalid("varstrip: rank %d on server %d", k, s)
		}
	}
	if !c.Pi1() && !c.RunGroups() {
		p, _ := c.Classify(c.Initial())
		return "", nil, fmt.Errorf("%w: varstrip for %s (runs/chains/processes, %s in the first generation, %d I/O swaps possible) would move a run's lines between servers; varstrip needs pi_1 (runs a multiple of processes) or processes that each hold chains of one run; use simple_stripe",
			ErrNotFixed, c, p, c.IOSwaps())
	}
	type strip struct {
		df   int
		size int64
	}
	var list []strip
	datafile := map[int]int{} // server -> datafile
	holders := c.Initial()
	for r := 0; r < c.Runs; r++ {
		size := m.RunSize()
		if r == 0 {
			size += m.RunOffset(0) // the file header
		}
		server := serverOf[holders[r]]
		df, ok := datafile[server]
		if !ok {
			df = len(placement)
			datafile[server] = df
			placement = append(placement, server)
		}
		if k := len(list) - 1; k >= 0 && list[k].df == df {
			list[k].size += size
			continue
		}
		list = append(list, strip{df, size})
	}
	var b strings.Builder
	for i, s := range list {
		if s.size > dist.MaxStripSize {
			return "", nil, invalid("varstrip: the strip of datafile %d (server %d) would be %d bytes, more than dist's limit of %d", s.df, placement[s.df], s.size, int64(dist.MaxStripSize))
		}
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(strconv.Itoa(s.df))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(s.size, 10))
	}
	strips = b.String()
	if _, err := dist.New(dist.Varstrip, "strips="+strips, len(placement)); err != nil {
		return "", nil, fmt.Errorf("mfg: varstrip strips for %s: %w", c, err)
	}
	return strips, placement, nil
}
