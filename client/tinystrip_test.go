package client_test

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/pario/pario/client"
)

// TestTinyStripsBoundedMemory: a file with 1-byte strips round-trips, and
// a request costs the client memory in proportion to its bytes. A 16 MiB
// file at strip_size=1 once made the client allocate 1.9 GB.
func TestTinyStripsBoundedMemory(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	f, err := c.Create(ctx, "/tiny", client.CreateOptions{Layout: mustLayout(t, "simple_stripe:strip_size=1")})
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, 4<<20)
	measure := func(what string, fn func()) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		// The staged copies (one request's bytes) plus the wire's buffers.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*uint64(len(data)) {
			t.Errorf("%s of %d bytes at 1-byte strips allocated %d bytes; want at most 3 times the request", what, len(data), alloc)
		}
	}
	measure("write", func() {
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
	})
	back := make([]byte, len(data)+1000)
	measure("read", func() {
		n, err := f.ReadAt(back, 0)
		if n != len(data) || err != io.EOF {
			t.Fatalf("ReadAt past the end: %d, %v; want %d, EOF", n, err, len(data))
		}
	})
	if !bytes.Equal(back[:len(data)], data) {
		t.Fatal("read back differs from what was written")
	}
	// An unaligned read in the middle, across a hole written later.
	if _, err := f.WriteAt([]byte("end"), int64(len(data))+5000); err != nil {
		t.Fatal(err)
	}
	mid := make([]byte, 3001+5000+3)
	if _, err := f.ReadAt(mid, int64(len(data))-3001); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), data[len(data)-3001:]...), make([]byte, 5000)...), "end"...)
	if !bytes.Equal(mid, want) {
		t.Fatal("unaligned read across the hole differs")
	}
}

// TestTinyMaxRequestBoundedMemory: a client given a request cap of one
// byte (Options.MaxRequest) still moves data at a cost in proportion to
// it: the cap is raised to client.MinRequest. Before, every byte was a
// request of its own, with its goroutine, extent and frame: a write and
// a read of 256 KiB allocated 1 GB.
func TestTinyMaxRequestBoundedMemory(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, func(o *client.Options) { o.MaxRequest = 1 })
	ctx := context.Background()
	f, err := c.Create(ctx, "/capped", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, 256<<10)
	back := make([]byte, len(data))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(back, 0); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// TotalAlloc counts the whole test process, its background goroutines
	// too: a write and a read of the data measure 0.3 to 0.7 MB here, and
	// past 1 MB under the race detector. The defect allocated 4000 times
	// the data.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(len(data)) {
		t.Errorf("a write and a read of %d bytes with MaxRequest=1 allocated %d bytes; want at most 8 times the data", len(data), alloc)
	}
	if !bytes.Equal(back, data) {
		t.Fatal("read back differs from what was written")
	}
}
