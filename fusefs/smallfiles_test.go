package fusefs_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/fusefs"
)

// Small files, as tar x makes them (scripts/bench-tar.sh): create, write,
// futimens, fchown, fchmod, close.

// tar x through one mount: a second mount sees every file's data, mode
// and the mtime tar set right after, and so does a mount made afterwards;
// as root, tar's chowns to the owner files already have cost no metadata
// request.
func TestTarSmallFilesCloseToOpen(t *testing.T) {
	need(t, "tar")
	p := spawn(t)
	src := t.TempDir()
	makeTree(t, filepath.Join(src, "tree"))
	archive := filepath.Join(t.TempDir(), "tree.tar")
	sh(t, "tar cf "+archive+" -C "+src+" tree")

	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	sh(t, "tar xf "+archive+" -C "+a.Dir)
	sameTree(t, filepath.Join(src, "tree"), b.path("tree"))
	if os.Geteuid() == 0 {
		// tar chowns every file to its archived owner, root's own.
		if n := a.Stats().NoopChowns; n == 0 {
			t.Error("no chown that changed nothing was answered by the mount")
		}
	}
	if err := a.Unmount(); err != nil {
		t.Fatal(err)
	}
	c := mount(t, p, fusefs.Options{})
	sameTree(t, filepath.Join(src, "tree"), c.path("tree"))
}

// A chown the mount answers alone is one that would change nothing; any
// other reaches the metadata server: after another mount gave the file
// away, with a setuid bit to clear, and a chmod after writes keeps the
// data.
func TestNoopChownOnlyWhenNothingChanges(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	uid, gid := os.Geteuid(), os.Getegid()

	f, err := os.OpenFile(a.path("f"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := randomBytes(t, 70001)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	owner := func(m *mounted) (uint32, uint32, os.FileMode) {
		t.Helper()
		st, err := os.Stat(m.path("f"))
		if err != nil {
			t.Fatal(err)
		}
		s := st.Sys().(*syscall.Stat_t)
		return s.Uid, s.Gid, st.Mode()
	}

	before := a.Stats().NoopChowns
	if err := f.Chown(uid, gid); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().NoopChowns; got != before+1 {
		t.Errorf("a chown to the owner the file has: %d answered by the mount, want %d", got-before, 1)
	}

	if uid == 0 {
		// B gives the file away; A's chown back must not be taken for a
		// no-op on what A read before.
		if err := os.Chown(b.path("f"), 4321, 4321); err != nil {
			t.Fatal(err)
		}
		if err := f.Chown(0, 0); err != nil {
			t.Fatal(err)
		}
		if u, g, _ := owner(b); u != 0 || g != 0 {
			t.Errorf("after A's chown back to root, B sees %d:%d", u, g)
		}
	}

	// A chown that clears setuid is a change.
	if err := f.Chmod(0o4755); err != nil {
		t.Fatal(err)
	}
	if err := f.Chown(uid, gid); err != nil {
		t.Fatal(err)
	}
	if _, _, m := owner(b); m&os.ModeSetuid != 0 || m.Perm() != 0o755 {
		t.Errorf("after a chown of a setuid file, B sees mode %v, want -rwxr-xr-x", m)
	}

	// chmod after the writes, then close: data and mode are B's.
	if err := f.Chmod(0o640); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, m := owner(b); m.Perm() != 0o640 {
		t.Errorf("B sees mode %v after chmod 640", m)
	}
	if got := readFile(t, b.path("f")); !bytes.Equal(got, data) {
		t.Errorf("B reads %d bytes, %d written", len(got), len(data))
	}
}

// A `pario mount` killed with SIGKILL after close and fsync loses nothing
// it acknowledged: data, mode and the mtime set, read back with the
// native client.
func TestKilledMountLosesNothingSynced(t *testing.T) {
	p := spawn(t)
	dir := t.TempDir()
	cmd, _, exited := mountCommand(t, dir, "--cluster", p.ClusterFile, "mount")

	mtime := time.Date(2025, 7, 1, 8, 30, 0, 123456789, time.UTC)
	files := map[string][]byte{}
	for i, size := range []int{0, 1, 4095, 65537, 300001} {
		name := string(rune('a'+i)) + ".dat"
		data := randomBytes(t, size)
		files[name] = data
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := f.Chown(os.Geteuid(), os.Getegid()); err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(0o644); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if out, err := exec.Command(parioBin, "umount", dir).CombinedOutput(); err != nil {
		t.Logf("pario umount of the dead mount: %v\n%s", err, out)
	}

	c := dial(t, p)
	ctx := context.Background()
	for name, want := range files {
		a, err := c.Lookup(ctx, "/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if a.Mode&0o7777 != 0o644 || a.Mtime != mtime.UnixNano() {
			t.Errorf("%s: mode %o, mtime %v; want 644, %v", name, a.Mode&0o7777, time.Unix(0, a.Mtime).UTC(), mtime)
		}
		f, err := c.OpenAttr("/"+name, a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes read back, %d written", name, len(got), len(want))
		}
	}
}
