package fusefs_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

	t.Run("times", func(t *testing.T) {
		f := m.path("times")
		writeFile(t, f, []byte("data"))
		st := func() *syscall.Stat_t {
			t.Helper()
			var s syscall.Stat_t
			if err := syscall.Stat(f, &s); err != nil {
				t.Fatal(err)
			}
			return &s
		}
		ns := func(ts syscall.Timespec) int64 { return ts.Nano() }

		// touch -a and -m with nanoseconds: each time as given, ctime moves.
		before := st()
		sh(t, "touch -a -d '2020-01-02 03:04:05.123456789 UTC' "+f)
		if got := sh(t, "TZ=UTC stat -c %x "+f); !strings.HasPrefix(got, "2020-01-02 03:04:05.123456789") {
			t.Errorf("atime after touch -a: %q", got)
		}
		after := st()
		if ns(after.Mtim) != ns(before.Mtim) || ns(after.Ctim) <= ns(before.Ctim) {
			t.Errorf("touch -a: mtime %d -> %d, ctime %d -> %d; want mtime kept, ctime later",
				ns(before.Mtim), ns(after.Mtim), ns(before.Ctim), ns(after.Ctim))
		}
		sh(t, "touch -m -d '2021-05-06 07:08:09.987654321 UTC' "+f)
		if got := sh(t, "TZ=UTC stat -c %y "+f); !strings.HasPrefix(got, "2021-05-06 07:08:09.987654321") {
			t.Errorf("mtime after touch -m: %q", got)
		}
		if got := st(); ns(got.Atim) != ns(after.Atim) {
			t.Errorf("touch -m changed atime: %d -> %d", ns(after.Atim), ns(got.Atim))
		}

		// relatime: a read after a change records the atime, the next does not.
		writeFile(t, f, []byte("new data"))
		changed := st()
		readFile(t, f)
		read1 := st()
		if ns(read1.Atim) <= ns(changed.Mtim) || ns(read1.Ctim) != ns(changed.Ctim) {
			t.Errorf("read after a write: atime %d (mtime %d), ctime %d -> %d; want atime after mtime, ctime kept",
				ns(read1.Atim), ns(changed.Mtim), ns(changed.Ctim), ns(read1.Ctim))
		}
		readFile(t, f)
		if read2 := st(); ns(read2.Atim) != ns(read1.Atim) {
			t.Errorf("second read moved atime %d -> %d (relatime keeps it)", ns(read1.Atim), ns(read2.Atim))
		}

		// relatime holds while another descriptor keeps the file open, so
		// that every open shares one open-file state (as when a close's
		// release reaches the mount after the next open, on a busy
		// machine): the second read still leaves atime alone.
		held, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, f, []byte("newer data"))
		readFile(t, f)
		read1 = st()
		if ns(read1.Atim) <= ns(read1.Mtim) {
			t.Errorf("read after a write, file held open: atime %d, mtime %d; want atime after mtime", ns(read1.Atim), ns(read1.Mtim))
		}
		readFile(t, f)
		if read2 := st(); ns(read2.Atim) != ns(read1.Atim) {
			t.Errorf("second read, file held open: moved atime %d -> %d (relatime keeps it)", ns(read1.Atim), ns(read2.Atim))
		}
		held.Close()

		// ctime moves with every change.
		for what, change := range map[string]func() error{
			"chmod":    func() error { return os.Chmod(f, 0o600) },
			"rename":   func() error { return os.Rename(f, f+"2") },
			"write":    func() error { return os.WriteFile(f, []byte("more"), 0o644) },
			"truncate": func() error { return os.Truncate(f, 1) },
		} {
			before := st()
			time.Sleep(2 * time.Millisecond)
			if err := change(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if what == "rename" {
				if err := os.Rename(f+"2", f); err != nil {
					t.Fatal(err)
				}
			}
			if after := st(); ns(after.Ctim) <= ns(before.Ctim) {
				t.Errorf("%s: ctime %d -> %d, want later", what, ns(before.Ctim), ns(after.Ctim))
			}
		}
	})

	t.Run("special files", func(t *testing.T) {
		before := steadyDatafiles(t, p)
		dir := m.path("special")
		sh(t, "mkdir "+dir+" && cd "+dir+" && mkfifo fifo && mknod null c 1 3 && mknod sda b 8 0")
		if err := syscall.Mknod(dir+"/sock", syscall.S_IFSOCK|0o600, 0); err != nil {
			t.Fatal(err)
		}
		want := "fifo: fifo 0,0\nnull: character special file 1,3\nsda: block special file 8,0\nsock: socket 0,0\n"
		if got := sh(t, "cd "+dir+" && stat -c '%n: %F %Hr,%Lr' fifo null sda sock"); got != want {
			t.Errorf("stat of special files:\n%s\nwant\n%s", got, want)
		}
		if got := sh(t, "ls -l "+dir+" | tail -n +2 | cut -c1 | tr -d '\\n'"); got != "pcbs" {
			t.Errorf("ls -l types: %q, want pcbs", got)
		}
		// The FIFO is a pipe (the kernel serves it).
		if got := sh(t, "cd "+dir+" && (echo through the fifo > fifo &) && cat fifo"); got != "through the fifo\n" {
			t.Errorf("read from the FIFO: %q", got)
		}
		// Device nodes are not opened: the mount is nodev, as FUSE mounts are.
		if _, err := os.Open(dir + "/null"); !errors.Is(err, syscall.EACCES) {
			t.Errorf("open of a device node on a nodev mount: %v, want EACCES", err)
		}
		if n := datafiles(t, p); n != before {
			t.Errorf("special files made %d datafiles", n-before)
		}
		sh(t, "rm -r "+dir)
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
