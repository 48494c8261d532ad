package fusefs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/pario/pario/cluster"
)

// Each process writing through a mount is a writer of its own to the I/O
// servers' emulated extent locks (`pario up --lock-revoke`), as each client
// node is to Lustre's: one process's writes, however many and from however
// many of its threads, take one lock; another process writing further on
// in the same datafile takes it from the first.
func TestEachProcessIsAWriter(t *testing.T) {
	need(t, "fusermount3", "dd")
	lc, err := cluster.Start(context.Background(), cluster.Config{
		Dir: t.TempDir(), DataServers: 1,
		Emulation: cluster.Emulation{LockRevoke: time.Microsecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	m := mountLocal(t, lc)
	f := filepath.Join(m.Dir, "shared")
	revocations := func() uint64 { return lc.Data[0].DiskStats().Revocations }
	dd := func(seek int) {
		t.Helper()
		// 16 writes of 64 KiB, each its own write(2) and FUSE request.
		out, err := exec.Command("dd", "if=/dev/zero", "of="+f, "bs=64k", "count=16", "seek="+strconv.Itoa(seek), "conv=notrunc").CombinedOutput()
		if err != nil {
			t.Fatalf("dd seek=%d: %v: %s", seek, err, out)
		}
	}
	// This process, from four threads in turn, each its own region: FUSE
	// names the thread, the mount the process.
	threads, err := os.Create(filepath.Join(m.Dir, "threads"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	// Four goroutines locked to their threads at once are four threads;
	// they write in turn, each round one write each.
	turns := make([]chan int64, 4)
	done := make(chan error)
	for th := range turns {
		turns[th] = make(chan int64)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for round := range turns[th] {
				_, err := threads.WriteAt(buf, (int64(th)*16+round)*int64(len(buf)))
				done <- err
			}
		}()
	}
	for round := range int64(4) {
		for _, turn := range turns {
			turn <- round
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, turn := range turns {
		close(turn)
	}
	if err := threads.Close(); err != nil {
		t.Fatal(err)
	}
	if n := revocations(); n != 0 {
		t.Fatalf("one process's writes from four threads revoked %d locks, want 0", n)
	}

	dd(0)
	if n := revocations(); n != 0 {
		t.Fatalf("one process's 16 writes revoked %d locks, want 0", n)
	}
	dd(16)
	if n := revocations(); n != 1 {
		t.Fatalf("a second process's writes after the first's revoked %d locks, want 1", n)
	}
	dd(32)
	if n := revocations(); n != 2 {
		t.Fatalf("a third process's writes revoked %d locks in all, want 2", n)
	}
}
