package meta

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
)

// The store checks the credentials its calls carry (WithCred), and sets
// owners from them; the server squashes root when told to.
func TestStorePermissions(t *testing.T) {
	s := openT(t, Options{Servers: 2})
	ctx := t.Context()
	as := func(c Cred) context.Context { return WithCred(ctx, c) }
	// root: a shared sticky scratch directory and a group directory.
	if _, err := s.Mkdir(ctx, "/tmp", 0o1777); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mkdir(ctx, "/proj", 0o2770); err != nil {
		t.Fatal(err)
	}
	gid := uint32(500)
	if _, err := s.SetAttr(ctx, "/proj", AttrChanges{Gid: &gid}); err != nil {
		t.Fatal(err)
	}

	a, err := s.Create(as(alice), "/tmp/a", 0o600, dist.Layout{})
	if err != nil || a.Uid != alice.Uid || a.Gid != alice.Gid || a.Mode != 0o600 {
		t.Fatalf("alice creates /tmp/a: %+v, %v", a, err)
	}
	d, err := s.Mkdir(as(alice), "/tmp/ad", 0o700)
	if err != nil || d.Uid != alice.Uid {
		t.Fatalf("alice mkdir: %+v, %v", d, err)
	}
	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) || (err == nil) != (want == nil) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	_, err = s.Create(as(bob), "/tmp/ad/x", 0o644, dist.Layout{})
	check("bob creates in alice's 0700 dir", err, syscall.EACCES)
	_, err = s.Lookup(as(bob), "/tmp/ad/x")
	check("bob looks into alice's 0700 dir", err, syscall.EACCES)
	_, _, err = s.ReaddirPage(as(bob), "/tmp/ad", "", 0)
	check("bob lists alice's 0700 dir", err, syscall.EACCES)
	_, err = s.Remove(as(bob), "/tmp/a")
	check("bob removes alice's file from sticky /tmp", err, syscall.EPERM)
	_, err = s.Rename(as(bob), "/tmp/a", "/tmp/b")
	check("bob renames alice's file in sticky /tmp", err, syscall.EPERM)
	_, err = s.Access(as(bob), a.ID, MayRead)
	check("bob opens alice's 0600 file", err, syscall.EACCES)
	_, err = s.Access(as(alice), a.ID, MayRead|MayWrite)
	check("alice opens her file", err, nil)
	_, err = s.SetAttr(as(bob), "/tmp/a", AttrChanges{Mode: new(uint32(0o666))})
	check("bob chmods alice's file", err, syscall.EPERM)
	_, err = s.SetAttr(as(alice), "/tmp/a", AttrChanges{Uid: new(bob.Uid)})
	check("alice gives her file away", err, syscall.EPERM)
	_, err = s.SetAttr(as(alice), "/tmp/a", AttrChanges{Mode: new(uint32(0o4640)), Gid: new(uint32(500))})
	check("alice chmods and chgrps to her group", err, nil)
	_, err = s.Mknod(as(alice), "/tmp/null", KindCharDev, 0o666, 0x103)
	check("alice makes a device", err, syscall.EPERM)

	// Group directory: setgid passes its group on; members write.
	f, err := s.Create(as(bob), "/proj/f", 0o660, dist.Layout{})
	check("bob (group 500) creates in /proj", err, nil)
	if f.Gid != 500 {
		t.Errorf("file in setgid dir has gid %d, want 500", f.Gid)
	}
	_, err = s.Access(as(alice), f.ID, MayWrite)
	check("alice (group 500) writes bob's group file", err, nil)
	_, err = s.Lookup(as(carol), "/proj/f")
	check("carol (not in 500) looks into /proj", err, syscall.EACCES)
	_, err = s.Remove(as(alice), "/proj/f")
	check("alice removes in group-writable, non-sticky /proj", err, nil)

	// Writes by others clear setuid: the file is 04640 now.
	got, err := s.SetAttr(as(root), "/tmp/a", AttrChanges{KillPriv: true})
	check("kill priv", err, nil)
	if got.Mode != 0o640 {
		t.Errorf("after kill priv mode = %#o, want 0640", got.Mode)
	}

	// Root squash: root is nobody, who may not write in /.
	h := &Handler{Store: s, RootSquash: true}
	_, err = s.Create(h.as(ctx, root, Expect{}), "/r", 0o644, dist.Layout{})
	check("squashed root creates in /", err, syscall.EACCES)
	h.RootSquash = false
	_, err = s.Create(h.as(ctx, root, Expect{}), "/r", 0o644, dist.Layout{})
	check("root creates in /", err, nil)
}

// A new store's root directory belongs to Options.RootUid and RootGid:
// whoever runs the metadata server may write in the file system it made.
func TestRootOwner(t *testing.T) {
	s := openT(t, Options{Servers: 1, RootUid: alice.Uid, RootGid: alice.Gid})
	a, err := s.Lookup(t.Context(), "/")
	if err != nil || a.Uid != alice.Uid || a.Gid != alice.Gid || a.Mode != 0o755 {
		t.Fatalf("root: %+v, %v; want %d:%d 0755", a, err, alice.Uid, alice.Gid)
	}
	if _, err := s.Mkdir(WithCred(t.Context(), alice), "/home", 0o755); err != nil {
		t.Errorf("alice writes in her store's root: %v", err)
	}
}

// An existing name is EEXIST even in a directory the caller may not
// write, as Linux answers mkdir and open(O_CREAT|O_EXCL).
func TestExistsBeforeDenied(t *testing.T) {
	s := openT(t, Options{Servers: 1})
	ctx := t.Context()
	if _, err := s.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mkdir(WithCred(ctx, bob), "/d", 0o755); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("bob mkdir of an existing name in root's /: %v, want EEXIST", err)
	}
	if _, err := s.Create(WithCred(ctx, bob), "/d", 0o644, dist.Layout{}); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("bob create of an existing name in root's /: %v, want EEXIST", err)
	}
	if _, err := s.Mkdir(WithCred(ctx, bob), "/e", 0o755); !errors.Is(err, syscall.EACCES) {
		t.Errorf("bob mkdir in root's /: %v, want EACCES", err)
	}
}
