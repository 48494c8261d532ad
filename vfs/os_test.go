package vfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOSConfined: nothing outside the directory is reachable, through
// names or planted symlinks.
func TestOSConfined(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "in"), filepath.Join(base, "out")
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.Mkdir(outside, 0o700))
	must(t, os.WriteFile(filepath.Join(outside, "victim"), []byte("precious"), 0o600))
	must(t, os.Symlink(outside, filepath.Join(dir, "link")))
	must(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, "flink")))
	fsys, err := OS(dir)
	must(t, err)
	defer fsys.Close()
	for _, name := range []string{"../out/victim", "link/victim", "flink", "link/new"} {
		if f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
			f.Close()
			t.Fatalf("opened %s outside the directory", name)
		}
	}
	if _, err := fsys.OpenRoot("link"); err == nil {
		t.Fatal("OpenRoot followed a symlink out")
	}
	if err := fsys.Remove("link/victim"); err == nil {
		t.Fatal("removed a file outside the directory")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "precious" {
		t.Fatalf("victim changed: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("files appeared outside: %v", ents)
	}
}

// TestOSFile exercises the OS file's extras and the FS's syncs.
func TestOSFile(t *testing.T) {
	fsys, err := OS(t.TempDir())
	must(t, err)
	defer fsys.Close()
	must(t, fsys.Mkdir("d", 0o700))
	sub, err := fsys.OpenRoot("d")
	must(t, err)
	defer sub.Close()
	f := create(t, sub, "f")
	defer f.Close()
	if _, ok := f.(WriterAtv); !ok {
		t.Fatal("the OS file has no pwritev")
	}
	// More buffers than one pwritev takes, of uneven sizes.
	var bufs [][]byte
	var want []byte
	for i := range 2500 {
		b := bytes.Repeat([]byte{byte(i)}, i%7)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	n, err := WriteAtv(f, bufs, 3)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("WriteAtv = %d, %v", n, err)
	}
	StartWriteback(f, 0, n)
	must(t, f.Sync())
	must(t, sub.SyncDir("."))
	must(t, fsys.SyncFS())
	if got := readAll(t, fsys, "d/f"); got != string(make([]byte, 3))+string(want) {
		t.Fatal("contents differ")
	}
	du, err := fsys.DiskUsage()
	if err != nil || du.Total == 0 || du.Free > du.Total || du.Avail > du.Total {
		t.Fatalf("DiskUsage = %+v, %v", du, err)
	}
	ents, err := fsys.ReadDir(".")
	if err != nil || len(ents) != 1 || ents[0].Name() != "d" || !ents[0].IsDir() {
		t.Fatalf("ReadDir = %v, %v", ents, err)
	}
}

func TestOSLock(t *testing.T) {
	dir := t.TempDir()
	a, err := OS(dir)
	must(t, err)
	defer a.Close()
	b, err := OS(dir)
	must(t, err)
	defer b.Close()
	l, err := a.Lock("LOCK")
	must(t, err)
	if _, err := b.Lock("LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v", err)
	}
	must(t, l.Close())
	l, err = b.Lock("LOCK")
	must(t, err)
	must(t, l.Close())
}

// TestWriteAtvFallback: a File without pwritev gets one WriteAt per
// buffer, and a failure reports what was written.
func TestWriteAtvFallback(t *testing.T) {
	m := NewMem()
	f := create(t, m, "f")
	n, err := WriteAtv(f, [][]byte{[]byte("ab"), nil, []byte("cde")}, 1)
	if n != 5 || err != nil || readAll(t, m, "f") != "\x00abcde" {
		t.Fatalf("WriteAtv = %d, %v", n, err)
	}
	StartWriteback(f, 0, 5) // no Writebacker: nothing happens
	ro, err := m.OpenFile("f", os.O_RDONLY, 0)
	must(t, err)
	if n, err := WriteAtv(ro, [][]byte{[]byte("x")}, 0); n != 0 || err == nil {
		t.Fatalf("WriteAtv on a read-only file = %d, %v", n, err)
	}
}
