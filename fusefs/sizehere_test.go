package fusefs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
)

// countingWithDir starts a cluster, mounts it counting the mount's
// requests to the servers, and, once the mount holds its lease and the
// pools are filled, makes directory d through it (so delegated to it).
func countingWithDir(t *testing.T) (*cluster.Processes, *mounted, *callCounter) {
	t.Helper()
	p := spawn(t)
	calls := &callCounter{}
	m := mountCounting(t, p, calls)
	waitLease(t, m)
	waitPools(t, p)
	if err := os.Mkdir(m.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p, m, calls
}

// waitPools waits until the precreate pools hold IDs, so that the
// reservations a mount makes with a directory and after it get what they
// ask for (a reservation takes what the pools hold).
func waitPools(t *testing.T, p *cluster.Processes) {
	t.Helper()
	c := dial(t, p)
	eventually(t, "precreate pools filled", func() error {
		if n, err := c.PooledDatafiles(context.Background()); err != nil || n < 4*64 {
			return fmt.Errorf("%d pooled datafiles (%v)", n, err)
		}
		return nil
	})
}

// Sizes kept by the mount (known.go, wroteHere): a file this mount made
// in a directory it holds, written from its start without a gap, has its
// size and blocks answered by the mount after each write, without waiting
// for the data to reach the I/O servers and asking each its datafile's
// size; and they are what the servers then report.
func TestSizeKeptForAFileWrittenHere(t *testing.T) {
	p, m, calls := countingWithDir(t)
	f, err := os.OpenFile(m.path("d", "f"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sizes := calls.sizeRequests
	before := sizes()
	// Writes of tar's size, then across the first strip (64 KiB) onto
	// the second datafile, and an overwrite; after each an fchmod (as
	// tar makes) and an fstat.
	var want []byte
	for _, w := range []struct {
		off int64
		n   int
	}{{0, 100}, {100, 5000}, {5100, 70000}, {10, 20}} {
		b := bytes.Repeat([]byte{byte(w.n)}, w.n)
		if _, err := f.WriteAt(b, w.off); err != nil {
			t.Fatal(err)
		}
		if end := int(w.off) + w.n; end > len(want) {
			want = append(want, make([]byte, end-len(want))...)
		}
		copy(want[w.off:], b)
		if err := f.Chmod(0o600); err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil || st.Size() != int64(len(want)) {
			t.Fatalf("fstat after a write ending at %d: %v, size %d; want %d", int(w.off)+w.n, err, st.Size(), len(want))
		}
	}
	if n := sizes() - before; n != 0 {
		t.Errorf("writes, fchmods and fstats of a file made here sent %d size requests to the I/O servers, want 0", n)
	}
	var mine syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &mine); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// What the servers say (a native client's stat recalls the
	// directory: the mount's queue is applied first).
	fi, err := dial(t, p).Stat(context.Background(), "/d/f")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size != mine.Size || fi.Allocated != mine.Blocks*512 {
		t.Errorf("the mount said size %d, %d blocks; the servers say size %d, %d bytes allocated (%d blocks)",
			mine.Size, mine.Blocks, fi.Size, fi.Allocated, fi.Allocated/512)
	}
	if got, err := os.ReadFile(m.path("d", "f")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("read back: %v, %d bytes (equal %v)", err, len(got), bytes.Equal(got, want))
	}
}

// A write that leaves a hole, and a file the mount did not make in a
// directory it holds, are asked of the servers as before.
func TestSizeAskedWhereTheMountCannotTell(t *testing.T) {
	_, m, calls := countingWithDir(t)
	sizes := calls.sizeRequests
	for _, c := range []struct {
		name string
		path string
		off  int64
	}{
		{"a hole in a file made here", m.path("d", "sparse"), 1 << 20},
		{"a file in the root, which is never delegated", m.path("top"), 0},
	} {
		f, err := os.OpenFile(c.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		before := sizes()
		if _, err := f.WriteAt([]byte("x"), c.off); err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		f.Close()
		if err != nil || st.Size() != c.off+1 {
			t.Fatalf("%s: fstat after the write: %v, size %d; want %d", c.name, err, st.Size(), c.off+1)
		}
		if sizes() == before {
			t.Errorf("%s: fstat after a write sent no size request to the I/O servers", c.name)
		}
	}
}

// The sizes of files this mount made and closed in a directory it holds
// answer its listings (ls -l, rm -r) without asking the I/O servers, and
// another client's request for the directory ends that: its writes then
// show here.
func TestListingsUseSizesKeptHere(t *testing.T) {
	p := spawn(t)
	var calls callCounter
	a := mountCounting(t, p, &calls)
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	files, _ := makeLikeTar(t, a.path("d"), 20)
	big := a.path("d", "big")
	for _, n := range []int{5000, 70000} { // two appends, across the first strip
		f, err := os.OpenFile(big, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte("b"), n)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	waitReleased(t, a)
	listed := func() map[string]syscall.Stat_t {
		t.Helper()
		ents, err := os.ReadDir(a.path("d"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]syscall.Stat_t{}
		for _, e := range ents {
			var st syscall.Stat_t
			if err := syscall.Lstat(a.path("d", e.Name()), &st); err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = st
		}
		return out
	}
	sizes := calls.sizeRequests
	before := sizes()
	got := listed()
	if len(got) != len(files)+1 || got["f000"].Size != 4 || got["big"].Size != 75000 {
		t.Fatalf("listing: %d entries, f000 %d bytes, big %d bytes; want %d, 4, 75000", len(got), got["f000"].Size, got["big"].Size, len(files)+1)
	}
	if n := sizes() - before; n != 0 {
		t.Errorf("ls -l of a directory the mount made and holds sent %d size requests to the I/O servers, want 0", n)
	}
	// The blocks are what the servers report.
	c := dial(t, p)
	for _, name := range []string{"f000", "big"} {
		fi, err := c.Stat(context.Background(), "/d/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if st := got[name]; fi.Size != st.Size || fi.Allocated != st.Blocks*512 {
			t.Errorf("%s: the mount listed size %d, %d blocks; the servers say %d, %d bytes allocated", name, st.Size, st.Blocks, fi.Size, fi.Allocated)
		}
	}
	// The native client's stats recalled d: another mount's append shows.
	f, err := os.OpenFile(b.path("d", "f001"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := listed(); got["f001"].Size != 8 {
		t.Errorf("after another mount's append, the mount that made the file lists %d bytes, want 8", got["f001"].Size)
	}
}
