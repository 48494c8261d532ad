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

// EnvHintPrefix is IOR's prefix for MPI-IO hints in the environment
// (IOR_HINT__MPI__romio_cb_write=enable): IOR's MPIIO, HDF5 and NCMPI
// back ends pass every such variable to MPI_Info_set, so a script that
// sets hints this way must get them from pario bench too.
const EnvHintPrefix = "IOR_HINT__MPI__"

// HintLines is what the back ends' C code reads (one key=value a line):
// IOR's hints from env (EnvHintPrefix; a value may hold commas, as
// cb_config_list's does) first, then those of the option (comma-separated),
// so that the option's value wins for a key in both (the later
// MPI_Info_set of a key replaces the earlier).
func HintLines(option string, env []string) string {
	var lines []string
	for _, kv := range env {
		rest, ok := strings.CutPrefix(kv, EnvHintPrefix)
		if !ok {
			continue
		}
		if k, v, ok := strings.Cut(rest, "="); ok && k != "" && v != "" && !strings.Contains(v, "\n") {
			lines = append(lines, k+"="+v)
		}
	}
	if option != "" {
		lines = append(lines, strings.Split(option, ",")...)
	}
	return strings.Join(lines, "\n")
}
