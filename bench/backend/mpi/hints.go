//go:build hdf5

package mpi

import (
	"fmt"
	"strings"
)

// CheckHints checks an MPI-IO hints option, key=value[,key=value...],
// before MPI sees it: an item without a key and a value was dropped
// without a word, so a mistyped hint looked taken. (MPI itself ignores
// keys and values it does not know: that stays the library's business.)
func CheckHints(option, hints string) error {
	if hints == "" {
		return nil
	}
	for _, kv := range strings.Split(hints, ",") {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return fmt.Errorf("%s %q: %q is not key=value (e.g. romio_cb_write=enable)", option, hints, kv)
		case strings.TrimSpace(k) == "":
			return fmt.Errorf("%s %q: %q has no key", option, hints, kv)
		case v == "":
			return fmt.Errorf("%s %q: %q has no value", option, hints, kv)
		}
	}
	return nil
}
