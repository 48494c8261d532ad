package meta

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestSymlink(t *testing.T) {
	s := openT(t, Options{Servers: 1})
	ctx := t.Context()
	alice := Cred{Uid: 1000, Gid: 100}
	if _, err := s.Mkdir(ctx, "/d", 0o1777); err != nil {
		t.Fatal(err)
	}
	a, err := s.Symlink(WithCred(ctx, alice), "../nowhere/x", "/d/l")
	if err != nil {
		t.Fatalf("dangling symlink: %v", err)
	}
	want := Attr{ID: a.ID, Kind: KindSymlink, Mode: 0o777, Uid: 1000, Gid: 100, Nlink: 1, Target: "../nowhere/x"}
	if a.Mtime == 0 || a.Ctime != a.Mtime || a.Atime != a.Mtime {
		t.Errorf("times %d %d %d: want one non-zero time", a.Mtime, a.Ctime, a.Atime)
	}
	a.Mtime, a.Ctime, a.Atime = 0, 0, 0
	if a.ID == 0 || !equalAttr(a, want) {
		t.Errorf("symlink = %+v, want %+v", a, want)
	}
	if got, err := s.Readlink(ctx, "/d/l"); err != nil || got != "../nowhere/x" {
		t.Errorf("readlink = %q, %v", got, err)
	}
	if got, err := s.Lookup(ctx, "/d/l"); err != nil || got.Target != "../nowhere/x" || got.Kind != KindSymlink {
		t.Errorf("lookup = %+v, %v: the link itself (lstat)", got, err)
	}
	ents, _, err := s.ReaddirPage(ctx, "/d", "", 0)
	if err != nil || len(ents) != 1 || ents[0].Attr.Target != "../nowhere/x" {
		t.Errorf("readdir = %+v, %v", ents, err)
	}

	for _, tc := range []struct {
		name         string
		target, path string
		cred         *Cred
		want         error
	}{
		{"exists", "x", "/d/l", nil, syscall.EEXIST},
		{"empty target", "", "/d/e", nil, syscall.ENOENT},
		{"NUL in target", "a\x00b", "/d/e", nil, syscall.EINVAL},
		{"target too long", strings.Repeat("a", MaxPathLen+1), "/d/e", nil, syscall.ENAMETOOLONG},
		{"link as a directory", "x", "/d/l/e", nil, syscall.ENOTDIR},
		{"root", "x", "/", nil, syscall.EEXIST},
		{"no write permission", "x", "/e", &alice, syscall.EACCES},
	} {
		c := ctx
		if tc.cred != nil {
			c = WithCred(ctx, *tc.cred)
		}
		if _, err := s.Symlink(c, tc.target, tc.path); !errors.Is(err, tc.want) {
			t.Errorf("%s: symlink(%q, %s) = %v, want %v", tc.name, tc.target, tc.path, err, tc.want)
		}
	}
	if _, err := s.Symlink(ctx, strings.Repeat("a/", MaxPathLen/2), "/d/long"); err != nil {
		t.Errorf("target of %d bytes: %v", MaxPathLen, err)
	}
	if _, err := s.Readlink(ctx, "/d"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("readlink of a directory: %v, want EINVAL", err)
	}
	if _, err := s.Lookup(ctx, "/d/l/x"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("lookup through a link: %v, want ENOTDIR (links are not followed)", err)
	}
	// A link is renamed and removed as any entry; the sticky bit keeps
	// others from removing alice's.
	bob := Cred{Uid: 1001, Gid: 100}
	if _, err := s.Remove(WithCred(ctx, bob), "/d/l"); !errors.Is(err, syscall.EPERM) {
		t.Errorf("bob removes alice's link in a sticky directory: %v, want EPERM", err)
	}
	if _, err := s.Rename(WithCred(ctx, alice), "/d/l", "/d/m"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Readlink(ctx, "/d/m"); err != nil || got != "../nowhere/x" {
		t.Errorf("readlink after rename = %q, %v", got, err)
	}
	if _, err := s.SetLayout(ctx, "/d/m", sampleLayout, true); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("layout of a link: %v, want EINVAL", err)
	}
	if _, err := s.Remove(WithCred(ctx, alice), "/d/m"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Readlink(ctx, "/d/m"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("readlink after remove: %v, want ENOENT", err)
	}
}

func equalAttr(a, b Attr) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.Mode == b.Mode && a.Uid == b.Uid && a.Gid == b.Gid &&
		a.Nlink == b.Nlink && a.Target == b.Target && a.Mtime == b.Mtime && a.Ctime == b.Ctime && a.Atime == b.Atime
}

// nlink is the link count of path.
func nlink(t *testing.T, s *Store, path string) uint32 {
	t.Helper()
	a, err := s.Lookup(t.Context(), path)
	if err != nil {
		t.Fatalf("lookup %s: %v", path, err)
	}
	return a.Nlink
}

func TestHardLinkCounts(t *testing.T) {
	s := openT(t, Options{Servers: 2})
	ctx := t.Context()
	for _, d := range []string{"/a", "/b"} {
		if _, err := s.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := s.Create(ctx, "/a/f", 0o644, sampleLayout)
	if err != nil {
		t.Fatal(err)
	}
	if f.Nlink != 1 {
		t.Fatalf("new file: nlink %d", f.Nlink)
	}
	l, err := s.Link(ctx, f.ID, "/b/g")
	if err != nil || l.Nlink != 2 || l.ID != f.ID || l.Ctime <= f.Ctime {
		t.Fatalf("link = %+v, %v; want the file with 2 names and a new ctime", l, err)
	}
	if _, err := s.Link(ctx, f.ID, "/a/h"); err != nil {
		t.Fatal(err)
	}
	if n := nlink(t, s, "/b/g"); n != 3 {
		t.Fatalf("after two links: nlink %d, want 3", n)
	}
	if files, _, _ := s.Stats(ctx); files != 1 {
		t.Errorf("files = %d: names are not files", files)
	}

	// Errors: a directory (EPERM), a taken name, a gone ID, no write
	// permission on the new directory.
	dir, _ := s.Lookup(ctx, "/a")
	for _, tc := range []struct {
		id   FileID
		path string
		cred *Cred
		want error
	}{
		{dir.ID, "/c", nil, syscall.EPERM},
		{f.ID, "/a/h", nil, syscall.EEXIST},
		{f.ID, "/", nil, syscall.EEXIST},
		{999, "/x", nil, syscall.ENOENT},
		{f.ID, "/nodir/x", nil, syscall.ENOENT},
		{f.ID, "/a/x", &Cred{Uid: 1000, Gid: 1000}, syscall.EACCES},
	} {
		c := ctx
		if tc.cred != nil {
			c = WithCred(ctx, *tc.cred)
		}
		if _, err := s.Link(c, tc.id, tc.path); !errors.Is(err, tc.want) {
			t.Errorf("link(%d, %s) = %v, want %v", tc.id, tc.path, err, tc.want)
		}
	}

	// Rename onto another name of the same file does nothing.
	if _, err := s.Rename(ctx, "/a/h", "/b/g"); err != nil {
		t.Fatal(err)
	}
	if n := nlink(t, s, "/a/h"); n != 3 {
		t.Errorf("rename onto the same file: nlink %d, want 3 and both names kept", n)
	}
	// Removing a name keeps the inode while names are left.
	gone, err := s.Remove(ctx, "/a/h")
	if err != nil || gone.Nlink != 2 {
		t.Fatalf("remove of one of 3 names = %+v, %v; want Nlink 2 (names left)", gone, err)
	}
	// A rename over a linked file leaves its other name.
	if _, err := s.Create(ctx, "/b/new", 0o644, sampleLayout); err != nil {
		t.Fatal(err)
	}
	replaced, err := s.Rename(ctx, "/b/new", "/b/g")
	if err != nil || replaced == nil || replaced.ID != f.ID || replaced.Nlink != 1 {
		t.Fatalf("rename over a linked file: replaced %+v, %v; want file %d with 1 name left", replaced, err, f.ID)
	}
	if a, err := s.Lookup(ctx, "/a/f"); err != nil || a.ID != f.ID || a.Nlink != 1 {
		t.Fatalf("other name after the rename: %+v, %v", a, err)
	}
	// The last name takes the inode.
	gone, err = s.Remove(ctx, "/a/f")
	if err != nil || gone.Nlink != 0 || gone.ID != f.ID {
		t.Fatalf("remove of the last name = %+v, %v; want Nlink 0", gone, err)
	}
	if _, err := s.GetByID(ctx, f.ID); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("inode after its last name: %v", err)
	}
	if files, _, _ := s.Stats(ctx); files != 1 {
		t.Errorf("files = %d, want 1 (/b/g, the renamed new file)", files)
	}
	// Special files and symbolic links take links too.
	sl, err := s.Symlink(ctx, "x", "/a/sl")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := s.Link(ctx, sl.ID, "/a/sl2"); err != nil || l.Nlink != 2 || l.Target != "x" {
		t.Errorf("link of a symbolic link = %+v, %v", l, err)
	}
}

func TestDirectoryLinkCounts(t *testing.T) {
	s := openT(t, Options{Servers: 2})
	ctx := t.Context()
	check := func(what string, want map[string]uint32) {
		t.Helper()
		for p, n := range want {
			if got := nlink(t, s, p); got != n {
				t.Errorf("%s: nlink of %s = %d, want %d", what, p, got, n)
			}
		}
	}
	check("new store", map[string]uint32{"/": 2})
	for _, d := range []string{"/a", "/a/x", "/a/y", "/b", "/b/z"} {
		if _, err := s.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, "/a/f", 0o644, sampleLayout); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Symlink(ctx, "x", "/a/l"); err != nil {
		t.Fatal(err)
	}
	check("mkdir", map[string]uint32{"/": 4, "/a": 4, "/b": 3, "/a/x": 2})
	if _, err := s.Rename(ctx, "/a/x", "/b/x"); err != nil {
		t.Fatal(err)
	}
	check("rename across", map[string]uint32{"/a": 3, "/b": 4})
	if _, err := s.Rename(ctx, "/a/y", "/b/z"); err != nil { // over an empty directory
		t.Fatal(err)
	}
	check("rename over a directory", map[string]uint32{"/a": 2, "/b": 4})
	if _, err := s.Rename(ctx, "/b/z", "/b/w"); err != nil {
		t.Fatal(err)
	}
	check("rename within", map[string]uint32{"/b": 4})
	if _, err := s.Remove(ctx, "/b/w"); err != nil {
		t.Fatal(err)
	}
	check("rmdir", map[string]uint32{"/b": 3, "/": 4})
	if _, err := s.Mkdir(ctx, "/b/x/deep", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename(ctx, "/b/x", "/top"); err != nil {
		t.Fatal(err)
	}
	check("rename up", map[string]uint32{"/": 5, "/b": 2, "/top": 3})
}
