package fusefs_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/internal/testbin"
)

// Mounting over a directory that holds files is allowed (FUSE 3 allows
// it), but the files are out of sight until the unmount: the mount says
// so, where before it said nothing and a user could take them for lost.
// An empty mount point gets no warning.
func TestMountOverFilesWarns(t *testing.T) {
	need(t, "fusermount3")
	p := spawn(t)
	c := dial(t, p)
	for _, full := range []bool{true, false} {
		dir := t.TempDir()
		if full {
			if err := os.WriteFile(filepath.Join(dir, "results.csv"), []byte("1,2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		logs := &testbin.LockedBuffer{}
		srv, err := fusefs.Mount(c, dir, fusefs.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logs.String(), "the mount point is not empty")
		unmountOrDetach(t, srv)
		if warned != full {
			t.Errorf("mount point with files %v: warned %v; logs:\n%s", full, warned, logs.String())
		}
		if full {
			if b, err := os.ReadFile(filepath.Join(dir, "results.csv")); err != nil || string(b) != "1,2\n" {
				t.Errorf("the hidden file after the unmount: %q, %v", b, err)
			}
		}
	}
}
