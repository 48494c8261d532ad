package fusefs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pario/pario/fusefs"
)

// A directory held here (a descriptor, a working directory) may have
// been moved through another mount, and something else may then have
// taken its old path: A moves to B, and a new A/D/x is made. The mount
// names its requests by the path it last saw (A/D), so each request also
// says which directory (or file) it means, and the metadata server
// refuses a request whose path now leads elsewhere: the op through the
// moved directory fails with ESTALE and the file now at the old path is
// never touched. (Before, unlinkat removed the other A/D/x and left
// B/D/x.)
func TestThroughMovedDirectory(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	ops := []struct {
		name string
		do   func(fd int) error
	}{
		{"unlinkat", func(fd int) error { return unix.Unlinkat(fd, "x", 0) }},
		{"openat O_CREAT", func(fd int) error {
			f, err := unix.Openat(fd, "y", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
			if err == nil {
				unix.Close(f)
			}
			return err
		}},
		{"mkdirat", func(fd int) error { return unix.Mkdirat(fd, "y", 0o755) }},
		{"renameat", func(fd int) error { return unix.Renameat(fd, "x", fd, "z") }},
		{"renameat out of it", func(fd int) error { return unix.Renameat(fd, "x", unix.AT_FDCWD, a.path("z")) }},
		{"fchmod of the directory", func(fd int) error { return unix.Fchmod(fd, 0o700) }},
		{"fchmodat of a file in it", func(fd int) error { return unix.Fchmodat(fd, "x", 0o600, 0) }},
		{"symlinkat", func(fd int) error { return unix.Symlinkat("t", fd, "y") }},
	}
	for i, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			name := fmt.Sprintf("A%d", i) // a directory of its own per op
			old, bold, moved := a.path(name), b.path(name), b.path(fmt.Sprintf("B%d", i))
			if err := os.MkdirAll(old+"/D", 0o777); err != nil {
				t.Fatal(err)
			}
			writeFile(t, old+"/D/x", []byte("old"))
			fd, err := unix.Open(old+"/D", unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			var st unix.Stat_t
			if err := unix.Fstatat(fd, "x", &st, 0); err != nil {
				t.Fatal(err)
			}
			// Through B: A moves, and a new A/D/x is made.
			if err := os.Rename(bold, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(bold+"/D", 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, bold+"/D/x", []byte("new"))
			if err := os.Chmod(bold+"/D/x", 0o644); err != nil {
				t.Fatal(err)
			}
			err = op.do(fd)
			switch {
			case op.name == "openat O_CREAT" && err == nil:
				// Mount A made D and holds it (delegated.go), so it
				// answers the create itself, in D wherever D is now, as
				// a local file system does (createhere.go).
				if _, err := os.Stat(b.path(fmt.Sprintf("B%d", i), "D", "y")); err != nil {
					t.Errorf("openat O_CREAT through the moved directory answered by the mount holding it, but the moved directory has no y: %v", err)
				}
				if _, err := os.Stat(b.path(name, "D", "y")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("openat O_CREAT through the moved directory made y at the old path: %v", err)
				}
			case !errors.Is(err, unix.ESTALE):
				t.Errorf("%s through the moved directory: %v, want ESTALE", op.name, err)
			}
			// The file now at the old path and its directory are untouched,
			// seen from either mount.
			for _, m := range []*mounted{a, b} {
				x := m.path(name, "D", "x")
				if got := readFile(t, x); string(got) != "new" {
					t.Errorf("%s holds %q, want the new file's %q", x, got, "new")
				}
				if fi, err := os.Stat(x); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("%s: %v, %v; want mode 0644 kept", x, fi, err)
				}
				if fi, err := os.Stat(m.path(name, "D")); err != nil || fi.Mode().Perm() != 0o755 {
					t.Errorf("the new directory: %v, %v; want mode 0755 kept", fi, err)
				}
				// Listed, not looked up: a lookup may be answered from
				// what the mount remembers as absent.
				ents, err := os.ReadDir(m.path(name, "D"))
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					if e.Name() != "x" {
						t.Errorf("%s made %s in the directory now at the old path", op.name, e.Name())
					}
				}
			}
			// The moved directory's own file is as it was.
			if got := readFile(t, moved+"/D/x"); string(got) != "old" {
				t.Errorf("%s/D/x holds %q, want %q", moved, got, "old")
			}
		})
	}
}

// The test named in the first report of the bug: unlinkat through a
// descriptor of a directory moved elsewhere removed the file that had
// taken its old path.
func TestUnlinkThroughMovedDirectory(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	if err := os.MkdirAll(a.path("A", "D"), 0o777); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a.path("A", "D", "x"), []byte("old"))
	fd, err := unix.Open(a.path("A", "D"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "x", &st, 0); err != nil {
		t.Fatal(err)
	}
	// Through B: A moves to B, and a new A/D/x is made.
	if err := os.Rename(b.path("A"), b.path("B")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(b.path("A", "D"), 0o777); err != nil {
		t.Fatal(err)
	}
	writeFile(t, b.path("A", "D", "x"), []byte("new"))
	if err := unix.Unlinkat(fd, "x", 0); !errors.Is(err, unix.ESTALE) {
		t.Errorf("unlinkat(descriptor of the moved B/D, x): %v, want ESTALE", err)
	}
	if err := statErr(b.path("B", "D", "x")); err != nil {
		t.Errorf("B/D/x, which the refused unlinkat named: %v", err)
	}
	for _, m := range []*mounted{a, b} {
		if got := readFile(t, m.path("A", "D", "x")); string(got) != "new" {
			t.Errorf("A/D/x, another file, holds %q, want %q", got, "new")
		}
	}
	// Through the moved directory's current path the unlink works.
	if err := os.Remove(a.path("B", "D", "x")); err != nil {
		t.Errorf("remove B/D/x by its current path: %v", err)
	}
}

// The same for a file open here that another mount moved, whose old name
// another file then took: fchmod through the descriptor fails with
// ESTALE and leaves the other file alone, and close, which records the
// mtime by path, does not fail (the entry is treated as gone from here).
func TestThroughMovedFile(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	f, err := os.OpenFile(a.path("f"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(b.path("f"), b.path("g")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, b.path("f"), []byte("new"))
	if err := os.Chmod(b.path("f"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod(0o600); !errors.Is(err, unix.ESTALE) {
		t.Errorf("fchmod of the moved file: %v, want ESTALE", err)
	}
	if _, err := f.Write([]byte("er")); err != nil {
		t.Errorf("write to the moved file: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close of the moved file: %v", err)
	}
	for _, m := range []*mounted{a, b} {
		if got := readFile(t, m.path("f")); string(got) != "new" {
			t.Errorf("f holds %q, want the new file's %q", got, "new")
		}
		if fi, err := os.Stat(m.path("f")); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("f: %v, %v; want mode 0640 kept", fi, err)
		}
	}
	if got := readFile(t, b.path("g")); string(got) != "older" {
		t.Errorf("g holds %q, want %q", got, "older")
	}
}
