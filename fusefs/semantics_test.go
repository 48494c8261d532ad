package fusefs_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
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

	t.Run("df counts the shared disk once", func(t *testing.T) {
		// The 4 I/O servers keep their data on the disk of the test's
		// temporary directory.
		var disk, mnt syscall.Statfs_t
		if err := syscall.Statfs(t.TempDir(), &disk); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Statfs(m.Dir, &mnt); err != nil {
			t.Fatal(err)
		}
		want, got := disk.Blocks*uint64(disk.Bsize), mnt.Blocks*uint64(mnt.Bsize)
		if got > want || got < want-uint64(mnt.Bsize) {
			t.Errorf("statfs of the mount: %d bytes, want the shared disk's %d", got, want)
		}
		out := sh(t, "df -B1 --output=size "+m.Dir+" | tail -1")
		if strings.TrimSpace(out) != strconv.FormatUint(got, 10) {
			t.Errorf("df on the mount: %q, want %d", out, got)
		}
	})

	t.Run("st_blocks counts what the datafiles hold", func(t *testing.T) {
		sh(t, "dd if=/dev/urandom of="+m.path("sparse")+" bs=1M count=1 seek=6143 status=none")
		out := sh(t, "stat -c '%s %b %B' "+m.path("sparse"))
		var size, blocks, unit int64
		if _, err := fmt.Sscan(out, &size, &blocks, &unit); err != nil {
			t.Fatalf("stat: %q: %v", out, err)
		}
		if size != 6<<30 || blocks*unit < 1<<20 || blocks*unit > 4<<20 {
			t.Errorf("6 GiB sparse file with 1 MiB of data: stat says %q, want about 1 MiB of blocks", out)
		}
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
