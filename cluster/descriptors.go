package cluster

import (
	"fmt"

	"github.com/pario/pario/server/data"
)

// An embedded cluster runs every server in one process, under one limit
// on open descriptors (RLIMIT_NOFILE), while each server on its own sizes
// its caches and connection cap from that whole limit, as if it were
// alone. With many servers those caps add up past the limit, and under
// load an open fails with EMFILE in the middle of a run. So Start shares
// the limit out before anything starts, or refuses a count that cannot
// fit.
const (
	// processReserve is left to everything that is not a server's: the
	// metadata server's database, listeners, logs, the standard streams.
	processReserve = 64
	// minShare is the least a server may get besides its directories,
	// for datafile handles and connections together.
	minShare = 64
)

// descriptorShare divides limit descriptors among n I/O servers and the
// metadata server: each I/O server keeps data.DirDescriptors for its
// directories, and the rest is split evenly among the n+1 servers, half
// for datafile handles (at most data.DefaultMaxOpenFiles) and half for
// connections. It says how many I/O servers fit when n do not.
func descriptorShare(limit uint64, n int) (handles, conns int, err error) {
	perServer := uint64(data.DirDescriptors + minShare)
	if limit < processReserve+minShare || (limit-processReserve-minShare)/perServer < uint64(n) {
		most := 0
		if limit >= processReserve+minShare {
			most = int(min((limit-processReserve-minShare)/perServer, 1<<30))
		}
		return 0, 0, fmt.Errorf("%d I/O servers in one process need at least %d open descriptors (%d each, and %d for the metadata server and the process); "+
			"this process may open %d (ulimit -n): at most %d I/O servers here, or raise ulimit -n, or run them as separate `pario data` processes",
			n, uint64(n)*perServer+processReserve+minShare, perServer, processReserve+minShare, limit, most)
	}
	share := (limit - processReserve - uint64(n)*data.DirDescriptors) / uint64(n+1)
	half := int(min(share/2, 1<<30))
	return min(half, data.DefaultMaxOpenFiles), half, nil
}

// CheckServerCount says why n I/O servers cannot run in this process
// (Start's check, for a command to make before it starts anything), or
// nil.
func CheckServerCount(n int) error {
	_, _, err := descriptorShare(nofileLimit(), n)
	return err
}
