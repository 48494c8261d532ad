package meta

import (
	"fmt"
	"syscall"

	"github.com/pario/pario/dist"
)

// errPinnedDefault refuses servers= in a directory's default layout: a
// placement is a choice for one file (its datafiles' servers are recorded
// in the file's server list), and every file of a directory pinned to
// the same servers is what the round robin is there to avoid.
var errPinnedDefault = fmt.Errorf("a directory's default layout cannot pin servers (servers= is for one file): %w", syscall.EINVAL)

// placeFor lists the servers of a new file's n datafiles: the ones its
// layout pins (dist's servers=, already checked against n and the cluster
// by build), else round robin from first.
func (s *Store) placeFor(l dist.Layout, first uint32, n int) []uint32 {
	pin, err := l.Placement()
	if err != nil || len(pin) != n {
		// build has refused such a layout before any placement.
		return s.place(first, n)
	}
	servers := make([]uint32, n)
	for d, srv := range pin {
		servers[d] = uint32(srv)
	}
	return servers
}
