package fusefs_test

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/fusefs"
)

// The metadata server does not send a mount the namespace changes it made
// itself (the kernel applied them from the answers), so the mount's own
// caches that trust "nothing changed since" must count them too: a
// listing's page, an open file's remembered attributes, a directory's.

// A listing opened before this mount renames and removes entries in the
// directory gives no attributes for the old names: stat of them fails.
func TestOwnChangesDuringListing(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	waitLease(t, m)
	if err := os.Mkdir(m.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "m", "z"} {
		writeFile(t, m.path("d/"+n), []byte(n))
	}
	dir, err := os.Open(m.path("d")) // reads the first page
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if err := os.Rename(m.path("d/a"), m.path("d/b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.path("d/z")); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.Readdirnames(-1); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"a", "z"} {
		if _, err := os.Lstat(m.path("d/" + gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stat of d/%s after this mount removed it, with a listing read before: %v, want ENOENT", gone, err)
		}
	}
	if got := string(readFile(t, m.path("d/b"))); got != "a" {
		t.Errorf("d/b reads %q, want %q", got, "a")
	}
	if err := os.Chmod(m.path("d/b"), 0o600); err != nil {
		t.Errorf("chmod of the renamed file: %v", err)
	}
}

// An open file's remembered attributes do not survive this mount's
// unlink of another of its names.
func TestOwnUnlinkOfAnotherName(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	waitLease(t, m)
	writeFile(t, m.path("f"), []byte("data"))
	if err := os.Link(m.path("f"), m.path("g")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(m.path("f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nlink := func() uint64 {
		t.Helper()
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return uint64(st.Sys().(*syscall.Stat_t).Nlink)
	}
	if n := nlink(); n != 2 {
		t.Fatalf("nlink %d with two names, want 2", n)
	}
	if err := os.Remove(m.path("g")); err != nil {
		t.Fatal(err)
	}
	if n := nlink(); n != 1 {
		t.Errorf("nlink %d after this mount removed the other name, want 1", n)
	}
}

// A chown to the owner a directory has, right after this mount made
// entries in it, answers the directory's new mtime and link count.
func TestOwnCreatesThenNoopChownOfDirectory(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	waitLease(t, m)
	d := m.path("d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(d, old, old); err != nil {
		t.Fatal(err)
	}
	writeFile(t, m.path("d/x"), []byte("x"))
	if err := os.Mkdir(m.path("d/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, os.Geteuid(), os.Getegid()); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(d)
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().After(old) {
		t.Errorf("mtime %v after entries were made in it, want after %v", st.ModTime(), old)
	}
	if n := st.Sys().(*syscall.Stat_t).Nlink; n != 3 {
		t.Errorf("nlink %d with one subdirectory, want 3", n)
	}
}
