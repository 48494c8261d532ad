package data

import (
	"os"

	"github.com/pario/pario/vfs"
)

// pwritev moved to vfs with the rest of the system calls; this keeps the
// store's test of it (TestPwritevPartial) as it was.
func pwritev(f *os.File, bufs [][]byte, off int64) (int64, error) {
	return vfs.OSFile{File: f}.WriteAtv(bufs, off)
}
