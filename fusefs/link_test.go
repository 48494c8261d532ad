package fusefs_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/fusefs"
)

// listing describes a tree without following links: type, mode, size of
// files and link targets, one line per entry (what tar and cp -a must
// keep).
func listing(t *testing.T, dir string) string {
	t.Helper()
	return sh(t, fmt.Sprintf(`cd %s && find . -printf '%%y %%m %%p %%l\n' | sort && find . -type f -exec md5sum {} + | sort -k2`, dir))
}

func TestSymbolicLinks(t *testing.T) {
	need(t, "tar", "cp", "ln", "readlink")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})

	t.Run("ln -s, readlink, lstat", func(t *testing.T) {
		writeFile(t, m.path("target"), []byte("data"))
		if err := os.Symlink("target", m.path("sym")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("no/such/file", m.path("dangling")); err != nil {
			t.Fatalf("dangling link: %v", err)
		}
		if got, err := os.Readlink(m.path("sym")); err != nil || got != "target" {
			t.Errorf("readlink = %q, %v", got, err)
		}
		fi, err := os.Lstat(m.path("sym"))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || fi.Mode().Perm() != 0o777 || fi.Size() != int64(len("target")) {
			t.Fatalf("lstat = %v, %v: want a link of mode 0777 and size 6", fi, err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uint32(os.Getuid()) {
			t.Errorf("link owned by %d, want the caller %d", st.Uid, os.Getuid())
		}
		// The kernel follows it.
		if got := readFile(t, m.path("sym")); string(got) != "data" {
			t.Errorf("read through the link = %q", got)
		}
		if _, err := os.Stat(m.path("dangling")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stat of a dangling link: %v, want ENOENT", err)
		}
		if err := os.Symlink("x", m.path("sym")); !errors.Is(err, os.ErrExist) {
			t.Errorf("second link of a name: %v, want EEXIST", err)
		}
		if err := os.Symlink(strings.Repeat("a", 4097), m.path("long")); !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Errorf("target of 4097 bytes: %v, want ENAMETOOLONG", err)
		}
		if out := sh(t, "ls -l "+m.path("sym")); !strings.Contains(out, "sym -> target") {
			t.Errorf("ls -l: %s", out)
		}
	})

	t.Run("rename and remove of a link", func(t *testing.T) {
		if err := os.Rename(m.path("sym"), m.path("sym2")); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(m.path("sym2")); err != nil || got != "target" {
			t.Errorf("readlink after rename = %q, %v", got, err)
		}
		if err := os.Remove(m.path("sym2")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(m.path("sym2")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("removed link: %v", err)
		}
		if got := readFile(t, m.path("target")); string(got) != "data" {
			t.Errorf("target after its link went = %q", got)
		}
		// A link to a directory is followed by the kernel, removed as a link.
		sh(t, fmt.Sprintf("cd %s && mkdir -p d/e && echo hi > d/e/f && ln -s d/e ld && cat ld/f && rm ld && test -f d/e/f", m.Dir))
	})

	t.Run("tar -x and cp -a of a tree with links", func(t *testing.T) {
		src := t.TempDir()
		sh(t, fmt.Sprintf(`cd %s && mkdir -p a/b c && echo one > a/f && echo two > a/b/g
ln -s f a/rel && ln -s ../a/b c/dirlink && ln -s /absolute/nowhere c/abs && ln -s ../../missing a/b/dangling
ln -s a/rel chain`, src))
		want := listing(t, src)
		sh(t, fmt.Sprintf("mkdir %[2]s/tar && tar -C %[1]s -cf - . | tar -C %[2]s/tar -xpf -", src, m.Dir))
		if got := listing(t, m.path("tar")); got != want {
			t.Errorf("tar -x on the mount:\n%s\nwant\n%s", got, want)
		}
		sh(t, fmt.Sprintf("cp -a %s %s/cpa", src, m.Dir))
		if got := listing(t, m.path("cpa")); got != want {
			t.Errorf("cp -a onto the mount:\n%s\nwant\n%s", got, want)
		}
		back := t.TempDir()
		sh(t, fmt.Sprintf("tar -C %s/tar -cf - . | tar -C %s -xpf -", m.Dir, back))
		if got := listing(t, back); got != want {
			t.Errorf("tar -c of the mount and back:\n%s\nwant\n%s", got, want)
		}
		if got := readFile(t, m.path("tar", "chain")); string(got) != "one\n" {
			t.Errorf("chain of links read %q", got)
		}
	})
}
