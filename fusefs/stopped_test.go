package fusefs_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
)

// TestStoppedHolderComesBack: a mount stopped (SIGSTOP: a process
// swapped out, a VM paused) past its lease, while it holds a directory it
// made, finds on waking what another mount did there meanwhile: the
// names made and removed elsewhere, at once, not after its next poll.
// What it knew of the directory (every name, a delegation of its
// unlinks) ended with the lease, whether or not it has heard so yet.
func TestStoppedHolderComesBack(t *testing.T) {
	p, dir, pid, files := holderMount(t, 4)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()

	b := mount(t, p, fusefs.Options{})
	changed := make(chan error, 1)
	go func() {
		if err := os.Remove(b.path("d/f001")); err != nil {
			changed <- err
			return
		}
		changed <- os.WriteFile(b.path("d/fromB"), []byte("b"), 0o644)
	}()
	select {
	case err := <-changed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		resume()
		t.Fatal("with the holder stopped, another mount's changes to its directory waited past 15 s on a 3 s lease")
	}
	time.Sleep(4 * time.Second) // past any lease the stopped mount had
	resume()

	// At once after waking: the stopped mount's view is the server's.
	if _, err := os.Stat(filepath.Join(dir, "d", "fromB")); err != nil {
		t.Errorf("the woken mount does not see a name made elsewhere while it slept: %v", err)
	}
	if _, err := os.Stat(files[1]); !os.IsNotExist(err) {
		t.Errorf("the woken mount still sees a name removed elsewhere while it slept: %v", err)
	}
	// An unlink there now goes to the server, and the other mount sees it.
	if err := os.Remove(files[2]); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(b.path("d"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"f000", "f003", "fromB"}; !slices.Equal(names, want) {
		t.Errorf("the other mount lists %s, want %s", strings.Join(names, " "), strings.Join(want, " "))
	}
}

// TestStoppedHolderQueueMeetsAChangedName: a mount stopped right after
// an unlink it answered itself (queued, not yet sent) wakes after its
// lease lapsed, and another mount meanwhile saw the name (the unlink had
// not reached the server), removed it and made a new file under it. The
// woken mount's queue is applied, but only to the file it removed: the
// new file keeps the name, and both mounts agree on it.
func TestStoppedHolderQueueMeetsAChangedName(t *testing.T) {
	p, dir, pid, files := holderMount(t, 2)
	// Stopped at once: the queue sends within 10 ms, so the unlink is
	// almost always still in it.
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	time.Sleep(4 * time.Second) // past the stopped mount's lease

	b := mount(t, p, fusefs.Options{})
	name := b.path("d/f000")
	recreated := false
	if _, err := os.Stat(name); err == nil {
		// The unlink was still queued: the name is the old file's.
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte("made by B"), 0o644); err != nil {
			t.Fatal(err)
		}
		recreated = true
	} else {
		t.Logf("the unlink reached the server before the stop (%v): only agreement is checked", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The woken mount applies its queue at its first request or within
	// 10 ms; a listing there is a request.
	if _, err := os.ReadDir(filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	gotB, errB := os.ReadFile(name)
	gotA, errA := os.ReadFile(files[0])
	if recreated && (errB != nil || string(gotB) != "made by B") {
		t.Errorf("the woken mount's queued unlink took the name from the new file: %q, %v", gotB, errB)
	}
	if string(gotA) != string(gotB) || (errA == nil) != (errB == nil) {
		t.Errorf("the mounts disagree on d/f000: woken %q (%v), other %q (%v)", gotA, errA, gotB, errB)
	}
}

// holderMount starts a cluster whose leases last 3 s and a pario mount
// process of it at dir, which makes the directory d with n files (and so
// holds it) and applies what it queued. It returns the mount's PID.
func holderMount(t *testing.T, n int) (p *cluster.Processes, dir string, pid int, files []string) {
	t.Helper()
	need(t, "rm")
	t.Setenv("PARIO_LEASE", "3s")
	p = spawn(t)
	dir = t.TempDir()
	cmd, out, _ := mountCommand(t, dir, "--cluster", p.ClusterFile, "mount", "--metrics", "127.0.0.1:0")
	waitMountLease(t, out)
	files = makeFiles(t, filepath.Join(dir, "d"), n)
	// Let the creates the mount answered reach the server.
	if f, err := os.Open(filepath.Join(dir, "d")); err == nil {
		_ = f.Sync()
		f.Close()
	}
	return p, dir, cmd.Process.Pid, files
}
