package meta

import (
	"errors"
	"syscall"
	"testing"
)

var (
	root  = Cred{}
	alice = Cred{Uid: 1001, Gid: 1001, Groups: []uint32{1001, 500}}
	bob   = Cred{Uid: 1002, Gid: 1002, Groups: []uint32{1002, 500}}
	carol = Cred{Uid: 1003, Gid: 1003}
)

func file(uid, gid, mode uint32) *Attr { return &Attr{Kind: KindFile, Uid: uid, Gid: gid, Mode: mode} }
func dir(uid, gid, mode uint32) *Attr  { return &Attr{Kind: KindDir, Uid: uid, Gid: gid, Mode: mode} }

func TestPermits(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *Attr
		c    Cred
		want uint32
		ok   bool
	}{
		{"owner reads 0600", file(1001, 1001, 0o600), alice, MayRead, true},
		{"owner writes 0600", file(1001, 1001, 0o600), alice, MayRead | MayWrite, true},
		{"owner cannot exec 0600", file(1001, 1001, 0o600), alice, MayExec, false},
		{"other cannot read 0600", file(1001, 1001, 0o600), bob, MayRead, false},
		{"other reads 0644", file(1001, 1001, 0o644), bob, MayRead, true},
		{"other cannot write 0644", file(1001, 1001, 0o644), bob, MayWrite, false},
		{"group member writes 0660", file(1001, 500, 0o660), bob, MayWrite, true},
		{"non-member cannot write 0660", file(1001, 500, 0o660), carol, MayWrite, false},
		{"owner bits exclude: 0077 owner", file(1001, 1001, 0o077), alice, MayRead, false},
		{"group bits exclude: 0707 member", file(1001, 500, 0o707), bob, MayRead, false},
		{"primary gid counts", file(1, 1003, 0o040), carol, MayRead, true},
		{"root reads 0000", file(1001, 1001, 0), root, MayRead | MayWrite, true},
		{"root cannot exec 0644 file", file(1001, 1001, 0o644), root, MayExec, false},
		{"root execs 0100 file", file(1001, 1001, 0o100), root, MayExec, true},
		{"root searches 0000 dir", dir(1001, 1001, 0), root, MayExec, true},
		{"search 0711 dir as other", dir(1001, 1001, 0o711), bob, MayExec, true},
		{"no list of 0711 dir as other", dir(1001, 1001, 0o711), bob, MayRead, false},
		{"nothing wanted", file(1001, 1001, 0), bob, 0, true},
	} {
		if got := permits(tc.a, tc.c, tc.want); got != tc.ok {
			t.Errorf("%s: permits = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestCheckDelete(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dir, vict *Attr
		c         Cred
		err       error
	}{
		{"own dir", dir(1001, 1001, 0o755), file(1002, 1002, 0o644), alice, nil},
		{"other's dir", dir(1002, 1002, 0o755), file(1001, 1001, 0o644), alice, syscall.EACCES},
		{"no search", dir(1001, 1001, 0o600), file(1001, 1001, 0o644), alice, syscall.EACCES},
		{"group writable", dir(1002, 500, 0o770), file(1002, 1002, 0o600), alice, nil},
		{"sticky: own file", dir(0, 0, 0o1777), file(1001, 1001, 0o600), alice, nil},
		{"sticky: other's file", dir(0, 0, 0o1777), file(1002, 1002, 0o666), alice, syscall.EPERM},
		{"sticky: dir owner", dir(1001, 1001, 0o1777), file(1002, 1002, 0o600), alice, nil},
		{"sticky: root", dir(1001, 1001, 0o1777), file(1002, 1002, 0o600), root, nil},
		{"sticky without write", dir(0, 0, 0o1755), file(1001, 1001, 0o600), alice, syscall.EACCES},
	} {
		if err := checkDelete(tc.dir, tc.vict, tc.c); !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("%s: checkDelete = %v, want %v", tc.name, err, tc.err)
		}
	}
}

func TestNewOwner(t *testing.T) {
	for _, tc := range []struct {
		name          string
		parent        *Attr
		c             Cred
		k             Kind
		mode          uint32
		uid, gid, out uint32
	}{
		{"plain file", dir(0, 0, 0o777), alice, KindFile, 0o644, 1001, 1001, 0o644},
		{"mode 0 stays 0", dir(0, 0, 0o777), alice, KindFile, 0, 1001, 1001, 0},
		{"type bits dropped", dir(0, 0, 0o777), alice, KindFile, 0o100644, 1001, 1001, 0o644},
		{"setgid dir gives group", dir(0, 500, 0o2777), carol, KindFile, 0o644, 1003, 500, 0o644},
		{"setgid dir: subdir setgid", dir(0, 500, 0o2777), alice, KindDir, 0o755, 1001, 500, 0o2755},
		{"setgid file outside group", dir(0, 500, 0o2777), carol, KindFile, 0o2755, 1003, 500, 0o755},
		{"setgid file in group", dir(0, 500, 0o2777), alice, KindFile, 0o2755, 1001, 500, 0o2755},
		{"setgid file by root", dir(0, 500, 0o2777), root, KindFile, 0o2755, 0, 500, 0o2755},
		{"setuid kept", dir(0, 0, 0o777), alice, KindFile, 0o4755, 1001, 1001, 0o4755},
	} {
		uid, gid, m := NewOwner(tc.parent, tc.c, tc.k, tc.mode)
		if uid != tc.uid || gid != tc.gid || m != tc.out {
			t.Errorf("%s: newOwner = %d:%d %#o, want %d:%d %#o", tc.name, uid, gid, m, tc.uid, tc.gid, tc.out)
		}
	}
}

func TestChmodMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *Attr
		c    Cred
		mode uint32
		out  uint32
		err  error
	}{
		{"owner", file(1001, 1001, 0o644), alice, 0o600, 0o600, nil},
		{"root", file(1001, 1001, 0o644), root, 0o4755, 0o4755, nil},
		{"other", file(1001, 1001, 0o666), bob, 0o777, 0, syscall.EPERM},
		{"other, same mode", file(1001, 1001, 0o666), bob, 0o666, 0, syscall.EPERM},
		{"owner sets setgid, in group", file(1001, 500, 0o755), alice, 0o2755, 0o2755, nil},
		{"owner sets setgid, not in group", file(1001, 77, 0o755), alice, 0o2755, 0o755, nil},
		{"writer clears setuid (kill priv)", file(1001, 1001, 0o4766), bob, 0o766, 0o766, nil},
		{"writer clears setuid and more", file(1001, 1001, 0o4766), bob, 0o666, 0, syscall.EPERM},
		{"reader cannot clear setuid", file(1001, 1001, 0o4755), bob, 0o755, 0, syscall.EPERM},
		{"sticky on dir", dir(1001, 1001, 0o777), alice, 0o1777, 0o1777, nil},
	} {
		out, err := chmodMode(tc.a, tc.c, tc.mode)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) || err == nil && out != tc.out {
			t.Errorf("%s: chmodMode = %#o, %v; want %#o, %v", tc.name, out, err, tc.out, tc.err)
		}
	}
}

func TestChownAttr(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	for _, tc := range []struct {
		name          string
		a             *Attr
		c             Cred
		uid, gid      *uint32
		nuid, ngid, m uint32
		err           error
	}{
		{"root gives away", file(1001, 1001, 0o644), root, u(1002), u(1002), 1002, 1002, 0o644, nil},
		{"owner cannot give away", file(1001, 1001, 0o644), alice, u(1002), nil, 0, 0, 0, syscall.EPERM},
		{"owner keeps uid", file(1001, 1001, 0o644), alice, u(1001), nil, 1001, 1001, 0o644, nil},
		{"owner to own group", file(1001, 1001, 0o644), alice, nil, u(500), 1001, 500, 0o644, nil},
		{"owner to foreign group", file(1001, 1001, 0o644), alice, nil, u(77), 0, 0, 0, syscall.EPERM},
		{"non-owner group change", file(1001, 500, 0o644), bob, nil, u(500), 0, 0, 0, syscall.EPERM},
		{"other takes", file(1001, 1001, 0o644), bob, u(1002), nil, 0, 0, 0, syscall.EPERM},
		{"nothing asked", file(1001, 1001, 0o4755), bob, nil, nil, 1001, 1001, 0o4755, nil},
		{"clears setuid", file(1001, 1001, 0o4755), root, u(1002), nil, 1002, 1001, 0o755, nil},
		{"clears setgid with g+x", file(1001, 500, 0o2755), alice, nil, u(1001), 1001, 1001, 0o755, nil},
		{"keeps setgid without g+x", file(1001, 500, 0o2745), alice, nil, u(1001), 1001, 1001, 0o2745, nil},
		{"directory keeps setgid", dir(1001, 500, 0o2775), root, u(1002), nil, 1002, 500, 0o2775, nil},
	} {
		nuid, ngid, m, err := chownAttr(tc.a, tc.c, tc.uid, tc.gid)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) || err == nil && (nuid != tc.nuid || ngid != tc.ngid || m != tc.m) {
			t.Errorf("%s: chownAttr = %d:%d %#o, %v; want %d:%d %#o, %v", tc.name, nuid, ngid, m, err, tc.nuid, tc.ngid, tc.m, tc.err)
		}
	}
}

func TestKillPrivAndTimes(t *testing.T) {
	for _, tc := range []struct{ in, out uint32 }{
		{0o4755, 0o755}, {0o2755, 0o755}, {0o2745, 0o2745}, {0o6775, 0o775}, {0o1777, 0o1777}, {0o644, 0o644},
	} {
		if got := killPriv(tc.in); got != tc.out {
			t.Errorf("killPriv(%#o) = %#o, want %#o", tc.in, got, tc.out)
		}
	}
	f := file(1001, 1001, 0o646)
	for _, tc := range []struct {
		name string
		c    Cred
		now  bool
		err  error
	}{
		{"owner sets", alice, false, nil},
		{"root sets", root, false, nil},
		{"writer sets now", bob, true, nil},
		{"writer sets a time", bob, false, syscall.EPERM},
		{"reader sets now", bob, true, nil},
	} {
		a := f
		if tc.name == "reader sets now" {
			a = file(1001, 1001, 0o644)
			tc.err = syscall.EACCES
		}
		if err := checkTimes(a, tc.c, tc.now); !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("%s: checkTimes = %v, want %v", tc.name, err, tc.err)
		}
	}
	if err := checkKillPriv(file(1001, 1001, 0o4755), bob); !errors.Is(err, syscall.EACCES) {
		t.Errorf("reader kills setuid: %v, want EACCES", err)
	}
	if err := checkMknod(KindCharDev, alice); !errors.Is(err, syscall.EPERM) {
		t.Errorf("user mknod of a device: %v, want EPERM", err)
	}
	if err := checkMknod(KindFIFO, alice); err != nil {
		t.Errorf("user mknod of a FIFO: %v", err)
	}
}

func TestSquash(t *testing.T) {
	got := Cred{Uid: 0, Gid: 0, Groups: []uint32{0, 5}}.Squash()
	if got.Uid != Nobody || got.Gid != Nobody || len(got.Groups) != 1 || got.Groups[0] != 5 {
		t.Errorf("root squashed = %+v", got)
	}
	if got := alice.Squash(); got.Uid != alice.Uid || got.Gid != alice.Gid || len(got.Groups) != len(alice.Groups) {
		t.Errorf("alice squashed = %+v", got)
	}
}
