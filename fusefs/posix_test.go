package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/fusefs"
)

// POSIX calls a scientific code makes, from this process.

func TestPOSIXCalls(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})

	t.Run("random and sequential I/O", func(t *testing.T) {
		// A model of the file, updated by random writes of random sizes
		// (small ones and ones spanning strips), then checked by random
		// reads and one sequential read.
		const size = 3 << 20
		model := make([]byte, size)
		f, err := os.OpenFile(m.path("random.dat"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(model); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 200; i++ {
			n := 1 + rng.IntN(200000)
			if i%3 == 0 {
				n = 1 + rng.IntN(100)
			}
			off := rng.IntN(size - n)
			b := randomBytes(t, n)
			if _, err := f.WriteAt(b, int64(off)); err != nil {
				t.Fatal(err)
			}
			copy(model[off:], b)
			if i%10 == 0 {
				roff, rn := rng.IntN(size-1000), 1+rng.IntN(999)
				got := make([]byte, rn)
				if _, err := f.ReadAt(got, int64(roff)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, model[roff:roff+rn]) {
					t.Fatalf("read %d at %d after %d writes differs", rn, roff, i+1)
				}
			}
		}
		if err := f.Sync(); err != nil {
			t.Fatalf("fsync: %v", err)
		}
		if got := readFile(t, m.path("random.dat")); !bytes.Equal(got, model) {
			t.Fatal("sequential read differs from the model")
		}
		if _, err := os.OpenFile(m.path("random.dat"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("O_EXCL on an existing file: %v", err)
		}
	})

	t.Run("append", func(t *testing.T) {
		writeFile(t, m.path("append.log"), []byte("0\n"))
		for _, s := range []string{"1\n", "22\n", "333\n"} {
			appendTo(t, m.path("append.log"), s)
		}
		if got := string(readFile(t, m.path("append.log"))); got != "0\n1\n22\n333\n" {
			t.Fatalf("append.log = %q", got)
		}
	})

	t.Run("truncate up and down", func(t *testing.T) {
		data := randomBytes(t, 1<<20+3)
		writeFile(t, m.path("trunc.dat"), data)
		sh(t, "truncate -s 5000000 "+m.path("trunc.dat"))
		got := readFile(t, m.path("trunc.dat"))
		if len(got) != 5000000 || !bytes.Equal(got[:len(data)], data) || !allZero(got[len(data):]) {
			t.Fatalf("after truncate up: %d bytes", len(got))
		}
		sh(t, "truncate -s 100000 "+m.path("trunc.dat"))
		if got := readFile(t, m.path("trunc.dat")); !bytes.Equal(got, data[:100000]) {
			t.Fatalf("after truncate down: %d bytes", len(got))
		}
		f, err := os.OpenFile(m.path("trunc.dat"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(10); err != nil {
			t.Fatal(err)
		}
		if st, err := f.Stat(); err != nil || st.Size() != 10 {
			t.Fatalf("ftruncate: %v %v", st, err)
		}
		if err := os.Truncate(m.path("trunc.dat"), 0); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(m.path("trunc.dat")); err != nil || st.Size() != 0 {
			t.Fatalf("truncate to 0: %v %v", st, err)
		}
		// O_TRUNC.
		writeFile(t, m.path("trunc.dat"), []byte("short"))
		if got := string(readFile(t, m.path("trunc.dat"))); got != "short" {
			t.Fatalf("after O_TRUNC rewrite: %q", got)
		}
	})

	t.Run("sparse file", func(t *testing.T) {
		f, err := os.Create(m.path("sparse.dat"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		const far = 100 << 20
		if _, err := f.WriteAt([]byte("end"), far); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(m.path("sparse.dat")); err != nil || st.Size() != far+3 {
			t.Fatalf("stat: %v %v", st, err)
		}
		hole := make([]byte, 1<<20)
		hole[0] = 1
		if _, err := f.ReadAt(hole, 50<<20); err != nil || !allZero(hole) {
			t.Fatalf("hole reads %v (%v)", allZero(hole), err)
		}
		end := make([]byte, 10)
		n, err := f.ReadAt(end, far)
		if n != 3 || err != io.EOF || string(end[:3]) != "end" {
			t.Fatalf("tail: %q %v", end[:n], err)
		}
	})

	t.Run("stat size while writing", func(t *testing.T) {
		f, err := os.Create(m.path("growing.dat"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i := 1; i <= 4; i++ {
			if _, err := f.Write(randomBytes(t, 700000)); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(m.path("growing.dat")); err != nil || st.Size() != int64(i*700000) {
				t.Fatalf("stat after %d writes: %v %v", i, st.Size(), err)
			}
		}
	})

	t.Run("directories", func(t *testing.T) {
		if err := os.MkdirAll(m.path("d1", "d2", "d3"), 0o750); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"c", "a", "b"} {
			writeFile(t, m.path("d1", name), []byte(name))
		}
		ents, err := os.ReadDir(m.path("d1"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"a", "b", "c", "d2"}) {
			t.Fatalf("readdir: %v", names)
		}
		if st, err := os.Stat(m.path("d1", "d2")); err != nil || st.Mode().Perm() != 0o750 || !st.IsDir() {
			t.Fatalf("mkdir mode: %v %v", st, err)
		}
		if err := os.Remove(m.path("d1", "d2")); !errors.Is(err, syscall.ENOTEMPTY) {
			t.Fatalf("rmdir of a non-empty directory: %v", err)
		}
		if err := syscall.Rmdir(m.path("d1", "a")); !errors.Is(err, syscall.ENOTDIR) {
			t.Fatalf("rmdir of a file: %v", err)
		}
		if err := syscall.Unlink(m.path("d1", "d2")); !errors.Is(err, syscall.EISDIR) {
			t.Fatalf("unlink of a directory: %v", err)
		}
		if err := os.Remove(m.path("d1", "d2", "d3")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(m.path("d1", "d2")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(m.path("d1"), 0o755); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("mkdir of an existing name: %v", err)
		}
		d, err := os.Open(m.path("d1"))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Sync(); err != nil {
			t.Fatalf("fsync of a directory: %v", err)
		}
	})

	t.Run("rename across directories", func(t *testing.T) {
		for _, d := range []string{"src/sub", "dst"} {
			if err := os.MkdirAll(m.path("mv", d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		data := randomBytes(t, 300000)
		writeFile(t, m.path("mv", "src", "sub", "f"), data)
		sh(t, "mv "+m.path("mv", "src", "sub", "f")+" "+m.path("mv", "dst", "g"))
		if _, err := os.Stat(m.path("mv", "src", "sub", "f")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("old name after mv: %v", err)
		}
		if got := readFile(t, m.path("mv", "dst", "g")); !bytes.Equal(got, data) {
			t.Fatal("moved file differs")
		}
		// A directory with its contents.
		writeFile(t, m.path("mv", "src", "sub", "inner"), []byte("inner"))
		if err := os.Rename(m.path("mv", "src", "sub"), m.path("mv", "dst", "sub2")); err != nil {
			t.Fatal(err)
		}
		if got := string(readFile(t, m.path("mv", "dst", "sub2", "inner"))); got != "inner" {
			t.Fatalf("file in moved directory: %q", got)
		}
		// Over an existing file; a file over a directory; into itself.
		writeFile(t, m.path("mv", "dst", "h"), []byte("h"))
		if err := os.Rename(m.path("mv", "dst", "h"), m.path("mv", "dst", "g")); err != nil {
			t.Fatal(err)
		}
		if got := string(readFile(t, m.path("mv", "dst", "g"))); got != "h" {
			t.Fatalf("rename over a file: %q", got)
		}
		if err := os.Rename(m.path("mv", "dst", "g"), m.path("mv", "dst", "sub2")); err == nil {
			t.Fatal("rename of a file over a directory succeeded")
		}
		if err := os.Rename(m.path("mv", "dst"), m.path("mv", "dst", "sub2", "x")); err == nil {
			t.Fatal("rename of a directory into itself succeeded")
		}
	})

	t.Run("modes, times and owners", func(t *testing.T) {
		writeFile(t, m.path("meta.dat"), []byte("x"))
		if err := os.Chmod(m.path("meta.dat"), 0o640); err != nil {
			t.Fatal(err)
		}
		when := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
		if err := os.Chtimes(m.path("meta.dat"), when, when); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(m.path("meta.dat"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o640 || !st.ModTime().Equal(when) {
			t.Fatalf("mode %v mtime %v", st.Mode(), st.ModTime())
		}
		sys := st.Sys().(*syscall.Stat_t)
		if sys.Uid != uint32(os.Getuid()) || sys.Gid != uint32(os.Getgid()) {
			t.Fatalf("owner %d:%d, want the mounting user", sys.Uid, sys.Gid)
		}
		// chown is accepted and ignored: the store keeps no owners.
		if err := os.Chown(m.path("meta.dat"), 4242, 4242); err != nil {
			t.Fatalf("chown: %v", err)
		}
		// Writing moves mtime forward (recorded at close).
		before := time.Now().Add(-time.Second)
		appendTo(t, m.path("meta.dat"), "more")
		if st, err := os.Stat(m.path("meta.dat")); err != nil || st.ModTime().Before(before) {
			t.Fatalf("mtime after a write: %v %v", st.ModTime(), err)
		}
	})

	t.Run("mknod of a regular file", func(t *testing.T) {
		if err := syscall.Mknod(m.path("node"), syscall.S_IFREG|0o644, 0); err != nil {
			t.Fatalf("mknod of a regular file: %v", err)
		}
	})

	t.Run("statfs sums the I/O servers' file systems", func(t *testing.T) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(m.Dir, &st); err != nil {
			t.Fatal(err)
		}
		total := client.SumSpace(m.c.Statfs(context.Background())).Total
		got := st.Blocks * uint64(st.Bsize)
		if got > total || got < total-total/100 {
			t.Fatalf("statfs: %d bytes, the servers say %d", got, total)
		}
		if st.Files < 2 || st.Namelen != 255 {
			t.Fatalf("statfs: %+v", st)
		}
	})
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
