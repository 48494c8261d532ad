package fusefs_test

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/internal/testenv"
)

// A full disk under the servers, through the mount, whose write-behind
// answers a write before its data reaches an I/O server: a program that
// writes more than fits must be told, at a write or at close at the
// latest, never left to believe its data is stored. What was stored before
// stays intact, and once the partial file is removed the store takes new
// files.
func TestFullDiskThroughTheMount(t *testing.T) {
	need(t, "mount", "umount")
	dir := testenv.Tmpfs(t, "24m")
	m := mount(t, spawnIn(t, dir), fusefs.Options{})

	keep := randomBytes(t, 4<<20)
	writeFile(t, m.path("keep.dat"), keep)

	// 64 MiB onto 24: the error may come at a write (once write-behind is
	// full or has failed) or at close, and must be ENOSPC.
	f, err := os.Create(m.path("big.dat"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := randomBytes(t, 1<<20)
	var werr error
	for i := 0; i < 64 && werr == nil; i++ {
		_, werr = f.Write(chunk)
	}
	cerr := f.Close()
	t.Logf("writing 64 MiB onto the full disk: write %v, close %v", werr, cerr)
	if werr == nil && cerr == nil {
		t.Fatal("64 MiB written onto a 24 MiB disk and closed without an error: the data was never stored")
	}
	for _, err := range []error{werr, cerr} {
		if err != nil && !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("error %v, want ENOSPC (no space left on device)", err)
		}
	}

	if got := readFile(t, m.path("keep.dat")); !bytes.Equal(got, keep) {
		t.Fatalf("keep.dat reads back %d bytes, not what was written", len(got))
	}
	if err := os.Remove(m.path("big.dat")); err != nil {
		t.Fatalf("remove the partial file on the full disk: %v", err)
	}
	after := randomBytes(t, 4<<20)
	eventually(t, "a new file fits once the partial one is removed", func() error {
		f, err := os.Create(m.path("after.dat"))
		if err != nil {
			return err
		}
		_, err = f.Write(after)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if got := readFile(t, m.path("after.dat")); !bytes.Equal(got, after) {
		t.Fatalf("after.dat reads back %d bytes, not what was written", len(got))
	}
}
