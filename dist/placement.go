package dist

import (
	"strconv"
	"strings"
)

// hintServers is the layout key that pins a file's datafiles to named I/O
// servers: servers=2;5;7 puts datafile 0 on server 2, 1 on 5, 2 on 7 (';'
// since ',' separates parameters). Without it the metadata server places
// them round robin. It is the thesis' data placement control (section
// 3.2.2.1): a varstrip rank's datafile on its own node's server, or a
// file kept off a busy server.
const hintServers = "servers"

// MaxPinned bounds the servers a placement names.
const MaxPinned = 1 << 16

// FormatServers is the canonical text of a placement: "2;5;7".
func FormatServers(servers []int) string {
	var b strings.Builder
	for i, s := range servers {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(strconv.Itoa(s))
	}
	return b.String()
}

// ParseServers reads a placement "2;5;7": server indexes in datafile
// order, decimal, each named once.
func ParseServers(s string) ([]int, error) {
	if s == "" {
		return nil, errorf("%s: empty server list", hintServers)
	}
	fields := strings.Split(s, ";")
	if len(fields) > MaxPinned {
		return nil, errorf("%s: %d servers, at most %d", hintServers, len(fields), MaxPinned)
	}
	out := make([]int, len(fields))
	seen := make(map[int64]bool, len(fields))
	for i, f := range fields {
		v, ok := parseUint(f)
		switch {
		case !ok:
			return nil, errorf("%s: %q (datafile %d) is not a server index", hintServers, f, i)
		case v >= MaxPinned:
			return nil, errorf("%s: server %d (datafile %d) is too large", hintServers, v, i)
		case seen[v]:
			return nil, errorf("%s: server %d named twice (datafiles of one file on one server would share its bandwidth and its datafile ID)", hintServers, v)
		}
		seen[v] = true
		out[i] = int(v)
	}
	return out, nil
}

// Placement is the pinned placement of the layout's datafiles, nil if the
// metadata server chooses.
func (l Layout) Placement() ([]int, error) {
	if l.Servers == "" {
		return nil, nil
	}
	return ParseServers(l.Servers)
}

// checkPlacement checks a pinned placement against a file of n datafiles
// on a cluster of servers I/O servers.
func checkPlacement(l Layout, n, servers int) error {
	p, err := l.Placement()
	if err != nil || p == nil {
		return err
	}
	if len(p) != n {
		return errorf("%s: %d servers named for %d datafiles", hintServers, len(p), n)
	}
	for d, s := range p {
		if s >= servers {
			return errorf("%s: datafile %d on server %d, but the cluster has %d servers", hintServers, d, s, servers)
		}
	}
	return nil
}
