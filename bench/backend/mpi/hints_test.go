//go:build hdf5

package mpi

import "testing"

// IOR's hints from the environment reach the back ends, before the
// option's (which win for a key in both); a value keeps its commas, and
// other variables, and items without a key or value, are left out.
func TestHintLines(t *testing.T) {
	env := []string{
		"PATH=/bin",
		"IOR_HINT__MPI__romio_cb_write=enable",
		"IOR_HINT__MPI__cb_config_list=*:1,node2:1",
		"IOR_HINT__GPFS__important=yes", // IOR's GPFS hints are not MPI's
		"IOR_HINT__MPI__=novalue",
		"IOR_HINT__MPI__empty=",
		"IOR_HINT__MPI__striping_unit=1048576",
	}
	for _, tc := range []struct {
		option, want string
	}{
		{"", "romio_cb_write=enable\ncb_config_list=*:1,node2:1\nstriping_unit=1048576"},
		{"romio_cb_write=disable,cb_nodes=2", "romio_cb_write=enable\ncb_config_list=*:1,node2:1\nstriping_unit=1048576\nromio_cb_write=disable\ncb_nodes=2"},
	} {
		if got := HintLines(tc.option, env); got != tc.want {
			t.Errorf("HintLines(%q) = %q, want %q", tc.option, got, tc.want)
		}
	}
	if got := HintLines("a=b,c=d", nil); got != "a=b\nc=d" {
		t.Errorf("HintLines without IOR's variables = %q", got)
	}
}
