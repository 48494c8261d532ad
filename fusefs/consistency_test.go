package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/server/data"
)

// Two mounts of one cluster, as on two client nodes.

func TestCloseToOpenBetweenTwoMounts(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})

	// What A closed, B sees at open.
	v1 := randomBytes(t, 3<<20+5)
	writeFile(t, a.path("f"), v1)
	if got := readFile(t, b.path("f")); !bytes.Equal(got, v1) {
		t.Fatalf("B read %d bytes after A wrote %d", len(got), len(v1))
	}
	// Same size, new bytes: B's cached pages must not survive its next open.
	v2 := randomBytes(t, len(v1))
	writeFile(t, a.path("f"), v2)
	if got := readFile(t, b.path("f")); !bytes.Equal(got, v2) {
		t.Fatal("B read stale data after A rewrote the file and closed it")
	}

	// Sizes are right while a file is being written: stat asks the servers.
	fa, err := os.OpenFile(a.path("growing"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	for i := 1; i <= 3; i++ {
		if _, err := fa.Write(randomBytes(t, 1<<20)); err != nil {
			t.Fatal(err)
		}
		if err := fa.Sync(); err != nil {
			t.Fatal(err)
		}
		for name, m := range map[string]*mounted{"writer": a, "other": b} {
			st, err := os.Stat(m.path("growing"))
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != int64(i)<<20 {
				t.Errorf("after %d MiB written, stat on the %s mount says %d", i, name, st.Size())
			}
		}
	}
	// The writing mount sees its own writes at once, fsync or not.
	if _, err := fa.Write(randomBytes(t, 12345)); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(a.path("growing")); err != nil || st.Size() != 3<<20+12345 {
		t.Errorf("stat on the writer while writing: %v, %v", st, err)
	}

	// Appends from both mounts, one after the other.
	writeFile(t, a.path("log"), []byte("a1\n"))
	appendTo(t, b.path("log"), "b1\n")
	appendTo(t, a.path("log"), "a2\n")
	if got := string(readFile(t, b.path("log"))); got != "a1\nb1\na2\n" {
		t.Errorf("log = %q", got)
	}

	// A file replaced by rename (write a temporary, rename over) is the
	// new one at B's next open, even within B's name cache time.
	writeFile(t, a.path("result"), []byte("old"))
	if got := string(readFile(t, b.path("result"))); got != "old" {
		t.Fatalf("result = %q", got)
	}
	writeFile(t, a.path("result.tmp"), []byte("new"))
	if err := os.Rename(a.path("result.tmp"), a.path("result")); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, b.path("result"))); got != "new" {
		t.Errorf("after replace by rename, B reads %q", got)
	}
	// Removed through A: gone for B too.
	if err := os.Remove(a.path("result")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(b.path("result")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("B opens a file A removed: %v", err)
	}
	// A new directory made through A is listed by B at once (no negative
	// entries are cached).
	if err := os.Mkdir(a.path("newdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(b.path("newdir")); err != nil || !st.IsDir() {
		t.Errorf("B stat newdir: %v", err)
	}
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestUnlinkWhileOpen(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	base := steadyDatafiles(t, p)
	f, err := os.OpenFile(m.path("victim"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := randomBytes(t, 2<<20)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.path("victim")); err != nil {
		t.Fatal(err)
	}
	// The name is gone, for this mount and for the store.
	if _, err := os.Stat(m.path("victim")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat after unlink: %v", err)
	}
	if _, err := m.c.Lookup(context.Background(), "/victim"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lookup in the store after unlink: %v", err)
	}
	// The open descriptor still reads, writes and stats.
	more := randomBytes(t, 1<<20)
	if _, err := f.Write(more); err != nil {
		t.Fatalf("write after unlink: %v", err)
	}
	got := make([]byte, len(data)+len(more))
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatalf("read after unlink: %v", err)
	}
	if !bytes.Equal(got, append(data, more...)) {
		t.Fatal("data read after unlink differs")
	}
	if st, err := f.Stat(); err != nil || st.Size() != int64(len(got)) {
		t.Fatalf("fstat after unlink: %v, %v", st, err)
	}
	if n := datafiles(t, p); n != base+4 {
		t.Fatalf("%d datafiles while open, want %d", n, base+4)
	}
	// A new file may take the name meanwhile.
	writeFile(t, m.path("victim"), []byte("new"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The last close removes the datafiles (the release reaches the mount
	// just after close returns); the new file's four, made with it, stay.
	eventually(t, "datafiles removed after the last close", func() error {
		if n := datafiles(t, p); n != base+4 {
			return fmt.Errorf("%d datafiles, want %d", n, base+4)
		}
		return nil
	})
	if got := string(readFile(t, m.path("victim"))); got != "new" {
		t.Fatalf("the new victim reads %q", got)
	}

	// Renaming over an open file: it too keeps its data until closed.
	writeFile(t, m.path("old"), []byte("old data"))
	g, err := os.Open(m.path("old"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	writeFile(t, m.path("replacement"), []byte("replacement"))
	if err := os.Rename(m.path("replacement"), m.path("old")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := g.ReadAt(buf, 0)
	if string(buf[:n]) != "old data" {
		t.Fatalf("open file replaced by rename reads %q (%v)", buf[:n], err)
	}
	g.Close()
	if got := string(readFile(t, m.path("old"))); got != "replacement" {
		t.Fatalf("after rename over: %q", got)
	}
}

func TestServerDownGivesEIO(t *testing.T) {
	need(t, "cat", "dd")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	data := randomBytes(t, 4<<20)
	writeFile(t, m.path("striped"), data)
	if err := p.Kill("data2"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := shErr("cat " + m.path("striped") + " > /dev/null")
	if err == nil || !strings.Contains(out, "Input/output error") {
		t.Fatalf("read with data2 down: %v\n%s", err, out)
	}
	if _, err := os.Stat(m.path("striped")); !errors.Is(err, syscall.EIO) {
		t.Errorf("stat with data2 down: %v", err)
	}
	out, err = shErr(fmt.Sprintf("dd if=/dev/zero of=%s bs=1M count=4 status=none", m.path("new")))
	if err == nil {
		t.Errorf("write with data2 down succeeded:\n%s", out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("failing took %v", d)
	}
	// The namespace is still served.
	if _, err := os.ReadDir(m.Dir); err != nil {
		t.Errorf("readdir with data2 down: %v", err)
	}
	if logs := m.logs.String(); !strings.Contains(logs, "data2") || !strings.Contains(logs, "level=ERROR") {
		t.Errorf("no error log naming data2:\n%s", logs)
	}

	// With the metadata server gone too, lookups fail fast, and the mount
	// still unmounts cleanly (t.Cleanup checks it).
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := os.Stat(m.path("nothing-here")); !errors.Is(err, syscall.EIO) {
		t.Errorf("lookup with the metadata server down: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %v", d)
	}
	if err := m.Unmount(); err != nil {
		t.Fatalf("unmount with the servers down: %v", err)
	}
}

func TestReaderSeesWriterWithinOneMount(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	old := randomBytes(t, 256<<10)
	writeFile(t, m.path("shared"), old)
	// A write-only descriptor bypasses the page cache. Opened first, so
	// that the reader's open does not drop what it caches later.
	w, err := os.OpenFile(m.path("shared"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := os.Open(m.path("shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, len(old))
	if _, err := r.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, old) {
		t.Fatalf("first read: %v", err)
	}
	// The reader's cached pages of what the writer writes are dropped once
	// the data is on the servers (at the latest when the writer closes).
	fresh := randomBytes(t, 100000)
	if _, err := w.WriteAt(fresh, 5000); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, old[:5000]...), fresh...), old[105000:]...)
	if _, err := r.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, want) {
		t.Fatalf("the reader sees stale data after the writer closed (%v)", err)
	}
	// Growing the file: the reader reads past its old end.
	appendTo(t, m.path("shared"), "tail")
	got := make([]byte, 100)
	n, _ := r.ReadAt(got, int64(len(old)))
	if string(got[:n]) != "tail" {
		t.Fatalf("reader sees %q past the old end", got[:n])
	}
}

func TestHungServerTimesOut(t *testing.T) {
	need(t, "cat")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{OpTimeout: 2 * time.Second})
	writeFile(t, m.path("striped"), randomBytes(t, 1<<20))
	// A server that accepts nothing and answers nothing (stopped, not dead).
	pid := p.PID("data1")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	start := time.Now()
	out, err := shErr("cat " + m.path("striped") + " > /dev/null")
	if err == nil || !strings.Contains(out, "Input/output error") {
		t.Fatalf("read with data1 stopped: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %v with a 2 s operation timeout", d)
	}
	if logs := m.logs.String(); !strings.Contains(logs, "data1") {
		t.Errorf("no log naming data1:\n%s", logs)
	}
}

// TestShrunkElsewhereReadsToTheNewEnd: a file another mount truncated
// reads to its new end here, not to the end the kernel held from before.
// The lease's invalidation drops the attributes but leaves the kernel's
// size, which a read within it does not ask for again; the short reads
// of the kernel's read-ahead then raced to set the size, and the reader
// got zeros past the end (16384 or 72000 bytes of a file of 15182).
// With AUTO_INVAL_DATA the kernel asks for the attributes at the first
// read after they were dropped. TestAgainstALocalDisk found it; these are
// the steps it was shrunk to (a file made in a directory the first mount
// holds, reached by the second through a symbolic link, and read with
// O_NONBLOCK, as a reader that may meet FIFOs opens: its read-ahead is
// what raced).
func TestShrunkElsewhereReadsToTheNewEnd(t *testing.T) {
	_, a, b := twoMounts(t)
	data := randomBytes(t, 127787)
	for round := range 3 {
		dir := fmt.Sprint("d", round)
		if err := os.Mkdir(a.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("f", a.path(dir, "link")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, a.path(dir, "f"), data)
		// Through the link: ENOTDIR, after the lookups that give the
		// second mount's kernel the file's size.
		if err := syscall.Mkfifo(b.path(dir, "link", "fifo"), 0o644); !errors.Is(err, syscall.ENOTDIR) {
			t.Fatalf("mkfifo under a link to a file: %v, want ENOTDIR", err)
		}
		if err := os.Truncate(a.path(dir, "link"), 15182); err != nil {
			t.Fatal(err)
		}
		got, err := readNonblock(b.path(dir, "link"))
		if err != nil || !bytes.Equal(got, data[:15182]) {
			t.Fatalf("round %d: read through the other mount after the truncate to 15182: %d bytes (%v)", round, len(got), err)
		}
	}
}

// TestReadOfAFileRemovedElsewhereIsStale: a file open through one mount
// and removed through another fails its reads with ESTALE once its
// datafiles are gone, as docs/mount.md ("Unlink of an open file") says,
// rather than ending early as a shorter file would (a reader such as cp
// or tar would exit 0 with a short copy). The I/O servers answer ESTALE
// for a removed datafile now (client's TestRemovedFileReadIsStale); the
// mount answered it already, from the metadata server, when the kernel
// asked for the attributes before reading.
func TestReadOfAFileRemovedElsewhereIsStale(t *testing.T) {
	p, a, b := twoMounts(t)
	want := randomBytes(t, 3<<20)
	writeFile(t, a.path("f"), want)
	f, err := os.Open(b.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 4096)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, want[:4096]) {
		t.Fatalf("the first read through the other mount: %v", err)
	}
	c := dial(t, p)
	st, err := c.Stat(context.Background(), "/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a.path("f")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed file's datafiles gone", func() error {
		for _, srv := range st.Attr.Servers {
			dfs, err := c.ListDatafiles(context.Background(), int(srv))
			if err != nil {
				return err
			}
			if slices.ContainsFunc(dfs, func(d data.DatafileInfo) bool { return d.ID == uint64(st.Attr.ID) }) {
				return fmt.Errorf("data%d still holds datafile %d", srv, st.Attr.ID)
			}
		}
		return nil
	})
	// Past what the kernel read ahead: the read reaches the servers.
	n, err := f.ReadAt(make([]byte, 1<<20), 2<<20)
	if !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("a read through the other mount of the removed file: %d bytes, %v; want ESTALE", n, err)
	}
}
