package fusefs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pario/pario/fusefs"
)

// Attribute changes answered by the mount (attrhere.go).

// makeLikeTar makes n files in dir (a directory the mount just made) as
// tar x does: create, write, set the times and the mode while open,
// close. It returns the paths and the modification time set.
func makeLikeTar(t *testing.T, dir string, n int) ([]string, time.Time) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1_234_567_890, 123_456_789)
	var paths []string
	for i := range n {
		p := fmt.Sprintf("%s/f%03d", dir, i)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("data")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(0o600); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths, mtime
}

func wantAttrs(t *testing.T, who, p string, mode fs.FileMode, mtime time.Time, size int64) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("%s: stat %s: %v", who, p, err)
	}
	if st.Mode().Perm() != mode || !st.ModTime().Equal(mtime) || st.Size() != size {
		t.Fatalf("%s: %s has mode %v, mtime %v, size %d; want %v, %v, %d", who, p, st.Mode().Perm(), st.ModTime(), st.Size(), mode, mtime, size)
	}
}

// TestAttributeChangesAnsweredHereAreSeenElsewhere: the times and mode
// tar sets on each file it makes in a directory the mount made are
// answered by the mount, which shows them at once, and every other client
// sees them at its next stat (close-to-open): its request recalls the
// directory, which sends what the mount holds first.
func TestAttributeChangesAnsweredHereAreSeenElsewhere(t *testing.T) {
	slowBatches(t)
	p, a, b := twoMounts(t)
	const n = 40
	files, mtime := makeLikeTar(t, a.path("d"), n)
	if got := a.Stats().SetattrsHere; got != 2*n {
		t.Fatalf("%d attribute changes answered by the mount, want %d (a utimens and a chmod per file)", got, 2*n)
	}
	// The mount shows them without waiting for the queue.
	for _, f := range files {
		wantAttrs(t, "the mount that made them", f, 0o600, mtime, 4)
	}
	if pending := a.Stats().PendingHere; pending == 0 {
		t.Fatal("nothing pending after the mount's own stats: they waited for the queue")
	}
	// Another mount sees them at its first stat.
	for i := range files {
		wantAttrs(t, "second mount", b.path("d", fmt.Sprintf("f%03d", i)), 0o600, mtime, 4)
	}
	if pending := a.Stats().PendingHere; pending != 0 {
		t.Fatalf("%d operations still pending after another mount read the directory", pending)
	}
	// And the metadata server holds them, ctime no older than the change.
	c := dial(t, p)
	got, err := c.Lookup(context.Background(), "/d/f000")
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != 0o600 || got.Mtime != mtime.UnixNano() || got.Ctime < got.Mtime {
		t.Fatalf("metadata server: mode %o, mtime %d, ctime %d; want 600, %d, and ctime after mtime", got.Mode, got.Mtime, got.Ctime, mtime.UnixNano())
	}
}

// TestCloseRecordsMtimeHere: a file written and closed without setting
// its times gets its modification time at close, answered by the mount,
// and another mount sees that time and the size.
func TestCloseRecordsMtimeHere(t *testing.T) {
	slowBatches(t)
	_, a, b := twoMounts(t)
	if err := os.Mkdir(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := os.WriteFile(a.path("d", "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if got := a.Stats().SetattrsHere; got != 1 {
		t.Fatalf("%d attribute changes answered here, want 1 (the mtime at close)", got)
	}
	here, err := os.Stat(a.path("d", "f"))
	if err != nil {
		t.Fatal(err)
	}
	there, err := os.Stat(b.path("d", "f"))
	if err != nil {
		t.Fatal(err)
	}
	if !here.ModTime().Equal(there.ModTime()) || there.ModTime().Before(before.Add(-time.Second)) || there.ModTime().After(after.Add(time.Second)) || there.Size() != 5 {
		t.Fatalf("mtime here %v, on the second mount %v (size %d); want the same, between %v and %v, size 5", here.ModTime(), there.ModTime(), there.Size(), before, after)
	}
}

// TestAttributeChangesAfterRenameOrLinkGoToTheServer: once a file made
// here is renamed or linked it may be known elsewhere, so its attribute
// changes are the metadata server's again, and they land on the file
// whatever name it has now.
func TestAttributeChangesAfterRenameOrLinkGoToTheServer(t *testing.T) {
	slowBatches(t)
	_, a, b := twoMounts(t)
	if err := os.Mkdir(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		move     func(from, to string) error
		newName  string
		wantMode fs.FileMode
	}{
		{"rename", os.Rename, "renamed", 0o640},
		{"link", os.Link, "linked", 0o604},
	} {
		from, to := a.path("d", tc.name), a.path("d", tc.newName)
		f, err := os.OpenFile(from, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(0o611); err != nil { // answered here
			t.Fatal(err)
		}
		here := a.Stats().SetattrsHere
		if err := tc.move(from, to); err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(tc.wantMode); err != nil {
			t.Fatal(err)
		}
		if got := a.Stats().SetattrsHere; got != here {
			t.Fatalf("%s: the chmod after it was answered by the mount (%d, then %d)", tc.name, here, got)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(b.path("d", tc.newName))
		if err != nil || st.Mode().Perm() != tc.wantMode {
			t.Fatalf("%s: second mount sees %v (%v), want mode %v", tc.name, st, err, tc.wantMode)
		}
	}
}

// TestAttributeChangesHereSurviveAMetadataServerRestart: attribute
// changes answered here while the metadata server is stopped are applied
// once a new one runs, as the unlinks are.
func TestAttributeChangesHereSurviveAMetadataServerRestart(t *testing.T) {
	t.Setenv("PARIO_LEASE", "3s") // the servers' environment: a short grace
	p := spawn(t)
	a := mount(t, p, fusefs.Options{OpTimeout: 20 * time.Second})
	waitLease(t, a)
	if err := os.Mkdir(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var files []*os.File
	for i := range n {
		f, err := os.OpenFile(a.path("d", fmt.Sprintf("f%02d", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("data")); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// A directory made in the held one: its changes are answered here too.
	if err := os.Mkdir(a.path("d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	stopMeta(t, p)
	mtime := time.Unix(1_111_111_111, 5)
	here := a.Stats().SetattrsHere
	if err := os.Chtimes(a.path("d", "sub"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(a.path("d", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().SetattrsHere - here; got != 2 {
		t.Fatalf("%d of the directory's changes answered by the mount, want 2", got)
	}
	for _, f := range files {
		if err := os.Chtimes(f.Name(), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(0o640); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if pending := a.Stats().PendingHere; pending == 0 {
		t.Fatalf("nothing pending with the metadata server stopped (stats %+v)", a.Stats())
	}
	restartMeta(t, p, a)
	c := dial(t, p)
	for i := range n {
		got, err := c.Lookup(context.Background(), fmt.Sprintf("/d/f%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got.Mode != 0o640 || got.Mtime != mtime.UnixNano() {
			t.Fatalf("/d/f%02d after the restart: mode %o, mtime %d; want 640, %d", i, got.Mode, got.Mtime, mtime.UnixNano())
		}
	}
	got, err := c.Lookup(context.Background(), "/d/sub")
	if err != nil || got.Mode != 0o700 || got.Mtime != mtime.UnixNano() {
		t.Fatalf("/d/sub after the restart: %+v (%v); want mode 700, mtime %d", got, err, mtime.UnixNano())
	}
}

// A write sends the metadata server nothing, so it does not wait for the
// attribute changes queued before it: tar x's write of a file after it
// set the mode and times of the one before, or of this one. Nor does the
// chmod and utimes tar makes of a directory wait for the changes queued
// in another.
func TestTarsRequestsDoNotWaitForTheQueue(t *testing.T) {
	slowBatches(t)
	_, a, _ := twoMounts(t)
	writeFile(t, a.path("other"), []byte("other"))
	if err := os.Symlink("other", a.path("lnk")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"d", "e"} {
		if err := os.Mkdir(a.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		f, err := os.OpenFile(a.path("d", fmt.Sprint("f", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("data")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Nor do an open, a read, access(2), a readlink and a getxattr of
	// other inodes.
	if got := readFile(t, a.path("other")); string(got) != "other" {
		t.Fatalf("other reads %q", got)
	}
	if err := syscall.Access(a.path("other"), 4); err != nil {
		t.Fatalf("access(other, R_OK): %v", err)
	}
	if target, err := os.Readlink(a.path("lnk")); err != nil || target != "other" {
		t.Fatalf("readlink: %q, %v", target, err)
	}
	if _, err := unix.Getxattr(a.path("other"), fusefs.XattrServers, make([]byte, 256)); err != nil {
		t.Fatalf("getxattr %s: %v", fusefs.XattrServers, err)
	}
	if st := a.Stats(); st.SetattrsHere == 0 || st.CreatesHere != 3 || st.PendingHere != st.SetattrsHere+st.CreatesHere {
		t.Fatalf("%d attribute changes and %d creates answered here, %d still pending after the writes and the requests about other inodes; want 3 creates, and all pending (they waited for the queue)", st.SetattrsHere, st.CreatesHere, st.PendingHere)
	}
	// A directory's chmod and utimes wait for the queued changes in it
	// (its creates change its times when applied), not for those in
	// another: e's do not wait for d's.
	when := time.Unix(1_500_000_000, 0)
	for _, dir := range []string{"e", "d"} {
		if err := os.Chmod(a.path(dir), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(a.path(dir), when, when); err != nil {
			t.Fatal(err)
		}
		if st := a.Stats(); dir == "e" && st.PendingHere != st.SetattrsHere+st.CreatesHere {
			t.Fatalf("%d of %d attribute changes and creates still pending after another directory's chmod and utimes; want all (they waited for the queue)", st.PendingHere, st.SetattrsHere+st.CreatesHere)
		}
	}
	// What the directory's owner sees is what was set.
	st, err := os.Stat(a.path("d"))
	if err != nil || st.Mode().Perm() != 0o750 || !st.ModTime().Equal(when) {
		t.Fatalf("the directory: %v, mode %v, mtime %v; want -rwxr-x---, %v", err, st.Mode().Perm(), st.ModTime(), when)
	}
}

// TestDirectoryAttributeChangesAnsweredHere: tar sets each directory's
// times, owner (as root, to the one it has) and mode once its entries are
// in. For a directory the mount made in a directory it holds, those are
// answered here and queued: the mount's next stat shows them (and the
// link count its subdirectories make), as does another mount's, and the
// metadata server holds them once the queue is sent. A directory made
// where the mount holds nothing (the root), or renamed since it was made,
// has its changes go to the server.
func TestDirectoryAttributeChangesAnsweredHere(t *testing.T) {
	slowBatches(t)
	p, a, b := twoMounts(t)
	if err := os.MkdirAll(a.path("top", "d", "s1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(a.path("top", "d", "s2"), 0o755); err != nil {
		t.Fatal(err)
	}
	makeLikeTar(t, a.path("top", "d", "files"), 3)
	mtime := time.Unix(1_111_111_111, 222_333_444)
	d := a.path("top", "d")
	setLikeTar := func(p string, mode fs.FileMode) {
		t.Helper()
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, os.Getuid(), os.Getgid()); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	before, chowns := a.Stats().SetattrsHere, a.Stats().NoopChowns
	setLikeTar(d, 0o750)
	if got := a.Stats().SetattrsHere - before; got != 2 {
		t.Fatalf("%d of the directory's attribute changes answered by the mount, want 2 (utimens and chmod)", got)
	}
	if got := a.Stats().NoopChowns - chowns; got != 1 {
		t.Fatalf("%d chowns to the directory's own owner answered by the mount, want 1", got)
	}
	if pending := a.Stats().PendingHere; pending < 2 {
		t.Fatalf("%d operations pending here after the directory's changes, want them queued", pending)
	}
	// The mount knows every attribute the directory will have (its times
	// were set after its last entry was made): its stat does not wait.
	st, err := os.Stat(d)
	if err != nil {
		t.Fatal(err)
	}
	if nlink := st.Sys().(*syscall.Stat_t).Nlink; st.Mode().Perm() != 0o750 || !st.ModTime().Equal(mtime) || nlink != 5 {
		t.Fatalf("the mount that made it stats %s as %v, %v, %d links; want 0750, %v, 5", d, st.Mode(), st.ModTime(), nlink, mtime)
	}
	if pending := a.Stats().PendingHere; pending < 2 {
		t.Fatalf("the mount's stat of the directory waited for the queue (%d pending)", pending)
	}
	// A create after the times were set moves the directory's mtime to the
	// metadata server's time: the next stat shows that time.
	e := a.path("top", "e")
	if err := os.Mkdir(e, 0o755); err != nil {
		t.Fatal(err)
	}
	setLikeTar(e, 0o750)
	made := time.Now()
	if err := os.WriteFile(filepath.Join(e, "late"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err = os.Stat(e)
	if err != nil {
		t.Fatal(err)
	}
	if nlink := st.Sys().(*syscall.Stat_t).Nlink; st.Mode().Perm() != 0o700 || st.ModTime().Before(made) || nlink != 2 {
		t.Fatalf("after a create in it and a chmod, %s is %v, %v, %d links; want 0700, an mtime after %v, 2", e, st.Mode(), st.ModTime(), nlink, made)
	}
	// A setgid directory's chown to its owner changes nothing either (a
	// chown clears no bit of a directory's).
	sg := a.path("top", "d", "s2")
	if err := os.Chmod(sg, 0o755|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	chowns = a.Stats().NoopChowns
	if err := os.Lchown(sg, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().NoopChowns - chowns; got != 1 {
		t.Fatalf("%d chowns of a setgid directory to its own owner answered by the mount, want 1", got)
	}
	if st, err := os.Stat(sg); err != nil || st.Mode()&fs.ModeSetgid == 0 || st.Mode().Perm() != 0o755 {
		t.Fatalf("after its chown, %s is %v (%v), want setgid and 0755", sg, st.Mode(), err)
	}

	for _, m := range []struct {
		who string
		m   *mounted
	}{{"the mount that made it", a}, {"second mount", b}} {
		p := m.m.path("top", "d")
		wantAttrs(t, m.who, p, 0o750, mtime, 0)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if nlink := st.Sys().(*syscall.Stat_t).Nlink; nlink != 5 {
			t.Fatalf("%s: %s has %d links, want 5 (its own, its entry and three subdirectories')", m.who, p, nlink)
		}
	}
	got, err := dial(t, p).Lookup(context.Background(), "/top/d")
	if err != nil || got.Mode != 0o750 || got.Mtime != mtime.UnixNano() || got.Atime != mtime.UnixNano() || got.Ctime < got.Mtime {
		t.Fatalf("metadata server: /top/d is %+v (%v); want mode 750, mtime and atime %d", got, err, mtime.UnixNano())
	}

	// Where the mount holds nothing, or after a rename, the server answers.
	if err := os.Mkdir(a.path("root-made"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a.path("top", "d", "s1"), a.path("top", "d", "moved")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a.path("root-made"), a.path("top", "d", "moved")} {
		before := a.Stats().SetattrsHere
		setLikeTar(p, 0o700)
		if got := a.Stats().SetattrsHere; got != before {
			t.Fatalf("%s: %d attribute changes answered by the mount, want none", p, got-before)
		}
		wantAttrs(t, "the mount that made it", p, 0o700, mtime, 0)
	}
	wantAttrs(t, "second mount", b.path("top", "d", "moved"), 0o700, mtime, 0)
}

// TestDirectoryChangedHereThenElsewhere: another mount that renames or
// removes a directory whose attributes this mount answered (and whose
// entry the kernel dropped at the chmod) first recalls its parent, which
// sends the changes; this mount then looks the old name up at the server
// and finds it gone, and sees the new name with the attributes it set.
func TestDirectoryChangedHereThenElsewhere(t *testing.T) {
	slowBatches(t)
	_, a, b := twoMounts(t)
	if err := os.MkdirAll(a.path("top", "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1_222_333_444, 0)
	if err := os.Chtimes(a.path("top", "d"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(a.path("top", "d"), 0o705); err != nil {
		t.Fatal(err)
	}
	wantAttrs(t, "the mount that made it", a.path("top", "d"), 0o705, mtime, 0)
	if err := os.Rename(b.path("top", "d"), b.path("top", "e")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.path("top", "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after another mount renamed it, the old name stats as %v, want ENOENT", err)
	}
	for _, m := range []*mounted{a, b} {
		wantAttrs(t, "after the rename", m.path("top", "e"), 0o705, mtime, 0)
		st, err := os.Stat(m.path("top", "e"))
		if err != nil {
			t.Fatal(err)
		}
		if nlink := st.Sys().(*syscall.Stat_t).Nlink; nlink != 3 {
			t.Fatalf("after the rename, top/e has %d links, want 3", nlink)
		}
	}
	if err := os.Remove(b.path("top", "e", "sub")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(a.path("top", "e"))
	if err != nil {
		t.Fatal(err)
	}
	if nlink := st.Sys().(*syscall.Stat_t).Nlink; nlink != 2 {
		t.Fatalf("after another mount removed its subdirectory, top/e has %d links here, want 2", nlink)
	}
}

// TestNameAddedAfterTimesSetHere: a name the metadata server adds to a
// directory (mkdir, mknod) after the directory's utimens answered here
// moves its times past the ones set, as on a local disk: the server's
// request waits for the queued utimens instead of being overwritten by
// it when the queue is applied.
func TestNameAddedAfterTimesSetHere(t *testing.T) {
	slowBatches(t)
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	waitLease(t, m)
	set := time.Unix(1_000_000_000, 0)
	for _, add := range []struct {
		what string
		do   func(dir string) error
	}{
		{"mkdir", func(dir string) error { return os.Mkdir(filepath.Join(dir, "sub"), 0o755) }},
		{"mkfifo", func(dir string) error { return syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644) }},
	} {
		// A top directory per case: the metadata server's lookup below
		// recalls it from the mount.
		dir := m.path(add.what, "d")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		before := m.Stats().SetattrsHere
		if err := os.Chtimes(dir, set, set); err != nil {
			t.Fatal(err)
		}
		if here := m.Stats().SetattrsHere - before; here != 1 {
			t.Fatalf("%s: %d attribute changes answered by the mount, want the utimens", add.what, here)
		}
		start := time.Now().Add(-time.Second)
		if err := add.do(dir); err != nil {
			t.Fatalf("%s: %v", add.what, err)
		}
		for _, st := range []struct {
			who string
			at  string
		}{{"this mount", dir}, {"the metadata server", "/" + add.what + "/d"}} {
			var mtime time.Time
			if st.who == "this mount" {
				fi, err := os.Stat(st.at)
				if err != nil {
					t.Fatal(err)
				}
				mtime = fi.ModTime()
			} else {
				a, err := dial(t, p).Lookup(context.Background(), st.at)
				if err != nil {
					t.Fatal(err)
				}
				mtime = time.Unix(0, a.Mtime)
			}
			if mtime.Before(start) {
				t.Errorf("after %s in it, %s has the directory's mtime %v, want the %s's (after %v)", add.what, st.who, mtime, add.what, start)
			}
		}
	}
}
