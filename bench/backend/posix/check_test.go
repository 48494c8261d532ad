package posix

import (
	"strings"
	"testing"
)

// A store path given to a local back end (POSIX is the default) says to
// use -a PARIO; before, it said "directory pario: does not exist".
func TestCheckPathOfAStorePath(t *testing.T) {
	for _, write := range []bool{true, false} {
		err := CheckPath("pario:/x", write)
		if err == nil || !strings.Contains(err.Error(), "use -a PARIO") {
			t.Errorf("CheckPath(pario:/x, write %v): %v, want it to point at -a PARIO", write, err)
		}
	}
}
