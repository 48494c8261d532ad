package fusefs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pario/pario/fusefs"
)

// What a program does with a file open read-write must work as well when
// its descriptor is direct (the default, fusefs.DirectWriters) as when it
// is cached.
func TestReadWriteDescriptors(t *testing.T) {
	need(t, "python3")
	p := spawn(t)
	for _, policy := range []fusefs.DirectIO{fusefs.DirectWriters, fusefs.DirectNone} {
		t.Run("mmap/"+policy.String(), func(t *testing.T) {
			m := mount(t, p, fusefs.Options{DirectIO: policy})
			if !m.DirectMmap() {
				t.Log("the kernel did not grant FUSE_DIRECT_IO_ALLOW_MMAP: read-write descriptors are always cached")
			}
			// MAP_SHARED stores and msync, MAP_PRIVATE, and writes through
			// descriptors seen in the mapping, in a process of its own (see
			// the script).
			dir := m.path(policy.String())
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			sh(t, "python3 testdata/maptest.py "+dir)
			want := readFile(t, filepath.Join(dir, "shared.want"))
			if got := readFile(t, filepath.Join(dir, "shared.map")); !bytes.Equal(got, want) {
				t.Fatal("the file read through the mount differs from what the mapping and descriptors wrote")
			}
			ctx := context.Background()
			cf, err := m.c.Open(ctx, "/"+policy.String()+"/shared.map")
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(want))
			if n, err := cf.ReadAtContext(ctx, got, 0); err != nil && err != io.EOF || n != len(want) || !bytes.Equal(got, want) {
				t.Fatalf("the pario client reads other data than the mapping and descriptors wrote (%d bytes, %v)", n, err)
			}
		})
	}

	t.Run("direct writer, cached reader", func(t *testing.T) {
		md := mount(t, p, fusefs.Options{})
		w, err := os.OpenFile(md.path("rw"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		old := randomBytes(t, 256<<10)
		if _, err := w.WriteAt(old, 0); err != nil {
			t.Fatal(err)
		}
		r, err := os.Open(md.path("rw"))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		buf := make([]byte, len(old))
		if _, err := r.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, old) {
			t.Fatalf("first read: %v", err)
		}
		// No close or fsync: within one mount the reader's pages of what
		// the writer wrote go once the data is on the servers.
		fresh := randomBytes(t, 100000)
		if _, err := w.WriteAt(fresh, 5000); err != nil {
			t.Fatal(err)
		}
		want := append(append(append([]byte{}, old[:5000]...), fresh...), old[105000:]...)
		eventually(t, "the cached reader sees the direct writer's data", func() error {
			if _, err := r.ReadAt(buf, 0); err != nil {
				return err
			}
			if !bytes.Equal(buf, want) {
				return errStale
			}
			return nil
		})
	})
}

var errStale = staleError{}

type staleError struct{}

func (staleError) Error() string { return "stale data" }

// writeSpans records the time span of every FUSE write the mount answers.
type writeSpans struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (w *writeSpans) FuseOp(op string, d time.Duration, _ unix.Errno) {
	if op != "write" {
		return
	}
	end := time.Now()
	w.mu.Lock()
	w.spans = append(w.spans, [2]time.Time{end.Add(-d), end})
	w.mu.Unlock()
}

// overlapping counts the writes that began while another was answered.
func (w *writeSpans) overlapping() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for i, a := range w.spans {
		for j, b := range w.spans {
			if i != j && b[0].Before(a[0]) && a[0].Before(b[1]) {
				n++
				break
			}
		}
	}
	return n
}

// Writers of disjoint ranges of one file, each through its own O_RDWR
// descriptor as IOR's ranks (O_CREAT|O_RDWR), write in parallel, and the
// file holds what each wrote.
func TestReadWriteParallelWriters(t *testing.T) {
	for _, tt := range []struct {
		policy   fusefs.DirectIO
		parallel bool
	}{
		{fusefs.DirectWriters, true},
		{fusefs.DirectWriteOnly, false},
	} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			p := spawn(t)
			spans := &writeSpans{}
			// No write-behind: each write is answered once the servers have
			// it, so that writes the kernel lets through together overlap.
			m := mount(t, p, fusefs.Options{DirectIO: tt.policy, WriteBehind: -1, Observer: spans})
			const ranks, block, xfer = 4, 8 << 20, 1 << 20
			want := make([]byte, ranks*block)
			for i := range ranks {
				copy(want[i*block:], randomBytes(t, block))
			}
			var wg sync.WaitGroup
			errs := make(chan error, ranks)
			for i := range ranks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f, err := os.OpenFile(m.path("ior.shared"), os.O_RDWR|os.O_CREATE, 0o644)
					if err != nil {
						errs <- err
						return
					}
					for off := i * block; off < (i+1)*block; off += xfer {
						if _, err := f.WriteAt(want[off:off+xfer], int64(off)); err != nil {
							errs <- err
							f.Close()
							return
						}
					}
					errs <- f.Close()
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := readFile(t, m.path("ior.shared")); !bytes.Equal(got, want) {
				t.Fatal("the shared file differs from what the writers wrote")
			}
			n := spans.overlapping()
			t.Logf("%d of %d writes overlapped another", n, len(spans.spans))
			switch {
			case tt.parallel && m.DirectMmap() && n == 0:
				t.Error("no write overlapped another: the kernel serialised the writers")
			case !tt.parallel && n > 0:
				t.Errorf("%d writes overlapped through cached descriptors, which the kernel serialises", n)
			}
		})
	}
}

// A direct read-write descriptor read in small sequential pieces, with
// writes and truncates through it and through another descriptor between
// the reads, reads what a model of the file holds (its reads are answered
// from a read-ahead buffer, which no write through the mount may leave
// stale).
func TestReadWriteSmallReads(t *testing.T) {
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	const size = 3 << 20
	f, err := os.OpenFile(m.path("small"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other, err := os.OpenFile(m.path("small"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	model := randomBytes(t, size)
	if _, err := f.WriteAt(model, 0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	off := 0
	var ops []string // the steps so far, for a failure's message
	for i := range 3000 {
		switch r := rng.IntN(100); {
		case r < 3: // a write through this descriptor, often just ahead
			n, at := 1+rng.IntN(5000), off+rng.IntN(4000)
			if at+n > len(model) {
				break
			}
			b := randomBytes(t, n)
			if _, err := f.WriteAt(b, int64(at)); err != nil {
				t.Fatal(err)
			}
			copy(model[at:], b)
			ops = append(ops, fmt.Sprintf("write %d at %d", n, at))
		case r < 5: // through another descriptor
			n, at := 1+rng.IntN(5000), off+rng.IntN(4000)
			if at+n > len(model) {
				break
			}
			b := randomBytes(t, n)
			if _, err := other.WriteAt(b, int64(at)); err != nil {
				t.Fatal(err)
			}
			copy(model[at:], b)
			ops = append(ops, fmt.Sprintf("other write %d at %d", n, at))
		case r < 6: // truncate, down or up
			n := off + rng.IntN(2<<20)
			if err := other.Truncate(int64(n)); err != nil {
				t.Fatal(err)
			}
			if n < len(model) {
				model = model[:n]
			} else {
				model = append(model, make([]byte, n-len(model))...)
			}
			ops = append(ops, fmt.Sprintf("truncate to %d", n))
		case r < 8: // a jump
			off = rng.IntN(len(model) + 1)
			ops = append(ops, fmt.Sprintf("jump to %d", off))
		}
		n := 1 + rng.IntN(8192)
		if rng.IntN(4) == 0 {
			n = 4096
		}
		got := make([]byte, n)
		k, err := f.ReadAt(got, int64(off))
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		want := model[min(off, len(model)):min(off+n, len(model))]
		if !bytes.Equal(got[:k], want) {
			t.Fatalf("step %d: read of %d at %d (size %d) gave %d bytes that differ from the model's %d; the steps before:\n%s",
				i, n, off, len(model), k, len(want), strings.Join(ops[max(0, len(ops)-8):], "\n"))
		}
		ops = append(ops, fmt.Sprintf("read %d at %d: %d", n, off, k))
		off += k
		if k == 0 {
			off = 0
		}
	}
}
