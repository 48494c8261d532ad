package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

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

func TestHardLinks(t *testing.T) {
	need(t, "ln", "install")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	links := func(path string) uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		return uint64(st.Nlink)
	}

	t.Run("link, unlink and rename counts", func(t *testing.T) {
		if err := os.Mkdir(m.path("h"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, m.path("h", "a"), []byte("shared"))
		if err := os.Link(m.path("h", "a"), m.path("h", "b")); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(m.path("h", "a"), m.path("c")); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"h/a", "h/b", "c"} {
			if got := links(m.path(n)); got != 3 {
				t.Errorf("%s: nlink %d, want 3", n, got)
			}
		}
		var sa, sc syscall.Stat_t
		if syscall.Stat(m.path("h", "a"), &sa) != nil || syscall.Stat(m.path("c"), &sc) != nil || sa.Ino != sc.Ino {
			t.Errorf("two names, inodes %d and %d: want one", sa.Ino, sc.Ino)
		}
		// Writing through one name shows through the others.
		writeFile(t, m.path("c"), []byte("changed"))
		if got := readFile(t, m.path("h", "b")); string(got) != "changed" {
			t.Errorf("other name reads %q", got)
		}
		if err := os.Remove(m.path("h", "a")); err != nil {
			t.Fatal(err)
		}
		if got := links(m.path("c")); got != 2 {
			t.Errorf("after unlink: nlink %d, want 2", got)
		}
		writeFile(t, m.path("other"), []byte("other"))
		if err := os.Rename(m.path("other"), m.path("h", "b")); err != nil {
			t.Fatal(err)
		}
		if got := links(m.path("c")); got != 1 {
			t.Errorf("after rename over a name: nlink %d, want 1", got)
		}
		if got := readFile(t, m.path("c")); string(got) != "changed" {
			t.Errorf("after rename over its other name: %q", got)
		}
		if err := os.Link(m.path("h"), m.path("hdir")); !errors.Is(err, syscall.EPERM) {
			t.Errorf("link of a directory: %v, want EPERM", err)
		}
		if err := os.Link(m.path("c"), m.path("h", "b")); !errors.Is(err, os.ErrExist) {
			t.Errorf("link onto a name: %v, want EEXIST", err)
		}
		// Directories: 2 + subdirectories.
		sh(t, fmt.Sprintf("mkdir -p %[1]s/n/x %[1]s/n/y %[1]s/n/z && rmdir %[1]s/n/z && touch %[1]s/n/f", m.Dir))
		if got := links(m.path("n")); got != 4 {
			t.Errorf("directory with 2 subdirectories: nlink %d, want 4", got)
		}
		if got := links(m.path("n", "x")); got != 2 {
			t.Errorf("empty directory: nlink %d, want 2", got)
		}
	})

	t.Run("data kept until the last name and descriptor", func(t *testing.T) {
		data := randomBytes(t, 300001)
		writeFile(t, m.path("k1"), data)
		if err := os.Link(m.path("k1"), m.path("k2")); err != nil {
			t.Fatal(err)
		}
		before := steadyDatafiles(t, p)
		f, err := os.Open(m.path("k1"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, n := range []string{"k1", "k2"} {
			if err := os.Remove(m.path(n)); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]byte, len(data))
		if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read after both names are gone: %v", err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 {
			t.Errorf("fstat of the unlinked open file: nlink %d, %v; want 0", st.Nlink, err)
		}
		if n := datafiles(t, p); n != before {
			t.Errorf("datafiles while open: %d, want %d", n, before)
		}
		f.Close()
		eventually(t, "datafiles removed after the last close", func() error {
			if n := datafiles(t, p); n >= before {
				return fmt.Errorf("%d datafiles, want fewer than %d", n, before)
			}
			return nil
		})
	})

	t.Run("install -D", func(t *testing.T) {
		src := t.TempDir()
		writeFile(t, src+"/prog", []byte("#!/bin/sh\necho hi\n"))
		sh(t, fmt.Sprintf(`install -D -m 0755 %[1]s/prog %[2]s/prefix/bin/prog
install -d %[2]s/prefix/share/man/man1 && install -m 0644 %[1]s/prog %[2]s/prefix/share/man/man1/prog.1
ln -sf prog %[2]s/prefix/bin/prog-alias && ln -f %[2]s/prefix/bin/prog %[2]s/prefix/bin/prog-hard
%[2]s/prefix/bin/prog-alias | grep -q hi`, src, m.Dir))
		if got := links(m.path("prefix", "bin", "prog")); got != 2 {
			t.Errorf("installed program with a hard link: nlink %d", got)
		}
	})
}

// git with core.symlinks=true: a repository with links made, cloned
// within the mount (git's local clone hard-links the objects), checked
// out and verified.
func TestGitWithLinks(t *testing.T) {
	need(t, "git")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	out := sh(t, fmt.Sprintf(`export GIT_CONFIG_NOSYSTEM=1 HOME=%[2]s GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
git config --global core.symlinks true && git config --global init.defaultBranch main
git init -q %[1]s/src && cd %[1]s/src
mkdir -p lib && echo one > lib/a && ln -s lib/a top && ln -s ../missing lib/dangling && ln -s lib dirlink
git add -A && git commit -qm one
git checkout -qb two && rm top && ln -s lib/dangling top && echo two > lib/a && git add -A && git commit -qm two
git checkout -q main
git clone -q %[1]s/src %[1]s/clone && cd %[1]s/clone
git fsck --strict && git checkout -q two && git checkout -q main && git status --porcelain
readlink top dirlink lib/dangling && cat top && find .git/objects -type f -links +1 | wc -l`, m.Dir, t.TempDir()))
	lines := strings.Fields(out)
	if len(lines) < 5 || strings.Join(lines[len(lines)-5:len(lines)-1], " ") != "lib/a lib ../missing one" {
		t.Errorf("clone's links and content:\n%s", out)
	}
	if n := lines[len(lines)-1]; n == "0" {
		t.Errorf("no object of the local clone is hard-linked:\n%s", out)
	}
}

// A Python virtual environment (its interpreter is a symbolic link) made
// and used on the mount.
func TestPythonVenv(t *testing.T) {
	need(t, "python3")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	out := sh(t, fmt.Sprintf(`python3 -m venv --without-pip %[1]s/venv
test -L %[1]s/venv/bin/python
%[1]s/venv/bin/python -c 'import sys; print(sys.prefix)'`, m.Dir))
	if !strings.Contains(out, m.path("venv")) {
		t.Errorf("the venv's interpreter runs outside it:\n%s", out)
	}
}

// Links by two real users in a sticky directory of an --allow-other
// mount: each owns its links; the other can neither remove nor rename
// them, but may follow them and link to files it can reach.
func TestLinksOfTwoUsers(t *testing.T) {
	_, alice, bob, _ := makeUsers(t)
	p := spawn(t)
	m := mountForUsers(t, p)
	mp := m.Dir
	sh(t, fmt.Sprintf("cd / && mkdir -m 1777 %s/tmp", mp))
	out := mustAs(t, alice, fmt.Sprintf(`umask 022 && cd %[1]s/tmp && echo data > af && ln -s af al && ln af ah
stat -c '%%U %%a %%h' al af`, mp))
	if want := alice.name + " 777 1\n" + alice.name + " 644 2\n"; out != want {
		t.Errorf("alice's link and file: %q, want %q", out, want)
	}
	if err := syscall.Lstat(mp+"/tmp/al", new(syscall.Stat_t)); err != nil {
		t.Fatal(err)
	}
	mustFailAs(t, bob, fmt.Sprintf("rm -f %s/tmp/al", mp), "Operation not permitted")
	mustFailAs(t, bob, fmt.Sprintf("mv %[1]s/tmp/al %[1]s/tmp/bl", mp), "Operation not permitted")
	mustFailAs(t, bob, fmt.Sprintf("rm -f %s/tmp/ah", mp), "Operation not permitted")
	if got := mustAs(t, bob, fmt.Sprintf("cat %s/tmp/al && ln -s al %[1]s/tmp/bl && readlink %[1]s/tmp/bl && rm %[1]s/tmp/bl", mp)); got != "data\nal\n" {
		t.Errorf("bob follows alice's link and makes and removes his own: %q", got)
	}
	mustAs(t, alice, fmt.Sprintf("rm %[1]s/tmp/al %[1]s/tmp/af && cat %[1]s/tmp/ah", mp))
}

// TestLinkRemovedElsewhere: another mount removes one name of a file
// with two; this mount, which knew both, goes on using the file by the
// other. Requests about an inode go by a path of go-fuse's tree, which
// kept the name removed elsewhere after the kernel dropped it: a
// truncate, chmod or utimes through the remaining name failed with
// ENOENT (TestAgainstALocalDisk found it).
func TestLinkRemovedElsewhere(t *testing.T) {
	_, a, b := twoMounts(t)
	if err := os.WriteFile(a.path("f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a.path("f"), a.path("g")); err != nil {
		t.Fatal(err)
	}
	// b learns both names, g last (go-fuse names the file by the newest).
	for _, name := range []string{"f", "g"} {
		if _, err := os.Stat(b.path(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(a.path("g")); err != nil {
		t.Fatal(err)
	}
	when := time.Unix(1_234_567_890, 0)
	for _, op := range []struct {
		what string
		do   func() error
	}{
		{"truncate", func() error { return os.Truncate(b.path("f"), 2) }},
		{"chmod", func() error { return os.Chmod(b.path("f"), 0o600) }},
		{"utimes", func() error { return os.Chtimes(b.path("f"), when, when) }}, // last: a truncate moves mtime
	} {
		if err := op.do(); err != nil {
			t.Errorf("%s of f through the other mount after g went: %v", op.what, err)
		}
	}
	st, err := os.Stat(a.path("f"))
	if err != nil || st.Size() != 2 || st.Mode().Perm() != 0o600 || !st.ModTime().Equal(when) {
		t.Fatalf("f as the first mount sees it: %v %v; want 2 bytes, mode 600, mtime %v", st, err, when)
	}
}
