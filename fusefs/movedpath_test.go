package fusefs_test

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pario/pario/fusefs"
)

// KNOWN BUG, not fixed (found reviewing metafast; on main before it too):
// the mount sends requests by path, built from the kernel's tree
// (node.path), and a directory whose ancestor was renamed through
// another mount keeps its old path here while something else may have
// taken it. unlinkat through a descriptor of the moved directory then
// removes the file now at the old path, another file, and leaves its
// own; with names.go the mount also answers the survivor's lookup
// ENOENT. The test fails today; it runs only with PARIO_KNOWN_BUGS=1 so
// that the package's tests stay green until requests name the parent
// by ID (or the path is checked against it).
func TestUnlinkThroughMovedDirectory(t *testing.T) {
	if os.Getenv("PARIO_KNOWN_BUGS") == "" {
		t.Skip("known bug (path-based requests through a directory moved elsewhere); PARIO_KNOWN_BUGS=1 runs it")
	}
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
	if err := unix.Unlinkat(fd, "x", 0); err != nil {
		t.Fatalf("unlinkat(descriptor of the moved B/D, x): %v", err)
	}
	if err := statErr(b.path("B", "D", "x")); err == nil {
		t.Errorf("B/D/x, which unlinkat named, is still there")
	}
	if err := statErr(b.path("A", "D", "x")); err != nil {
		t.Errorf("A/D/x, another file, is gone: %v", err)
	}
}
