package posix

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A store path given to a local back end (POSIX is the default) says to
// use -a PARIO; before, it said "directory pario: does not exist".
func TestCheckPathOfAStorePath(t *testing.T) {
	for _, write := range []bool{true, false} {
		err := CheckPath("pario:/x", write)
		if err == nil || !strings.Contains(err.Error(), "use -a PARIO") {
			t.Errorf("CheckPath(pario:/x, write %v): %v, want it to point at -a PARIO", write, err)
		}
	}
}

// A test file that is a directory, a named pipe or a device is refused:
// pario bench removes its test file before writing and after the run, and
// an empty directory given to -o was removed and replaced (as root,
// -o /dev/null would have unlinked /dev/null).
func TestCheckPathOfASpecialFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{dir, "is a directory, not a regular file"},
		{fifo, "is a named pipe, not a regular file"},
		{"/dev/null", "is a character device, not a regular file"},
	} {
		for _, write := range []bool{true, false} {
			err := CheckPath(c.path, write)
			if err == nil || !strings.Contains(err.Error(), "test file "+c.path+" "+c.want) {
				t.Errorf("CheckPath(%s, write %v): %v, want %q", c.path, write, err, c.want)
			}
		}
	}
	// A regular file, there or not, is fine.
	if err := CheckPath(filepath.Join(dir, "new"), true); err != nil {
		t.Errorf("a new file: %v", err)
	}
}
