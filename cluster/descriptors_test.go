package cluster

import (
	"strings"
	"testing"

	"github.com/pario/pario/server/data"
)

func TestDescriptorShare(t *testing.T) {
	for _, tc := range []struct {
		limit          uint64
		n              int
		handles, conns int
		refused        string
	}{
		// This machine's limit, the default cluster: the handle cache at
		// its default, connections capped at a fifth of what is left each.
		{limit: 20000, n: 4, handles: data.DefaultMaxOpenFiles, conns: (20000 - 64 - 4*260) / 5 / 2},
		{limit: 20000, n: 16, handles: (20000 - 64 - 16*260) / 17 / 2, conns: (20000 - 64 - 16*260) / 17 / 2},
		{limit: 1 << 20, n: 1, handles: data.DefaultMaxOpenFiles, conns: (1<<20 - 64 - 260) / 2 / 2},
		// The most that fit, and one more.
		{limit: 20000, n: 61, handles: (20000 - 64 - 61*260) / 62 / 2, conns: (20000 - 64 - 61*260) / 62 / 2},
		{limit: 20000, n: 62, refused: "62 I/O servers in one process need at least 20216 open descriptors (324 each"},
		{limit: 20000, n: 100000, refused: "this process may open 20000 (ulimit -n): at most 61 I/O servers here"},
		{limit: 400, n: 4, refused: "at most 0 I/O servers here"},
		{limit: 10, n: 1, refused: "at most 0 I/O servers here"},
		{limit: ^uint64(0), n: 4, handles: data.DefaultMaxOpenFiles, conns: 1 << 30},
	} {
		h, c, err := descriptorShare(tc.limit, tc.n)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("descriptorShare(%d, %d) = %d, %d, %v; want an error saying %q", tc.limit, tc.n, h, c, err, tc.refused)
			}
			continue
		}
		if err != nil || h != tc.handles || c != tc.conns {
			t.Errorf("descriptorShare(%d, %d) = %d, %d, %v; want %d, %d", tc.limit, tc.n, h, c, err, tc.handles, tc.conns)
		}
		// What the servers may hold together stays within the limit.
		if total := uint64(tc.n)*(data.DirDescriptors+uint64(h)+uint64(c)) + processReserve + uint64(c); tc.limit != ^uint64(0) && total > tc.limit {
			t.Errorf("descriptorShare(%d, %d): %d descriptors in all, over the limit", tc.limit, tc.n, total)
		}
	}
}
