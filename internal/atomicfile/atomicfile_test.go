package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old, complete"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new, half"))
	if b, _ := os.ReadFile(path); string(b) != "old, complete" {
		t.Fatalf("the final name changed before Commit: %q", b)
	}
	f.Abort()
	if b, _ := os.ReadFile(path); string(b) != "old, complete" {
		t.Fatalf("after Abort: %q", b)
	}
	f, err = Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new, complete"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new, complete" {
		t.Fatalf("after Commit: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files left in the directory, want the one", len(ents))
	}
	// The mode is os.Create's: 0666 less the umask.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	f, _ = Create(filepath.Join(dir, "mode"))
	f.Commit()
	if st, _ := os.Stat(filepath.Join(dir, "mode")); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want -rw-r--r--", st.Mode().Perm())
	}
}

// A final name that is not a regular file (a FIFO, /dev/stdout) is
// written directly, and errors name the final file.
func TestDirectAndErrorNames(t *testing.T) {
	f, err := Create(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Fatal(err)
	}
	_, err = Create(filepath.Join(t.TempDir(), "missing", "out"))
	if err == nil || !strings.Contains(err.Error(), "missing/out") || strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("Create in a missing directory: %v, want the final name", err)
	}
}
