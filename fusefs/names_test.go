package fusefs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/fusefs"
)

// The kernel looks every name up before it creates it; in a directory
// this mount made, the mount answers those lookups itself (names.go).

// Creating files in a directory made here asks the metadata server for no
// lookup, and neither does a stat of a name this mount removed.
func TestAbsentNamesAnsweredHere(t *testing.T) {
	_, m, calls := countingWithDir(t)
	if err := os.Mkdir(m.path("d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := calls.get("meta lookup")
	const n = 20
	for i := range n {
		f, err := os.OpenFile(m.path("d", fmt.Sprint("f", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(m.path("d", "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := statErr(m.path("d", "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat of an absent name: %v, want ENOENT", err)
	}
	if err := os.Remove(m.path("d", "f0")); err != nil {
		t.Fatal(err)
	}
	if err := statErr(m.path("d", "f0")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat of a removed name: %v, want ENOENT", err)
	}
	if got := calls.get("meta lookup") - before; got != 0 {
		t.Errorf("%d creates, a mkdir, a stat of an absent and of a removed name in directories made here sent %d lookups to the metadata server, want 0", n, got)
	}
	// Names it made are found, and looked up at the server when the
	// kernel asks (here: after they are dropped from its cache).
	if err := statErr(m.path("d", "f1")); err != nil {
		t.Errorf("stat of a file made here: %v", err)
	}
}

// The rule (docs/mount.md): a change made through another mount, or a
// native client, shows at this mount's next stat, with no retry, though
// this mount answered the name's absence itself just before.
func TestAbsentNamesNotStaleAcrossMounts(t *testing.T) {
	need(t, "mkfifo")
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	native := dial(t, p)
	waitLease(t, a)
	waitLease(t, b)
	ctx := context.Background()
	writeFile(t, b.path("elsewhere"), []byte("e"))
	cases := []struct {
		name   string
		change func(t *testing.T, dir string) // makes dir/x through B or the native client
	}{
		{"create", func(t *testing.T, dir string) { writeFile(t, b.path(dir, "x"), []byte("x")) }},
		{"mkdir", func(t *testing.T, dir string) {
			if err := os.Mkdir(b.path(dir, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink", func(t *testing.T, dir string) {
			if err := os.Symlink("target", b.path(dir, "x")); err != nil {
				t.Fatal(err)
			}
		}},
		{"mknod", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(b.path(dir, "x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"link", func(t *testing.T, dir string) {
			if err := os.Link(b.path("elsewhere"), b.path(dir, "x")); err != nil {
				t.Fatal(err)
			}
		}},
		{"rename in", func(t *testing.T, dir string) {
			writeFile(t, b.path(dir+".src"), []byte("r"))
			if err := os.Rename(b.path(dir+".src"), b.path(dir, "x")); err != nil {
				t.Fatal(err)
			}
		}},
		{"native create", func(t *testing.T, dir string) {
			f, err := native.Create(ctx, "/"+dir+"/x", client.CreateOptions{Mode: 0o644})
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}},
		{"removed and made again", func(t *testing.T, dir string) {
			// A made x, B removes it and makes it again: A must not
			// answer from before either change.
			if err := os.Remove(b.path(dir, "x")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(b.path(dir, "x"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for round := range 5 {
		for _, tc := range cases {
			dir := strings.ReplaceAll(fmt.Sprintf("%s.%d", tc.name, round), " ", "_")
			if err := os.Mkdir(a.path(dir), 0o777); err != nil {
				t.Fatal(err)
			}
			made := tc.name == "removed and made again"
			if made {
				writeFile(t, a.path(dir, "x"), []byte("a"))
			} else if err := statErr(a.path(dir, "x")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s: stat before the change: %v, want ENOENT", tc.name, err)
			}
			tc.change(t, dir)
			st, err := os.Lstat(a.path(dir, "x"))
			if err != nil {
				t.Fatalf("%s (round %d): stat through the other mount right after the change: %v", tc.name, round, err)
			}
			if made && !st.IsDir() {
				t.Fatalf("%s (round %d): stat shows the file from before the change", tc.name, round)
			}
		}
	}
}
