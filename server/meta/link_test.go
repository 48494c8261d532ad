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
