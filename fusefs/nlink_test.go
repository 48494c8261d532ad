package fusefs_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/pario/pario/fusefs"
)

// An open file keeps one link while it has its name and none once it is
// unlinked (pjdfstest unlink/14.t).
func TestNlinkOfUnlinkedOpenFile(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	f, err := os.OpenFile(m.path("f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nlink := func() uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatalf("fstat %s: %v", m.path("f"), err)
		}
		return uint64(st.Nlink)
	}
	if n := nlink(); n != 1 {
		t.Errorf("nlink of an open file with its name: %d, want 1", n)
	}
	if err := os.Remove(m.path("f")); err != nil {
		t.Fatal(err)
	}
	if n := nlink(); n != 0 {
		t.Errorf("nlink of an open file after unlink: %d, want 0", n)
	}
}
