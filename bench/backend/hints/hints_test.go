package hints

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// IOR's hints from the environment reach the back ends, then the file's,
// then the option's (the last wins for a key in several); a value keeps
// its commas, and other variables, and items without a key or value, are
// left out.
func TestLines(t *testing.T) {
	env := []string{
		"PATH=/bin",
		"IOR_HINT__MPI__romio_cb_write=enable",
		"IOR_HINT__MPI__cb_config_list=*:1,node2:1",
		"IOR_HINT__GPFS__important=yes", // IOR's GPFS hints are not MPI's
		"IOR_HINT__MPI__=novalue",
		"IOR_HINT__MPI__empty=",
		"IOR_HINT__MPI__striping_unit=1048576",
	}
	fromEnv := "romio_cb_write=enable\ncb_config_list=*:1,node2:1\nstriping_unit=1048576"
	file := filepath.Join(t.TempDir(), "hints")
	if err := os.WriteFile(file, []byte("# IOR hints\nIOR_HINT__MPI__cb_nodes = 4\nIOR_HINT__MPI__romio_cb_write=automatic\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set  Set
		want string
	}{
		{Set{}, fromEnv},
		{Set{Hints: "romio_cb_write=disable,cb_nodes=2"}, fromEnv + "\nromio_cb_write=disable\ncb_nodes=2"},
		{Set{File: file}, fromEnv + "\ncb_nodes=4\nromio_cb_write=automatic"},
		{Set{File: file, Hints: "cb_nodes=2"}, fromEnv + "\ncb_nodes=4\nromio_cb_write=automatic\ncb_nodes=2"},
	} {
		if err := tc.set.Check("mpiio"); err != nil {
			t.Fatal(err)
		}
		if got := tc.set.Lines(env); got != tc.want {
			t.Errorf("%+v: Lines = %q, want %q", tc.set, got, tc.want)
		}
	}
	if got := (&Set{Hints: "a=b,c=d"}).Lines(nil); got != "a=b\nc=d" {
		t.Errorf("Lines without IOR's variables = %q", got)
	}
}

// A bad hint in the option or the file is an error naming the option,
// the file and the line; a file that cannot be read too (IOR warned and
// ran without its hints).
func TestCheckErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		set  Set
		want []string
	}{
		{Set{Hints: "romio_cb_write"}, []string{"--mpiio.hints", `"romio_cb_write" is not key=value`}},
		{Set{Hints: "=enable"}, []string{"--mpiio.hints", "has no key"}},
		{Set{Hints: "a=b,cb_nodes="}, []string{"--mpiio.hints", `"cb_nodes=" has no value`}},
		{Set{File: filepath.Join(dir, "missing")}, []string{"--mpiio.hintsfilename", "missing", "no such file"}},
		{Set{File: dir}, []string{"--mpiio.hintsfilename", "not a regular file"}},
		{Set{File: write("novalue", "# ok\nIOR_HINT__MPI__cb_nodes=\n")}, []string{"--mpiio.hintsfilename", "novalue:2:", "want IOR_HINT__MPI__key=value"}},
		{Set{File: write("nokey", "IOR_HINT__MPI__ = 4\n")}, []string{"nokey:1:"}},
		{Set{File: write("noeq", "IOR_HINT__MPI__cb_nodes\n")}, []string{"noeq:1:"}},
		{Set{File: write("space", "IOR_HINT__MPI__cb nodes=4\n")}, []string{"space:1:", "the key has a space"}},
		{Set{File: write("layer", "IOR_HINT__POSIX__x=1\n")}, []string{"layer:1:", "not a hint pario gives MPI"}},
		{Set{File: write("big", strings.Repeat("x", maxFile+1))}, []string{"big: over 1048576 bytes"}},
	} {
		err := tc.set.Check("mpiio")
		if err == nil {
			t.Errorf("%+v: no error", tc.set)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v; want it to say %q", tc.set, err, w)
			}
		}
	}
}

// FuzzParse: no input panics Parse, and every hint it returns is one
// key=value line with a key and a value, as MPI_Info_set needs.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"IOR_HINT__MPI__romio_cb_write=enable\n",
		"# comment\nIOR_HINT__MPI__cb_nodes = 4\r\nIOR_HINT__GPFS__x=1\n",
		"IOR_HINT__MPI__a=b=c\nIOR_HINT__MPI__=x\n",
		"IOR_HINT__MPI__\x00=1",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines, err := Parse("f", strings.NewReader(s))
		if err != nil {
			return
		}
		for _, l := range lines {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" || v == "" || strings.ContainsAny(l, "\n\x00") || strings.ContainsAny(k, " \t") {
				t.Fatalf("Parse(%q) gave hint %q", s, l)
			}
		}
	})
}
