package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// startLocal starts an in-process cluster with the given stuffing and
// dials it, for tests that need a second client or the cluster itself.
func startLocal(t testing.TB, stuffing bool) *cluster.Local {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "pario-contract-")
	if err != nil {
		dir = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	l, err := cluster.Start(context.Background(), cluster.Config{Dir: dir, Stuffing: stuffing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func localClient(t testing.TB, l *cluster.Local) *client.Client {
	t.Helper()
	c, err := l.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// contractLayouts is one layout of each distribution, with strips small
// enough that a 10000-byte file spans several servers, and 1-byte strips.
var contractLayouts = []string{
	"simple_stripe:strip_size=4096",
	"basic",
	"varstrip:strips=0:100;1:5000;2:7",
	"twod_stripe:num_groups=2,strip_size=1000,group_strip_factor=3",
	"simple_stripe:strip_size=1",
}

// TestReaderAtWriterAtContract checks io.ReaderAt's and io.WriterAt's
// rules at the edges, in every distribution, for files stuffed and not:
// a short read or write comes with an error (io.EOF at the end of the
// file), an empty one does nothing, holes read as zeros, and a range
// that no file can hold (a negative offset, an end past math.MaxInt64)
// is EINVAL. Such a range once mapped to no piece at all: a read of it
// returned len(p) and nil with p untouched, and a write reported every
// byte written while none was.
func TestReaderAtWriterAtContract(t *testing.T) {
	const size = 10000
	for _, stuffing := range []bool{false, true} {
		c := localClient(t, startLocal(t, stuffing))
		ctx := context.Background()
		for i, ls := range contractLayouts {
			t.Run(fmt.Sprintf("stuffing=%v/%s", stuffing, ls), func(t *testing.T) {
				f, err := c.Create(ctx, fmt.Sprintf("/f%d", i), client.CreateOptions{Mode: 0o644, Layout: mustLayout(t, ls)})
				if err != nil {
					t.Fatal(err)
				}
				data := make([]byte, size)
				for j := range data {
					data[j] = byte(j%251 + 1)
				}
				// A small write first, so that a stuffed file is still
				// stuffed for the reads below it.
				if n, err := f.WriteAt(data[:50], 0); n != 50 || err != nil {
					t.Fatalf("WriteAt(50 bytes at 0) = %d, %v", n, err)
				}
				check := func(off int64, length int, wantN int, wantErr error) {
					t.Helper()
					p := bytes.Repeat([]byte{0xee}, length)
					n, err := f.ReadAt(p, off)
					if n != wantN || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
						t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v", length, off, n, err, wantN, wantErr)
					}
					if n < length && err == nil {
						t.Fatalf("ReadAt(%d bytes at %d) = %d with no error", length, off, n)
					}
				}
				for _, x := range []struct {
					off          int64
					length, want int
					err          error
				}{
					{0, 50, 50, nil},
					{0, 100, 50, io.EOF},
					{49, 10, 1, io.EOF},
					{50, 10, 0, io.EOF},
					{1 << 40, 10, 0, io.EOF},
					{0, 0, 0, nil},
					{1 << 40, 0, 0, nil},
					{-1, 10, 0, syscall.EINVAL},
					{math.MaxInt64 - 5, 100, 0, syscall.EINVAL},
					{math.MaxInt64, 1, 0, syscall.EINVAL},
					{math.MaxInt64, 0, 0, nil},
					{math.MaxInt64 - 1, 1, 0, io.EOF},
				} {
					check(x.off, x.length, x.want, x.err)
				}

				if n, err := f.WriteAt(data, 0); n != size || err != nil {
					t.Fatalf("WriteAt(%d bytes at 0) = %d, %v", size, n, err)
				}
				// A byte far out leaves a hole that reads as zeros.
				if n, err := f.WriteAt([]byte{7}, 3*size); n != 1 || err != nil {
					t.Fatalf("WriteAt(1 byte at %d) = %d, %v", 3*size, n, err)
				}
				p := bytes.Repeat([]byte{0xee}, 3*size+10)
				n, err := f.ReadAt(p, 0)
				if n != 3*size+1 || err != io.EOF {
					t.Fatalf("ReadAt over the hole = %d, %v; want %d, EOF", n, err, 3*size+1)
				}
				want := append(append(append([]byte(nil), data...), make([]byte, 2*size)...), 7)
				if !bytes.Equal(p[:n], want) {
					t.Fatal("the file read back differs from what was written (holes must read as zeros)")
				}

				for _, x := range []struct {
					off    int64
					length int
				}{{-1, 10}, {math.MaxInt64 - 5, 10}, {math.MaxInt64, 1}} {
					n, err := f.WriteAt(make([]byte, x.length), x.off)
					if n != 0 || !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), f.Name()) {
						t.Fatalf("WriteAt(%d bytes at %d) = %d, %v; want 0 and EINVAL naming %s", x.length, x.off, n, err, f.Name())
					}
				}
				if n, err := f.WriteAt(nil, math.MaxInt64); n != 0 || err != nil {
					t.Fatalf("WriteAt(nothing at MaxInt64) = %d, %v; want 0, nil", n, err)
				}
				// Past what the servers' file systems hold (ext4, tmpfs:
				// EFBIG): whatever the servers say, a short write has an
				// error.
				if n, err := f.WriteAt(make([]byte, 10), 1<<62); n != 10 && err == nil {
					t.Fatalf("WriteAt(10 bytes at 2^62) = %d with no error", n)
				}
				if err := f.Truncate(3*size + 1); err != nil {
					t.Fatal(err)
				}
				if got, err := f.Size(ctx); got != 3*size+1 || err != nil {
					t.Fatalf("size = %d, %v; want %d (no refused write may change it)", got, err, 3*size+1)
				}
			})
		}
	}
}

// TestWriteListRefusesWrappingSpans: spans whose ends or byte counts
// wrap around int64 are refused before anything is sent. Before, a span
// ending past math.MaxInt64 was reported written (nothing was), and
// spans whose lengths wrapped to len(p) panicked slicing p.
func TestWriteListRefusesWrappingSpans(t *testing.T) {
	c := localClient(t, startLocal(t, false))
	ctx := context.Background()
	f, err := c.Create(ctx, "/list", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		spans []client.Span
		n     int
	}{
		{[]client.Span{{Off: math.MaxInt64 - 5, Len: 10}}, 10},
		{[]client.Span{{Off: 0, Len: math.MaxInt64}, {Off: math.MaxInt64, Len: math.MaxInt64}, {Off: 0, Len: 12}}, 10},
		{[]client.Span{{Off: 0, Len: 4}, {Off: 10, Len: math.MaxInt64 - 2}}, 2},
	} {
		err := f.WriteList(ctx, x.spans, make([]byte, x.n))
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), f.Name()) {
			t.Errorf("WriteList(%v, %d bytes) = %v; want EINVAL naming %s", x.spans, x.n, err, f.Name())
		}
	}
	if size, err := f.Size(ctx); size != 0 || err != nil {
		t.Fatalf("size after refused list writes = %d, %v; want 0", size, err)
	}
}

// TestFileAfterClose: every call on a closed File fails with
// fs.ErrClosed naming the file, as os.File's do, a second Close too;
// Name and Attr still answer. Before, a closed File went on working,
// and Close never failed.
func TestFileAfterClose(t *testing.T) {
	c := localClient(t, startLocal(t, false))
	ctx := context.Background()
	f, err := c.Create(ctx, "/closed", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	p := make([]byte, 5)
	for name, call := range map[string]func() error{
		"ReadAt":    func() error { _, err := f.ReadAt(p, 0); return err },
		"WriteAt":   func() error { _, err := f.WriteAt(p, 0); return err },
		"WriteList": func() error { return f.WriteList(ctx, []client.Span{{Off: 0, Len: 5}}, p) },
		"Truncate":  func() error { return f.Truncate(0) },
		"Sync":      f.Sync,
		"Size":      func() error { _, err := f.Size(ctx); return err },
		"Stat":      func() error { _, err := f.Stat(); return err },
		"Datafiles": func() error { _, err := f.Datafiles(ctx); return err },
		"Close":     f.Close,
	} {
		if err := call(); !errors.Is(err, fs.ErrClosed) || !strings.Contains(err.Error(), "/closed") {
			t.Errorf("%s after Close: %v; want fs.ErrClosed naming /closed", name, err)
		}
	}
	if f.Name() != "/closed" || f.Attr().ID == 0 {
		t.Errorf("Name, Attr after Close: %q, %+v", f.Name(), f.Attr())
	}
	// The file itself is untouched: another File reads it.
	g, err := c.Open(ctx, "/closed")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := g.ReadAt(p, 0); n != 5 || err != nil || string(p) != "hello" {
		t.Fatalf("ReadAt through a new File = %d, %v, %q", n, err, p)
	}
}

// TestRemovedStuffedFileIsStale: a stuffed file removed by another client
// fails its size, sync, truncate and growing writes with the stale-file
// error naming the path, as a file that is not stuffed does (docs/store.md).
// Before, they failed with a bare "getbyid #130: no such file or
// directory". A rename by another client changes nothing.
func TestRemovedStuffedFileIsStale(t *testing.T) {
	l := startLocal(t, true)
	c, other := localClient(t, l), localClient(t, l)
	ctx := context.Background()
	f, err := c.Create(ctx, "/small", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if !f.Attr().Stuffed {
		t.Fatal("the file is not stuffed")
	}
	if err := other.Rename(ctx, "/small", "/moved"); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 5)
	if n, err := f.ReadAt(p, 0); n != 5 || err != nil || string(p) != "hello" {
		t.Fatalf("ReadAt after a rename = %d, %v, %q", n, err, p)
	}
	if err := other.Remove(ctx, "/moved"); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Size":            func() error { _, err := f.Size(ctx); return err },
		"Sync":            f.Sync,
		"Truncate":        func() error { return f.Truncate(1) },
		"WriteAt (grows)": func() error { _, err := f.WriteAt(make([]byte, 1<<20), 0); return err },
		"ReadAt (at end)": func() error { _, err := f.ReadAt(make([]byte, 10), 0); return err },
	} {
		err := call()
		if !errors.Is(err, syscall.ESTALE) || !strings.Contains(err.Error(), "stale file handle: /small was removed") {
			t.Errorf("%s of a removed stuffed file: %v; want ESTALE, %q", name, err, "stale file handle: /small was removed")
		}
		// The mount answers the server's errno, as before: the metadata
		// server's ENOENT, or for a read, once the reaper has removed the
		// datafile, the I/O server's ESTALE.
		if errno := wire.ErrnoOf(err); errno != syscall.ENOENT && (errno != syscall.ESTALE || !strings.HasPrefix(name, "ReadAt")) {
			t.Errorf("%s of a removed stuffed file: errno %v; want ENOENT", name, errno)
		}
	}
}

// cancelAfterFirst cancels its context when the first call to an I/O
// server completes: the rest of a large transfer is then in flight.
type cancelAfterFirst struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelAfterFirst) CallDone(op uint8, _, _ int, _ time.Duration, _ error) {
	c.once.Do(c.cancel)
}

// settledGoroutines waits for the goroutine count to fall to at most
// want, as goleak does (connections close asynchronously), and returns
// the count.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// TestCancelMidTransfer cancels large reads and writes while most of
// their requests are in flight: each returns the context's error alone
// (once, it listed every server's version of it, a dozen lines), leaves no
// goroutine behind, and the client's connections serve the next call.
// The servers are other processes, so every goroutine counted is the
// client's.
func TestCancelMidTransfer(t *testing.T) {
	p := spawn(t)
	var armed sync.Mutex
	var obs *cancelAfterFirst
	c := dial(t, p, func(o *client.Options) {
		o.MaxRequest = 256 << 10 // many requests per transfer
		o.Observe = func(service, _ string, _ wire.OpTable) wire.CallObserver {
			if service != "data" {
				return nil
			}
			return observerFunc(func(op uint8, sent, recv int, d time.Duration, err error) {
				armed.Lock()
				o := obs
				armed.Unlock()
				if o != nil {
					o.CallDone(op, sent, recv, d, err)
				}
			})
		}
	})
	ctx := context.Background()
	f, err := c.Create(ctx, "/big", client.CreateOptions{Mode: 0o644, Layout: mustLayout(t, "simple_stripe:strip_size=65536")})
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, 64<<20)
	if _, err := f.WriteAt(data, 0); err != nil { // dials every connection
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	back := make([]byte, len(data))
	for _, x := range []struct {
		op   string
		call func(ctx context.Context) error
	}{
		{"write", func(ctx context.Context) error { _, err := f.WriteAtContext(ctx, data, 0); return err }},
		{"read", func(ctx context.Context) error { _, err := f.ReadAtContext(ctx, back, 0); return err }},
	} {
		cctx, cancel := context.WithCancel(ctx)
		armed.Lock()
		obs = &cancelAfterFirst{cancel: cancel}
		armed.Unlock()
		err := x.call(cctx)
		armed.Lock()
		obs = nil
		armed.Unlock()
		cancel()
		want := fmt.Sprintf("%s /big at offset 0: context canceled", x.op)
		if !errors.Is(err, context.Canceled) || err.Error() != want {
			t.Errorf("cancelled %s: %v; want %q", x.op, err, want)
		}
		if n := settledGoroutines(base); n > base {
			buf := make([]byte, 1<<20)
			t.Errorf("after a cancelled %s: %d goroutines, %d before\n%s", x.op, n, base, buf[:runtime.Stack(buf, true)])
		}
		// The pool dials again where a connection was cut mid-frame.
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatalf("write after a cancelled %s: %v", x.op, err)
		}
		if n, err := f.ReadAt(back, 0); n != len(data) || err != nil || !bytes.Equal(back, data) {
			t.Fatalf("read after a cancelled %s: %d, %v", x.op, n, err)
		}
	}
}

type observerFunc func(op uint8, sent, received int, d time.Duration, err error)

func (f observerFunc) CallDone(op uint8, sent, received int, d time.Duration, err error) {
	f(op, sent, received, d, err)
}

// TestConcurrentCallsAndClose runs reads, writes, truncates, syncs and
// sizes on one File from many goroutines (a stuffed file, so that several
// unstuff it at once), closes the File while they run, then the Client
// while a second File's calls run. Every call ends, with no error, or
// fs.ErrClosed once the File is closed, or the closed connection's error
// once the Client is; under -race, without a data race.
func TestConcurrentCallsAndClose(t *testing.T) {
	l := startLocal(t, true)
	c := localClient(t, l)
	ctx := context.Background()
	f, err := c.Create(ctx, "/shared", client.CreateOptions{Mode: 0o644, Layout: mustLayout(t, "simple_stripe:strip_size=4096")})
	if err != nil {
		t.Fatal(err)
	}
	// hammer starts the goroutines and returns once they have made 200
	// calls between them, so that the Close comes amid them.
	hammer := func(f *client.File, ok func(error) bool) (stop func()) {
		var wg sync.WaitGroup
		quit := make(chan struct{})
		var calls atomic.Int64
		busy := make(chan struct{})
		for g := range 12 {
			wg.Go(func() {
				buf := make([]byte, 3000+g*1000)
				for i := 0; ; i++ {
					select {
					case <-quit:
						return
					default:
					}
					off := int64((g*7919 + i*104729) % 60000)
					var err error
					switch (g + i) % 6 {
					case 0, 1:
						_, err = f.WriteAtContext(ctx, buf, off)
					case 2:
						_, err = f.ReadAtContext(ctx, buf, off)
						if err == io.EOF {
							err = nil
						}
					case 3:
						err = f.TruncateContext(ctx, off)
					case 4:
						err = f.SyncContext(ctx)
					case 5:
						_, err = f.Size(ctx)
					}
					if err != nil && !ok(err) {
						t.Errorf("goroutine %d, call %d: %v", g, i, err)
						return
					}
					if calls.Add(1) == 200 {
						close(busy)
					}
				}
			})
		}
		select {
		case <-busy:
		case <-time.After(time.Minute):
			t.Fatal("200 calls did not complete in a minute")
		}
		return func() { close(quit); wg.Wait() }
	}
	closed := func(err error) bool { return errors.Is(err, fs.ErrClosed) }
	stop := hammer(f, closed)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	stop()

	c2 := localClient(t, l)
	g, err := c2.Open(ctx, "/shared")
	if err != nil {
		t.Fatal(err)
	}
	stop = hammer(g, func(err error) bool { return errors.Is(err, net.ErrClosed) })
	done := make(chan struct{})
	go func() { c2.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Client.Close did not return while calls were in flight")
	}
	stop()
	if err := c2.Close(); err != nil {
		t.Fatalf("second Client.Close: %v", err)
	}
}

// TestBadLayoutNamesThePath: a Layout filled in by hand that does not
// parse is refused by Create and SetLayout with EINVAL, naming the path
// and the layout. Before, the metadata server's decoder answered that
// the request was malformed ("create request: wire: field "layout" at
// byte 38: ..."), naming neither.
func TestBadLayoutNamesThePath(t *testing.T) {
	c := localClient(t, startLocal(t, false))
	ctx := context.Background()
	if err := c.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	bad := dist.Layout{Dist: "simple_stripe", Params: "strip_size=0"}
	for name, call := range map[string]func() error{
		"Create": func() error {
			_, err := c.Create(ctx, "/d/f", client.CreateOptions{Mode: 0o644, Layout: bad})
			return err
		},
		"SetLayout": func() error { return c.SetLayout(ctx, "/d", bad) },
	} {
		err := call()
		if !errors.Is(err, syscall.EINVAL) || wire.ErrnoOf(err) != syscall.EINVAL || !strings.Contains(err.Error(), "/d") ||
			!strings.Contains(err.Error(), "strip_size must be positive") || strings.Contains(err.Error(), "wire:") {
			t.Errorf("%s with layout %q: %v; want EINVAL naming /d and what is wrong", name, bad, err)
		}
	}
	if _, err := c.Create(ctx, "/d/h", client.CreateOptions{Mode: 0o644, Hints: map[string]string{"strip_size": "0"}}); wire.ErrnoOf(err) != syscall.EINVAL {
		t.Errorf("Create with a bad hint: %v (errno %v); want EINVAL", err, wire.ErrnoOf(err))
	}
}

// TestRemovedFileReadIsStale: a file that is not stuffed, removed by
// another client, fails its reads and its size with the stale-file error
// naming the path, once the reaper has removed its datafiles, as its
// writes do. Before, the I/O servers answered a missing datafile as an
// empty one: a read returned 0 bytes and io.EOF, so a copy taken while
// another client removed the file ended early and reported success.
func TestRemovedFileReadIsStale(t *testing.T) {
	l := startLocal(t, false)
	c, other := localClient(t, l), localClient(t, l)
	ctx := context.Background()
	f, err := c.Create(ctx, "/big", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("pario"), 1<<18) // 1.25 MiB: every server holds some
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	a := f.Attr()
	if err := other.Remove(ctx, "/big"); err != nil {
		t.Fatal(err)
	}
	waitDatafilesGone(t, c, a)
	for name, call := range map[string]func() error{
		"ReadAt":          func() error { _, err := f.ReadAt(make([]byte, 100), 0); return err },
		"ReadAt (middle)": func() error { _, err := f.ReadAt(make([]byte, 1<<20), 100_000); return err },
		"Size":            func() error { _, err := f.Size(ctx); return err },
		"Usage":           func() error { _, err := f.Usage(ctx); return err },
	} {
		err := call()
		if !errors.Is(err, syscall.ESTALE) || !strings.Contains(err.Error(), "/big") {
			t.Errorf("%s of a removed file: %v; want ESTALE naming /big", name, err)
		}
	}
}

// waitDatafilesGone waits until the reaper has removed file a's datafiles
// from every I/O server holding one.
func waitDatafilesGone(t *testing.T, c *client.Client, a meta.Attr) {
	t.Helper()
	for _, srv := range a.Servers {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			dfs, err := c.ListDatafiles(context.Background(), int(srv))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(dfs, func(d data.DatafileInfo) bool { return d.ID == uint64(a.ID) }) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("10 s after rm, data%d still lists datafile %d", srv, a.ID)
			}
		}
	}
}

// TestMissingDatafileOfALiveFileIsAHole: a datafile an I/O server lost
// (in a crash before the file's first sync; or never made, in a store
// written before creates made every datafile) reads as a hole while the
// file is still there: the client asks the metadata server, and only a
// removed file is ESTALE. pario fsck reports the lost datafile.
func TestMissingDatafileOfALiveFileIsAHole(t *testing.T) {
	l := startLocal(t, false)
	c := localClient(t, l)
	ctx := context.Background()
	f, err := c.Create(ctx, "/lost", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("pario"), 1<<18) // 20 strips of 64 KiB: 5 on each server
	if _, err := f.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	a := f.Attr()
	if len(a.Servers) != 4 || a.Layout.Dist != "simple_stripe" {
		t.Fatalf("layout %s over %d servers; the test wants simple_stripe over 4", a.Layout, len(a.Servers))
	}
	lost := a
	lost.Nlink, lost.Servers = 0, []uint32{a.Servers[1]}
	if err := c.RemoveData(ctx, "/lost", lost); err != nil {
		t.Fatal(err)
	}
	for s := 1; s < 20; s += 4 { // datafile 1's strips
		clear(want[s<<16 : (s+1)<<16])
	}
	got := make([]byte, len(want))
	if n, err := f.ReadAt(got, 0); n != len(want) || err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadAt of a file with a lost datafile: %d, %v (equal: %v); want %d bytes, datafile 1's strips zero", n, err, bytes.Equal(got, want), len(want))
	}
	if size, err := f.Size(ctx); size != int64(len(want)) || err != nil {
		t.Fatalf("Size: %d, %v; want %d", size, err, len(want))
	}
	st, err := c.Stat(ctx, "/lost")
	if err != nil || st.Size != int64(len(want)) {
		t.Fatalf("Stat: %+v, %v", st, err)
	}
	usages, errs := c.UsagesOf(ctx, []meta.Attr{a})
	if errs[0] != nil || usages[0].Size != int64(len(want)) {
		t.Fatalf("UsagesOf: %+v, %v", usages[0], errs[0])
	}
}
