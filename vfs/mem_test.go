package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, fsys FS, name string) File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	must(t, err)
	return f
}

func write(t *testing.T, f File, p string, off int64) {
	t.Helper()
	if n, err := f.WriteAt([]byte(p), off); n != len(p) || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
}

// readAll returns name's contents in fsys, or "<missing>".
func readAll(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	must(t, err)
	defer f.Close()
	fi, err := f.Stat()
	must(t, err)
	b := make([]byte, fi.Size())
	if n, err := f.ReadAt(b, 0); n != len(b) || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	return string(b)
}

// TestMemCrashFileData: a file's data survives a crash only up to its
// last Sync.
func TestMemCrashFileData(t *testing.T) {
	m := NewMem()
	f := create(t, m, "f")
	must(t, m.SyncDir("."))
	write(t, f, "hello", 0)
	if got := readAll(t, m.CrashClone(), "f"); got != "" {
		t.Fatalf("unsynced data survived: %q", got)
	}
	must(t, f.Sync())
	write(t, f, "HELLO, world", 0)
	must(t, f.Truncate(8))
	if got := readAll(t, m, "f"); got != "HELLO, w" {
		t.Fatalf("live contents %q", got)
	}
	if got := readAll(t, m.CrashClone(), "f"); got != "hello" {
		t.Fatalf("after a crash: %q, want the synced %q", got, "hello")
	}
	// Closing syncs nothing; any handle's Sync syncs the file.
	must(t, f.Close())
	if got := readAll(t, m.CrashClone(), "f"); got != "hello" {
		t.Fatalf("after close and a crash: %q", got)
	}
	g, err := m.OpenFile("f", os.O_RDONLY, 0)
	must(t, err)
	must(t, g.Sync())
	if got := readAll(t, m.CrashClone(), "f"); got != "HELLO, w" {
		t.Fatalf("after another handle's Sync and a crash: %q", got)
	}
}

// TestMemCrashDirEntries: creates and removes survive a crash only once
// their directory was synced; a clone is durable as a whole.
func TestMemCrashDirEntries(t *testing.T) {
	m := NewMem()
	must(t, m.Mkdir("d", 0o700))
	f := create(t, m, "d/f")
	write(t, f, "data", 0)
	must(t, f.Sync())
	c := m.CrashClone()
	if _, err := c.ReadDir("d"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced mkdir survived: %v", err)
	}
	must(t, m.SyncDir("."))
	if got := readAll(t, m.CrashClone(), "d/f"); got != "<missing>" {
		t.Fatalf("file in an unsynced directory survived: %q", got)
	}
	d, err := m.OpenRoot("d")
	must(t, err)
	must(t, d.SyncDir("."))
	if got := readAll(t, m.CrashClone(), "d/f"); got != "data" {
		t.Fatalf("synced file: %q", got)
	}
	// An unsynced remove is undone by a crash, a synced one is not.
	must(t, d.Remove("f"))
	if got := readAll(t, m.CrashClone(), "d/f"); got != "data" {
		t.Fatalf("file removed without a directory sync: %q after a crash", got)
	}
	must(t, m.SyncDir("d"))
	if got := readAll(t, m.CrashClone(), "d/f"); got != "<missing>" {
		t.Fatalf("removed and synced file came back: %q", got)
	}
	// The removed file's open handle still works on its data.
	write(t, f, "!", 4)
	if b := make([]byte, 5); func() bool { n, _ := f.ReadAt(b, 0); return n != 5 || string(b) != "data!" }() {
		t.Fatal("open handle of a removed file lost its data")
	}
	// A clone of a clone is the same: everything in a clone is durable.
	f2 := create(t, m, "g")
	write(t, f2, "gg", 0)
	must(t, m.SyncFS())
	c = m.CrashClone()
	if got := readAll(t, c.CrashClone(), "g"); got != "gg" {
		t.Fatalf("SyncFS then two crashes: %q", got)
	}
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// TestMemCrashRename: a rename is durable once its directory is synced,
// and a crash before that leaves the old name with the old file.
func TestMemCrashRename(t *testing.T) {
	m := NewMem()
	old := create(t, m, "log")
	write(t, old, "old", 0)
	must(t, old.Sync())
	tmp := create(t, m, "log.tmp")
	write(t, tmp, "new", 0)
	must(t, tmp.Sync())
	must(t, m.SyncDir("."))
	must(t, m.Rename("log.tmp", "log"))
	if got := readAll(t, m, "log"); got != "new" {
		t.Fatalf("after rename, log holds %q", got)
	}
	if got := readAll(t, m, "log.tmp"); got != "<missing>" {
		t.Fatalf("after rename, log.tmp holds %q", got)
	}
	if got := readAll(t, m.CrashClone(), "log"); got != "old" {
		t.Fatalf("unsynced rename survived a crash: log holds %q", got)
	}
	must(t, m.SyncDir("."))
	c := m.CrashClone()
	if got := readAll(t, c, "log"); got != "new" {
		t.Fatalf("synced rename: log holds %q after a crash", got)
	}
	if got := readAll(t, c, "log.tmp"); got != "<missing>" {
		t.Fatalf("synced rename: log.tmp holds %q after a crash", got)
	}
	if err := m.Rename("missing", "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rename of a missing file: %v", err)
	}
}

func TestMemSparse(t *testing.T) {
	m := NewMem()
	f := create(t, m, "f")
	write(t, f, "tail", 1<<40)
	fi, err := f.Stat()
	must(t, err)
	if fi.Size() != 1<<40+4 {
		t.Fatalf("size %d", fi.Size())
	}
	b := make([]byte, 8)
	if n, err := f.ReadAt(b, 1<<40-4); n != 8 || err != nil || string(b) != "\x00\x00\x00\x00tail" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, b)
	}
	// Shrinking into a page and growing again exposes zeros.
	write(t, f, "abcdefgh", 4090)
	must(t, f.Truncate(4093))
	must(t, f.Truncate(5000))
	b = make([]byte, 8)
	if n, err := f.ReadAt(b, 4090); n != 8 || err != nil || string(b) != "abc\x00\x00\x00\x00\x00" {
		t.Fatalf("after shrink and grow: %d, %v, %q", n, err, b)
	}
	if n, err := f.ReadAt(b, 4996); n != 4 || err != io.EOF {
		t.Fatalf("read across EOF = %d, %v", n, err)
	}
}

func TestMemLock(t *testing.T) {
	m := NewMem()
	l, err := m.Lock("LOCK")
	must(t, err)
	if _, err := m.Lock("LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v", err)
	}
	if _, err := m.CrashClone().Lock("LOCK"); err != nil {
		t.Fatalf("Lock in a crash clone: %v", err)
	}
	must(t, l.Close())
	l, err = m.Lock("LOCK")
	must(t, err)
	must(t, l.Close())
}

// TestMemErrors: the errors are the ones the OS gives.
func TestMemErrors(t *testing.T) {
	m := NewMem()
	f := create(t, m, "f")
	must(t, m.Mkdir("d", 0o700))
	ro, err := m.OpenFile("f", os.O_RDONLY, 0)
	must(t, err)
	_, werr := ro.WriteAt([]byte("x"), 0)
	must(t, f.Close())
	_, cerr := f.ReadAt(make([]byte, 1), 0)
	_, oerr := m.OpenFile("f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	_, nerr := m.OpenFile("nope", os.O_RDWR, 0)
	_, derr := m.OpenFile("d", os.O_RDWR, 0)
	_, tderr := m.OpenFile("f/x", os.O_RDWR|os.O_CREATE, 0o600)
	_, eerr := m.OpenFile("../x", os.O_RDWR|os.O_CREATE, 0o600)
	_, rderr := m.OpenRoot("f")
	must(t, m.Mkdir("d/e", 0o700))
	for _, c := range []struct {
		err  error
		want error
	}{
		{werr, syscall.EBADF},
		{cerr, fs.ErrClosed},
		{oerr, fs.ErrExist},
		{nerr, fs.ErrNotExist},
		{derr, syscall.EISDIR},
		{tderr, syscall.ENOTDIR},
		{eerr, syscall.EINVAL},
		{rderr, syscall.ENOTDIR},
		{m.Mkdir("d", 0o700), fs.ErrExist},
		{m.Remove("d"), syscall.ENOTEMPTY},
		{m.Remove("nope"), fs.ErrNotExist},
		{f.Truncate(-1), fs.ErrClosed},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("error %v, want %v", c.err, c.want)
		}
	}
	du, err := m.DiskUsage()
	must(t, err)
	if du.Total != MemCapacity || du.Free > du.Total {
		t.Fatalf("DiskUsage %+v", du)
	}
}

// TestMemLikeOS runs the same random operations on the OS and on a MemFS
// and requires the same results: a MemFS stands in for the disk only if it
// behaves like it.
func TestMemLikeOS(t *testing.T) {
	for seed := range uint64(4) {
		dir := t.TempDir()
		osfs, err := OS(dir)
		must(t, err)
		defer osfs.Close()
		mem := NewMem()
		r := newRand(seed)
		names := []string{"a", "b", "d/a", "d/b", "d"}
		type open struct{ o, m File }
		var files []open
		succeeded := 0 // data operations that did something on both
		errno := func(err error) string {
			if err == nil {
				return "ok"
			}
			var e syscall.Errno
			if errors.As(err, &e) {
				return e.Error()
			}
			if errors.Is(err, io.EOF) {
				return "EOF"
			}
			return "other: " + err.Error()
		}
		for op := range 600 {
			name := names[r.IntN(len(names))]
			var ro, rm string
			switch k := r.IntN(10); {
			case k < 2:
				flag := []int{os.O_RDWR, os.O_RDWR | os.O_CREATE, os.O_RDWR | os.O_CREATE | os.O_EXCL, os.O_RDONLY, os.O_RDWR | os.O_TRUNC}[r.IntN(5)]
				fo, eo := osfs.OpenFile(name, flag, 0o600)
				fm, em := mem.OpenFile(name, flag, 0o600)
				ro, rm = errno(eo), errno(em)
				if eo == nil && em == nil {
					files = append(files, open{fo, fm})
				} else {
					if eo == nil {
						fo.Close()
					}
					if em == nil {
						fm.Close()
					}
				}
			case k < 3:
				ro, rm = errno(osfs.Mkdir(name, 0o700)), errno(mem.Mkdir(name, 0o700))
			case k < 4 && r.IntN(3) == 0:
				// Rename of files (MemFS does not rename directories).
				to := names[r.IntN(len(names))]
				if isDir(filepath.Join(dir, name)) || isDir(filepath.Join(dir, to)) {
					continue
				}
				ro, rm = errno(osfs.Rename(name, to)), errno(mem.Rename(name, to))
			case k < 4:
				ro, rm = errno(osfs.Remove(name)), errno(mem.Remove(name))
			case k < 5:
				eo, em := osfs.ReadDir(name)
				mo, mm := mem.ReadDir(name)
				ro, rm = errno(em), errno(mm)
				ro += sortedNames(eo)
				rm += sortedNames(mo)
			case len(files) == 0:
				continue
			default:
				f := files[r.IntN(len(files))]
				off := int64(r.IntN(20000))
				switch r.IntN(4) {
				case 0:
					p := make([]byte, r.IntN(10000))
					for i := range p {
						p[i] = byte(r.Uint32())
					}
					no, eo := f.o.WriteAt(p, off)
					nm, em := f.m.WriteAt(p, off)
					ro, rm = errno(eo)+itoa(no), errno(em)+itoa(nm)
				case 1:
					bo, bm := make([]byte, r.IntN(10000)), make([]byte, 0)
					bm = append(bm, make([]byte, len(bo))...)
					no, eo := f.o.ReadAt(bo, off)
					nm, em := f.m.ReadAt(bm, off)
					ro, rm = errno(eo)+itoa(no), errno(em)+itoa(nm)
					if !bytes.Equal(bo[:no], bm[:nm]) {
						t.Fatalf("seed %d op %d: read bytes differ", seed, op)
					}
				case 2:
					ro, rm = errno(f.o.Truncate(off)), errno(f.m.Truncate(off))
				case 3:
					io, eo := f.o.Stat()
					im, em := f.m.Stat()
					ro, rm = errno(eo), errno(em)
					if eo == nil && em == nil {
						ro += io.Mode().Type().String()
						rm += im.Mode().Type().String()
						if !io.IsDir() {
							ro += itoa(int(io.Size()))
							rm += itoa(int(im.Size()))
						}
					}
				}
			}
			if ro != rm {
				t.Fatalf("seed %d op %d on %s: OS %q, MemFS %q", seed, op, name, ro, rm)
			}
			if strings.HasPrefix(ro, "ok ") && ro != "ok 0" {
				succeeded++
			}
		}
		for _, f := range files {
			f.o.Close()
			f.m.Close()
		}
		if succeeded < 50 {
			t.Fatalf("seed %d: only %d reads and writes moved data; the test is not testing", seed, succeeded)
		}
		t.Logf("seed %d: %d reads and writes moved data", seed, succeeded)
	}
}
