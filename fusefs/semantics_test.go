package fusefs_test

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/fusefs"
)

// What POSIX says system calls answer, as users see it on the mount
// (issue 12): errors, modes, space figures, times and special files.
func TestPOSIXSemantics(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})

	t.Run("name too long", func(t *testing.T) {
		out, err := shErr("cd " + m.Dir + " && touch $(printf 'a%.0s' {1..256})")
		if err == nil || !strings.Contains(out, "File name too long") {
			t.Errorf("touch of a 256-byte name: %v %q, want ENAMETOOLONG", err, out)
		}
		long := m.path(strings.Repeat("b", 256))
		for op, fn := range map[string]func() error{
			"open":  func() error { _, err := os.Create(long); return err },
			"mkdir": func() error { return os.Mkdir(long, 0o755) },
			"stat":  func() error { _, err := os.Stat(long); return err },
		} {
			if err := fn(); !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Errorf("%s of a 256-byte name: %v, want ENAMETOOLONG", op, err)
			}
		}
		sh(t, "touch "+m.path(strings.Repeat("c", 255)))
	})

	t.Run("mode 0 is mode 0", func(t *testing.T) {
		old := syscall.Umask(0)
		defer syscall.Umask(old)
		fd, err := syscall.Open(m.path("mode0"), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
		if err := syscall.Mkdir(m.path("dir0"), 0); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]os.FileMode{"mode0": 0, "dir0": os.ModeDir} {
			st, err := os.Stat(m.path(name))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != want {
				t.Errorf("%s: mode %v, want %v", name, st.Mode(), want)
			}
		}
	})
}
