package fusefs

import (
	"os"
	"slices"
	"testing"
)

func TestParseGroups(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []uint32
	}{
		{"", nil},
		{"\t", nil},
		{"\t0 4 27 1000 ", []uint32{0, 4, 27, 1000}},
		{" 4294967295 x 4294967296 -1 5", []uint32{4294967295, 5}},
	} {
		if got := parseGroups(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("parseGroups(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// This process's groups read from /proc are what getgroups(2) says; a
// thread that does not exist has none.
func TestProcGroups(t *testing.T) {
	want, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	var w []uint32
	for _, g := range want {
		w = append(w, uint32(g))
	}
	if got := procGroups(uint32(os.Getpid())); !slices.Equal(got, w) {
		t.Errorf("procGroups(self) = %v, want %v", got, w)
	}
	if got := procGroups(0); got != nil {
		t.Errorf("procGroups(0) = %v, want none", got)
	}
	var cs callers
	if got := cs.groups(1<<31, 5, 5); got != nil {
		t.Errorf("groups of no thread = %v, want none", got)
	}
}
