package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/wire"
)

var ctx = context.Background()

// pattern returns n bytes of datafile id's test content at offset off, so
// any byte's expected value is known from its position alone.
func pattern(id uint64, off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		x := uint64(off+int64(i))*0x9e3779b97f4a7c15 ^ id*0xff51afd7ed558ccd
		b[i] = byte(x >> 56)
	}
	return b
}

func openStore(t testing.TB, opts StoreOptions) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// ensure creates datafile id unless it exists: writes no longer create.
func ensure(t testing.TB, s *Store, id uint64) {
	t.Helper()
	if err := s.Create(ctx, id); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
}

// mustWrite writes p at off of datafile id, creating it first if missing.
func mustWrite(t testing.TB, s *Store, id uint64, p []byte, off int64) {
	t.Helper()
	ensure(t, s, id)
	if err := s.WriteAt(ctx, id, p, off); err != nil {
		t.Fatal(err)
	}
}

// mustRead reads n bytes at off, requiring all of them.
func mustRead(t testing.TB, s *Store, id uint64, off int64, n int) []byte {
	t.Helper()
	p := make([]byte, n)
	got, err := s.ReadAt(ctx, id, p, off)
	if err != nil || got != n {
		t.Fatalf("ReadAt(%#x, %d bytes at %d) = %d, %v", id, n, off, got, err)
	}
	return p
}

func mustSize(t testing.TB, s *Store, id uint64) int64 {
	t.Helper()
	n, err := s.Size(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRoundTrip(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const id = 0x1a
	want := pattern(id, 4096, 10000)
	mustWrite(t, s, id, want, 4096)
	if got := mustRead(t, s, id, 4096, len(want)); !bytes.Equal(got, want) {
		t.Fatal("read back differs")
	}
	if got := mustSize(t, s, id); got != 4096+10000 {
		t.Fatalf("size %d", got)
	}
	// Overwrite a piece in the middle.
	mid := pattern(99, 0, 100)
	mustWrite(t, s, id, mid, 5000)
	copy(want[5000-4096:], mid)
	if got := mustRead(t, s, id, 4096, len(want)); !bytes.Equal(got, want) {
		t.Fatal("read back after overwrite differs")
	}
	// The bytes are in the datafile named after the id.
	raw, err := os.ReadFile(filepath.Join(s.Dir(), "df", "1a", "000000000000001a"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw[4096:], want) {
		t.Fatal("datafile content differs")
	}
}

func TestWriteAtv(t *testing.T) {
	s := openStore(t, StoreOptions{})
	cases := []struct {
		name  string
		sizes []int
	}{
		{"none", nil},
		{"one", []int{777}},
		{"empties around one", []int{0, 513, 0}},
		{"several", []int{1, 4096, 0, 65536, 3, 100000}},
		{"more than IOV_MAX", func() []int {
			sz := make([]int, 2500)
			for i := range sz {
				sz[i] = 1 + i%37
			}
			return sz
		}()},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := uint64(1000 + i)
			off := int64(12345)
			var bufs [][]byte
			var want []byte
			for _, n := range c.sizes {
				b := pattern(id, off+int64(len(want)), n)
				bufs = append(bufs, b)
				want = append(want, b...)
			}
			saved := make([][]byte, len(bufs))
			copy(saved, bufs)
			ensure(t, s, id)
			if err := s.WriteAtv(ctx, id, bufs, off); err != nil {
				t.Fatal(err)
			}
			for j := range bufs {
				if len(bufs[j]) != len(saved[j]) {
					t.Fatal("WriteAtv modified the caller's slice")
				}
			}
			if len(want) == 0 {
				if got := mustSize(t, s, id); got != 0 {
					t.Fatalf("empty writev created %d bytes", got)
				}
				return
			}
			if got := mustRead(t, s, id, off, len(want)); !bytes.Equal(got, want) {
				t.Fatal("read back differs")
			}
			if got := mustSize(t, s, id); got != off+int64(len(want)) {
				t.Fatalf("size %d, want %d", got, off+int64(len(want)))
			}
		})
	}
}

func TestPwritevPartial(t *testing.T) {
	// Drive pwritev's re-slicing directly with a >IOV_MAX vector of uneven
	// buffers and check the caller's buffers are untouched.
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bufs [][]byte
	var want []byte
	for i := range 3000 {
		b := pattern(7, int64(len(want)), i%5)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	n, err := pwritev(f, bufs, 10)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("pwritev = %d, %v; want %d", n, err, len(want))
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 10); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("content differs")
	}
	for i, b := range bufs {
		if len(b) != i%5 {
			t.Fatal("caller's buffers modified")
		}
	}
}

func TestHolesReadAsZeros(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const id = 5
	tail := pattern(id, 1<<20, 10)
	mustWrite(t, s, id, tail, 1<<20)
	got := mustRead(t, s, id, 0, 1<<20+10)
	if !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) {
		t.Fatal("hole is not zeros")
	}
	if !bytes.Equal(got[1<<20:], tail) {
		t.Fatal("data after hole differs")
	}

	// A datafile made and never written is all hole: empty.
	ensure(t, s, 0x55)
	p := make([]byte, 10)
	if n, err := s.ReadAt(ctx, 0x55, p, 0); n != 0 || err != io.EOF {
		t.Fatalf("read of an unwritten datafile = %d, %v; want 0, EOF", n, err)
	}
	// One never made is stale (its file was removed): reading it as empty
	// would hand a short file to a reader without an error.
	if n, err := s.ReadAt(ctx, 6, p, 0); n != 0 || !errors.Is(err, ErrStale) {
		t.Fatalf("read of missing datafile = %d, %v; want 0, ESTALE", n, err)
	}
	if n, err := s.ReadAt(ctx, 6, nil, 0); n != 0 || err != nil {
		t.Fatalf("empty read of missing datafile = %d, %v; want 0, nil", n, err)
	}
	// Reading did not create either.
	for _, id := range []uint64{0x55, 6} {
		if _, err := os.Lstat(filepath.Join(s.Dir(), datafilePath(id))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("read created datafile %d: %v", id, err)
		}
	}
}

func TestReadPastEOF(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const id = 9
	data := pattern(id, 0, 100)
	mustWrite(t, s, id, data, 0)
	for _, c := range []struct {
		off   int64
		n     int
		wantN int
		eof   bool
	}{
		{0, 100, 100, false}, // exactly to EOF: no error
		{0, 50, 50, false},
		{50, 100, 50, true}, // crosses EOF
		{99, 2, 1, true},
		{100, 1, 0, true}, // at EOF
		{1000, 10, 0, true},
		{100, 0, 0, false}, // empty read
	} {
		p := make([]byte, c.n)
		n, err := s.ReadAt(ctx, id, p, c.off)
		if n != c.wantN || (err == io.EOF) != c.eof || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d, eof=%v", c.n, c.off, n, err, c.wantN, c.eof)
			continue
		}
		if n > 0 && !bytes.Equal(p[:n], data[c.off:c.off+int64(n)]) {
			t.Errorf("ReadAt(%d bytes at %d) returned wrong bytes", c.n, c.off)
		}
	}
}

func TestTruncate(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const id = 0x42
	// A missing datafile is ESTALE, and truncate does not create it.
	if err := s.Truncate(ctx, id, 0); !errors.Is(err, syscall.ESTALE) || !errors.Is(err, ErrStale) {
		t.Fatalf("truncate of a missing datafile: %v, want ESTALE", err)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(), datafilePath(id))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("truncate created the datafile: %v", err)
	}
	ensure(t, s, id)
	data := pattern(id, 0, 1000)
	mustWrite(t, s, id, data, 0)
	// Down.
	if err := s.Truncate(ctx, id, 300); err != nil {
		t.Fatal(err)
	}
	if got := mustSize(t, s, id); got != 300 {
		t.Fatalf("size after truncate down = %d", got)
	}
	p := make([]byte, 1000)
	if n, err := s.ReadAt(ctx, id, p, 0); n != 300 || err != io.EOF || !bytes.Equal(p[:300], data[:300]) {
		t.Fatalf("read after truncate down = %d, %v", n, err)
	}
	// Up: the regrown part is a hole, not the old data.
	if err := s.Truncate(ctx, id, 5000); err != nil {
		t.Fatal(err)
	}
	if got := mustSize(t, s, id); got != 5000 {
		t.Fatalf("size after truncate up = %d", got)
	}
	got := mustRead(t, s, id, 0, 5000)
	if !bytes.Equal(got[:300], data[:300]) || !bytes.Equal(got[300:], make([]byte, 4700)) {
		t.Fatal("content after truncate up differs")
	}
	// Truncate of a new id to a large size.
	ensure(t, s, id+1)
	if err := s.Truncate(ctx, id+1, 1<<40); err != nil {
		t.Fatal(err)
	}
	if got := mustSize(t, s, id+1); got != 1<<40 {
		t.Fatalf("size = %d", got)
	}
}

func TestSize(t *testing.T) {
	s := openStore(t, StoreOptions{})
	if _, err := s.Size(ctx, 77); !errors.Is(err, ErrStale) {
		t.Fatalf("size of missing datafile: %v, want ESTALE", err)
	}
	mustWrite(t, s, 77, []byte("x"), 99)
	if got := mustSize(t, s, 77); got != 100 {
		t.Fatalf("size = %d", got)
	}
	// An empty write creates nothing (and is no error).
	if err := s.WriteAt(ctx, 78, nil, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(), datafilePath(78))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty write created the datafile: %v", err)
	}
}

func TestRemove(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const id = 0x300
	if err := s.Remove(ctx, id); err != nil {
		t.Fatalf("remove of missing datafile: %v", err)
	}
	mustWrite(t, s, id, pattern(id, 0, 100), 0)
	path := filepath.Join(s.Dir(), datafilePath(id))
	if _, err := os.Lstat(path); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("datafile still there: %v", err)
	}
	// Reading, sizing, writing, truncating or syncing the removed datafile
	// is ESTALE and brings nothing back.
	_, sizeErr := s.Size(ctx, id)
	_, readErr := s.ReadAt(ctx, id, make([]byte, 10), 0)
	for name, err := range map[string]error{
		"size":     sizeErr,
		"read":     readErr,
		"write":    s.WriteAt(ctx, id, []byte("late"), 0),
		"writev":   s.WriteAtv(ctx, id, [][]byte{[]byte("la"), []byte("te")}, 0),
		"truncate": s.Truncate(ctx, id, 1<<20),
		"sync":     s.Sync(ctx, id),
	} {
		if !errors.Is(err, syscall.ESTALE) || !strings.HasPrefix(err.Error(), "datafile 0x300: ") {
			t.Errorf("%s after remove: %v, want ESTALE naming the datafile", name, err)
		}
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a write after remove recreated the datafile: %v", err)
	}
	// Create makes a fresh datafile (not the removed, cached one).
	mustWrite(t, s, id, []byte("new"), 10)
	if got := mustSize(t, s, id); got != 13 {
		t.Fatalf("size of recreated datafile = %d", got)
	}
	raw, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(raw, append(make([]byte, 10), "new"...)) {
		t.Fatalf("recreated datafile = %q, %v", raw, err)
	}
	if err := s.Sync(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
}

func TestSync(t *testing.T) {
	s := openStore(t, StoreOptions{})
	// Syncing a datafile that does not exist is ESTALE.
	if err := s.Sync(ctx, 1); !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("sync of a missing datafile: %v, want ESTALE", err)
	}
	const id = 0x1234
	mustWrite(t, s, id, pattern(id, 0, 1<<16), 0)
	s.mu.Lock()
	_, pending := s.needDirSync[id]
	s.mu.Unlock()
	if !pending {
		t.Fatal("a new datafile is not marked as needing a directory sync")
	}
	if err := s.Sync(ctx, id); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	_, pending = s.needDirSync[id]
	s.mu.Unlock()
	if pending {
		t.Fatal("directory sync still pending after Sync")
	}
	// An existing datafile opened anew is not "created".
	mustWrite(t, s, id, []byte("more"), 1<<16)
	if err := s.Sync(ctx, id); err != nil {
		t.Fatal(err)
	}

	// SyncAll covers open dirty handles, created files and handles the LRU
	// already closed.
	for i := range uint64(20) {
		mustWrite(t, s, 0x5000+i, pattern(i, 0, 100), 0)
	}
	if err := s.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	n := len(s.needDirSync)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d directory syncs pending after SyncAll", n)
	}

	small := openStore(t, StoreOptions{MaxOpenFiles: 2})
	for i := range uint64(10) {
		mustWrite(t, small, i, pattern(i, 0, 100), 0)
	}
	small.mu.Lock()
	closedDirty := small.closedDirty
	small.mu.Unlock()
	if !closedDirty {
		t.Fatal("eviction of dirty handles not recorded")
	}
	if err := small.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	small.mu.Lock()
	closedDirty = small.closedDirty
	small.mu.Unlock()
	if closedDirty {
		t.Fatal("SyncAll did not consume the eviction record")
	}
}

func TestWriteBehind(t *testing.T) {
	// Exercise the write-behind path with a tiny threshold, from many
	// goroutines, and check nothing is lost.
	s := openStore(t, StoreOptions{WriteBehind: 4096})
	const id, chunk, chunks = 3, 3000, 64
	ensure(t, s, id)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for c := g; c < chunks; c += 4 {
				off := int64(c * chunk)
				if err := s.WriteAt(ctx, id, pattern(id, off, chunk), off); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := mustRead(t, s, id, 0, chunks*chunk); !bytes.Equal(got, pattern(id, 0, chunks*chunk)) {
		t.Fatal("content differs")
	}
	// Disabled write-behind works too.
	s2 := openStore(t, StoreOptions{WriteBehind: -1})
	mustWrite(t, s2, 1, pattern(1, 0, 1<<20), 0)
}

func TestConcurrentOneID(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const id = 0xabc
	const writers, chunk, chunks = 16, 4096 + 17, 512
	ensure(t, s, id)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			// Interleaved disjoint chunks: writer w owns chunks w, w+16, ...
			for c := w; c < chunks; c += writers {
				off := int64(c * chunk)
				var err error
				if c%3 == 0 {
					b := pattern(id, off, chunk)
					err = s.WriteAtv(ctx, id, [][]byte{b[:100], b[100:1000], b[1000:]}, off)
				} else {
					err = s.WriteAt(ctx, id, pattern(id, off, chunk), off)
				}
				if err != nil {
					t.Error(err)
					return
				}
				// Read back someone's chunk concurrently.
				p := make([]byte, chunk)
				if _, err := s.ReadAt(ctx, id, p, off); err != nil && err != io.EOF {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := mustRead(t, s, id, 0, chunks*chunk); !bytes.Equal(got, pattern(id, 0, chunks*chunk)) {
		t.Fatal("content differs")
	}
}

func TestConcurrentManyIDs(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const ids, writers, chunk, chunks = 64, 16, 1000, 32
	for id := range uint64(ids) {
		ensure(t, s, id<<8|id)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for id := uint64(w); id < ids; id += writers {
				for c := range chunks {
					off := int64(c * chunk)
					if err := s.WriteAt(ctx, id<<8|id, pattern(id, off, chunk), off); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for id := range uint64(ids) {
		if got := mustRead(t, s, id<<8|id, 0, chunks*chunk); !bytes.Equal(got, pattern(id, 0, chunks*chunk)) {
			t.Fatalf("content of %#x differs", id<<8|id)
		}
	}
}

// TestLRUEviction runs 64 datafiles through a 4-handle cache from many
// goroutines: handles are evicted while in use, and no operation may see a
// closed descriptor.
func TestLRUEviction(t *testing.T) {
	s := openStore(t, StoreOptions{MaxOpenFiles: 4, WriteBehind: 8192})
	const ids, workers, chunk, chunks = 64, 32, 512, 16
	for id := range uint64(ids) {
		ensure(t, s, id)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			// Worker w owns chunks c ≡ w (mod 2) of ids ≡ w (mod 16), so
			// writes are disjoint while every id sees two writers.
			for i := range ids / 16 * chunks / 2 {
				id := uint64(w%16 + 16*(i%(ids/16)))
				c := 2*(i/(ids/16)) + w/16
				off := int64(c * chunk)
				if err := s.WriteAt(ctx, id, pattern(id, off, chunk), off); err != nil {
					t.Error(err)
					return
				}
				// Mix in other operations on random ids.
				other := uint64(r.IntN(ids))
				var err error
				switch r.IntN(4) {
				case 0:
					_, err = s.ReadAt(ctx, other, make([]byte, chunk), int64(r.IntN(chunks))*chunk)
					if err == io.EOF {
						err = nil
					}
				case 1:
					_, err = s.Size(ctx, other)
				case 2:
					err = s.Sync(ctx, other)
				case 3:
					_, err = s.ReadAt(ctx, id, make([]byte, chunk), off)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for id := range uint64(ids) {
		if got := mustRead(t, s, id, 0, chunks*chunk); !bytes.Equal(got, pattern(id, 0, chunks*chunk)) {
			t.Fatalf("content of %d differs", id)
		}
	}
	s.mu.Lock()
	cached, busy := len(s.handles), len(s.busy)
	s.mu.Unlock()
	if cached > 4 || busy != 0 {
		t.Fatalf("%d cached and %d busy handles after the run; want ≤4 and 0", cached, busy)
	}
	if err := s.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, StoreOptions{})
	if err == nil {
		s2.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v; want ErrLocked", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, dir) || !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("error %q does not name the directory and the holder", msg)
	}
	t.Log(msg)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close releases the lock.
	s3, err := Open(dir, StoreOptions{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s3.Close()
}

func TestConfinement(t *testing.T) {
	// Names come from the id alone and always stay inside df/.
	re := regexp.MustCompile(`^df/[0-9a-f]{2}/[0-9a-f]{16}$`)
	ids := []uint64{0, 1, 0xff, 0x100, 0x1ab, math.MaxUint64, math.MaxUint64 - 0xff}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ids = append(ids, r.Uint64())
	}
	for _, id := range ids {
		p := datafilePath(id)
		if !re.MatchString(p) || !filepath.IsLocal(p) || filepath.Clean(p) != p {
			t.Fatalf("datafilePath(%#x) = %q", id, p)
		}
		if want := fmt.Sprintf("df/%02x/%016x", id&0xff, id); p != want {
			t.Fatalf("datafilePath(%#x) = %q, want %q", id, p, want)
		}
	}

	// Plant symlinks leading out of the data directory: a whole shard and
	// a single datafile. The store opens everything through os.Root, which
	// refuses to follow them.
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(dir, "df", "01"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "df", "00")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "df", "01", "0000000000000001")); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.root == nil || s.df == nil {
		t.Fatal("store does not use os.Root")
	}

	// Shard 00 is a symlink out: every datafile in it is refused.
	for _, id := range []uint64{0, 0x100, 0xabc00} {
		err := s.WriteAt(ctx, id, []byte("escape"), 0)
		if err == nil {
			t.Fatalf("write of %#x through symlinked shard succeeded", id)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("datafile %#x", id)) {
			t.Fatalf("error %q does not name the datafile", err)
		}
		t.Log(err)
		if err := s.Truncate(ctx, id, 100); err == nil {
			t.Fatalf("truncate of %#x through symlinked shard succeeded", id)
		}
		if _, err := s.ReadAt(ctx, id, make([]byte, 1), 0); err == nil || err == io.EOF {
			t.Fatalf("read of %#x through symlinked shard = %v", id, err)
		}
	}
	// Datafile 1 is a symlink out: refused too, and the target is intact.
	if err := s.WriteAt(ctx, 1, []byte("escape"), 0); err == nil {
		t.Fatal("write through symlinked datafile succeeded")
	} else {
		t.Log(err)
	}
	if err := s.Truncate(ctx, 1, 0); err == nil {
		t.Fatal("truncate through symlinked datafile succeeded")
	}

	ents, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "victim" {
		t.Fatalf("files appeared outside the data directory: %v", ents)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("file outside the data directory changed: %q", b)
	}

	// Other shards are unaffected.
	mustWrite(t, s, 0x101, []byte("fine"), 0)
	if b, err := os.ReadFile(filepath.Join(dir, "df", "01", "0000000000000101")); err != nil || string(b) != "fine" {
		t.Fatalf("datafile 0x101 = %q, %v", b, err)
	}
}

func TestStatfs(t *testing.T) {
	s := openStore(t, StoreOptions{})
	s.statTTL = 0 // no caching, to observe every change
	st0, err := s.Statfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st0.Total == 0 || st0.Free > st0.Total || st0.Avail > st0.Total || st0.Datafiles != 0 || st0.Used != 0 {
		t.Fatalf("fresh store: %+v", st0)
	}
	for id := range uint64(3) {
		mustWrite(t, s, id, pattern(id, 0, 1<<20), 0)
	}
	st1, err := s.Statfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st1.Datafiles != 3 || st1.Used < 3<<20 {
		t.Fatalf("after writing 3 MiB to 3 datafiles: %+v", st1)
	}
	// A sparse datafile uses (almost) nothing.
	ensure(t, s, 0x99)
	if err := s.Truncate(ctx, 0x99, 1<<30); err != nil {
		t.Fatal(err)
	}
	st2, err := s.Statfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Datafiles != 4 || st2.Used > st1.Used+1<<20 {
		t.Fatalf("after a 1 GiB sparse truncate: %+v (before %+v)", st2, st1)
	}
	if err := s.Remove(ctx, 1); err != nil {
		t.Fatal(err)
	}
	st3, err := s.Statfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st3.Datafiles != 3 || st3.Used >= st2.Used {
		t.Fatalf("after remove: %+v (before %+v)", st3, st2)
	}

	// With the TTL, the walk is reused.
	s.statTTL = statfsTTL
	mustWrite(t, s, 7, pattern(7, 0, 1<<20), 0)
	st4, _ := s.Statfs(ctx)
	st5, _ := s.Statfs(ctx)
	if st4.Datafiles != st5.Datafiles || st4.Used != st5.Used {
		t.Fatalf("cached Statfs changed: %+v then %+v", st4, st5)
	}
}

// Past statfsTTL, Statfs answers from the last walk of the datafiles and
// walks again in the background (a walk lstats every datafile: a statfs
// through the mount must not wait seconds on a store of millions); the
// next answers show the new walk. Closing the store waits for a walk
// under way.
func TestStatfsAnswersFromTheLastWalk(t *testing.T) {
	s := openStore(t, StoreOptions{})
	s.statTTL = 20 * time.Millisecond
	st0, err := s.Statfs(ctx)
	if err != nil || st0.Datafiles != 0 {
		t.Fatalf("fresh store: %+v, %v", st0, err)
	}
	mustWrite(t, s, 5, pattern(5, 0, 1<<20), 0)
	time.Sleep(30 * time.Millisecond)
	st1, err := s.Statfs(ctx)
	if err != nil || st1.Datafiles != st0.Datafiles || st1.Used != st0.Used {
		t.Fatalf("past the TTL, Statfs answered %+v, %v; want the last walk's %+v at once", st1, err, st0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := s.Statfs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Datafiles == 1 && st.Used >= 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background walk never showed the new datafile: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond)
	if _, err := s.Statfs(ctx); err != nil { // starts a walk
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidArguments(t *testing.T) {
	s := openStore(t, StoreOptions{})
	check := func(err error, words ...string) {
		t.Helper()
		if !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("error %v does not wrap EINVAL", err)
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("error %q lacks %q", err, w)
			}
		}
	}
	check(s.WriteAt(ctx, 0x1a, []byte("x"), -1), "datafile 0x1a", "offset")
	check(s.WriteAtv(ctx, 0x1a, [][]byte{{1}, {2}}, -5), "datafile 0x1a", "offset")
	_, err := s.ReadAt(ctx, 0x1a, make([]byte, 1), -1)
	check(err, "datafile 0x1a", "offset")
	check(s.Truncate(ctx, 0x1a, -1), "datafile 0x1a", "size")
	check(s.WriteAt(ctx, 0x1a, []byte("xy"), math.MaxInt64-1), "datafile 0x1a", "overflows")
	if _, err := s.Size(ctx, 0x1a); !errors.Is(err, ErrStale) {
		t.Fatalf("invalid operations created the datafile: its size is %v, want ESTALE", err)
	}
}

func TestErrorsNameDatafile(t *testing.T) {
	s := openStore(t, StoreOptions{})
	mustWrite(t, s, 0x1a, []byte("x"), 0)
	// Make the datafile unwritable behind the store's back by replacing it
	// with a directory; the error names the id and the operation.
	path := filepath.Join(s.Dir(), datafilePath(0x1b))
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	err := s.WriteAt(ctx, 0x1b, []byte("x"), 4096)
	if err == nil || !strings.HasPrefix(err.Error(), "datafile 0x1b: write at 4096: ") {
		t.Fatalf("error = %v", err)
	}
	t.Log(err)
}

func TestClosedAndCanceled(t *testing.T) {
	s, err := Open(t.TempDir(), StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.WriteAt(cctx, 1, []byte("x"), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with canceled context: %v", err)
	}
	mustWrite(t, s, 1, []byte("x"), 0)
	if err := s.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	errs := []error{
		s.WriteAt(ctx, 1, []byte("x"), 0),
		s.WriteAtv(ctx, 1, [][]byte{{1}, {2}}, 0),
		s.Truncate(ctx, 1, 0),
		s.Sync(ctx, 1),
		s.SyncAll(ctx),
		s.Remove(ctx, 1),
	}
	_, err = s.ReadAt(ctx, 1, make([]byte, 1), 0)
	errs = append(errs, err)
	_, err = s.Size(ctx, 1)
	errs = append(errs, err)
	_, err = s.Statfs(ctx)
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("operation %d after Close: %v; want ErrClosed", i, err)
		}
	}
}

func TestCloseWaitsForOperations(t *testing.T) {
	s, err := Open(t.TempDir(), StoreOptions{MaxOpenFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	for w := range 8 {
		for i := range 5 {
			ensure(t, s, uint64(w*1000+i))
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				err := s.WriteAt(ctx, uint64(w*1000+i%5), []byte("data"), int64(i))
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Error(err)
					return
				}
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

const benchFileSize = 256 << 20

func benchStore(b *testing.B) *Store {
	s, err := Open(b.TempDir(), StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ensure(b, s, 1)
	return s
}

func BenchmarkWriteAt1MiB(b *testing.B) {
	s := benchStore(b)
	buf := pattern(1, 0, 1<<20)
	if err := s.Truncate(ctx, 1, benchFileSize); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	for i := 0; b.Loop(); i++ {
		off := int64(i%(benchFileSize>>20)) << 20
		if err := s.WriteAt(ctx, 1, buf, off); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadAt1MiB(b *testing.B) {
	s := benchStore(b)
	buf := pattern(1, 0, 1<<20)
	for off := int64(0); off < benchFileSize; off += 1 << 20 {
		if err := s.WriteAt(ctx, 1, buf, off); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	for i := 0; b.Loop(); i++ {
		off := int64(i%(benchFileSize>>20)) << 20
		if n, err := s.ReadAt(ctx, 1, buf, off); err != nil || n != len(buf) {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkHandler measures the handler's side of 256 KiB writes and reads
// (a 1 MiB transfer striped over 4 servers): decoding, the store call, the
// answer. allocs/op shows what the op decoding costs on the hot path.
func BenchmarkHandler(b *testing.B) {
	s := benchStore(b)
	h := &Handler{Store: s}
	buf := pattern(1, 0, 256<<10)
	// The typed requests: hand-built arguments fell behind the protocol
	// (version 8 added the write's origin) and the benchmark failed.
	var wargs, rargs wire.Enc
	WriteRequest{ID: 1}.Encode(&wargs)
	ReadRequest{ID: 1, Length: int64(len(buf))}.Encode(&rargs)
	write := &wire.Request{Op: OpWrite.Code, Args: wargs.Bytes(), Data: buf}
	read := &wire.Request{Op: OpRead.Code, Args: rargs.Bytes()}
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := h.ServeWire(ctx, write); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			resp, err := h.ServeWire(ctx, read)
			if err != nil {
				b.Fatal(err)
			}
			resp.Release()
		}
	})
}
