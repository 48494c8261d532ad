package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
)

// TestReadPastTheEndWhileAnotherClientAppends reads past the end of a
// file while another client appends to it, the append landing between
// the read's answers and the size that tells a hole from the end. The
// read must return the file as it was (the old end, io.EOF) or as it is
// now (the new bytes). It once returned the new size with zeros where the
// appended bytes are, which the file never held: the datafile had ended
// early at the read, and the size, taken after the append, put that end
// inside the file, so it read as a hole. Stuffed too: the append then
// unstuffs the file under the reader, whose handle still has it stuffed.
func TestReadPastTheEndWhileAnotherClientAppends(t *testing.T) {
	for _, stuffing := range []bool{false, true} {
		t.Run(fmt.Sprintf("stuffing=%v", stuffing), func(t *testing.T) {
			l := startLocal(t, stuffing)
			c, other := localClient(t, l), localClient(t, l)
			ctx := context.Background()
			f, err := c.Create(ctx, "/log", client.CreateOptions{Mode: 0o644, Layout: mustLayout(t, "simple_stripe:strip_size=4096")})
			if err != nil {
				t.Fatal(err)
			}
			head := bytes.Repeat([]byte{'a'}, 100)
			if _, err := f.WriteAt(head, 0); err != nil {
				t.Fatal(err)
			}
			if f.Attr().Stuffed != stuffing {
				t.Fatalf("stuffed %v; want %v", f.Attr().Stuffed, stuffing)
			}
			// Past the first strip: the second datafile gets some too.
			tail := bytes.Repeat([]byte{'b'}, 8000)
			var once sync.Once
			defer client.SetHook("short read", func() {
				once.Do(func() {
					g, err := other.Open(ctx, "/log")
					if err == nil {
						_, err = g.WriteAt(tail, int64(len(head)))
					}
					if err != nil {
						t.Errorf("the other client's append: %v", err)
					}
				})
			})()
			p := make([]byte, 3*4096)
			n, err := f.ReadAt(p, 0)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("ReadAt past the end: %d, %v; want io.EOF", n, err)
			}
			before, after := head, append(append([]byte{}, head...), tail...)
			if got := p[:n]; !bytes.Equal(got, before) && !bytes.Equal(got, after) {
				t.Fatalf("ReadAt returned %d bytes, %d of them zeros; want the %d before the append or the %d after it",
					n, bytes.Count(got, []byte{0}), len(before), len(after))
			}
		})
	}
}

// TestCheck: Check follows the file, not its name: a rename away, or
// another client's unstuffing, keeps the handle good; a rename over it
// makes it stale at once (its writes and syncs fail so only once the
// reaper has removed its datafiles), and so does a new layout, which the
// handle would not follow.
func TestCheck(t *testing.T) {
	l := startLocal(t, true)
	c, other := localClient(t, l), localClient(t, l)
	ctx := context.Background()
	f, err := c.Create(ctx, "/f", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx); err != nil {
		t.Fatalf("Check of a new file: %v", err)
	}
	if err := other.Rename(ctx, "/f", "/g"); err != nil {
		t.Fatal(err)
	}
	g, err := other.Open(ctx, "/g")
	if err == nil {
		_, err = g.WriteAt(make([]byte, 1<<20), 0) // unstuffs it
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx); err != nil {
		t.Fatalf("Check of a file renamed away and unstuffed: %v", err)
	}
	if _, err := other.Create(ctx, "/h", client.CreateOptions{Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if err := other.Rename(ctx, "/h", "/g"); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx); !errors.Is(err, syscall.ESTALE) || !strings.Contains(err.Error(), "/f was removed") {
		t.Fatalf("Check of a file replaced by a rename: %v; want ESTALE naming /f", err)
	}

	e, err := c.Create(ctx, "/e", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SetLayout(ctx, "/e", mustLayout(t, "simple_stripe:strip_size=4096")); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(ctx); !errors.Is(err, syscall.ESTALE) || !strings.Contains(err.Error(), "changed the layout of /e") {
		t.Fatalf("Check of a file given a new layout by another client: %v; want ESTALE saying so", err)
	}
}

// TestSizeWhileAnotherClientUnstuffs asks the size of a stuffed file
// through a handle that has it stuffed, while another client grows it
// past its first strip, unstuffing it, between the handle's look at the
// metadata server (stuffed) and its size request. The size must be the
// file's before the write or after it; it was the first datafile's
// alone (4096 of 10000 bytes), which the file never had.
func TestSizeWhileAnotherClientUnstuffs(t *testing.T) {
	l := startLocal(t, true)
	c, other := localClient(t, l), localClient(t, l)
	ctx := context.Background()
	// The last byte on the third datafile: the first alone says 4096.
	const grown = 10000
	for name, size := range map[string]func(f *client.File) (int64, error){
		"Size":  func(f *client.File) (int64, error) { return f.Size(ctx) },
		"Usage": func(f *client.File) (int64, error) { u, err := f.Usage(ctx); return u.Size, err },
	} {
		t.Run(name, func(t *testing.T) {
			p := "/" + name
			f, err := c.Create(ctx, p, client.CreateOptions{Mode: 0o644, Layout: mustLayout(t, "simple_stripe:strip_size=4096")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(make([]byte, 100), 0); err != nil {
				t.Fatal(err)
			}
			if !f.Attr().Stuffed {
				t.Fatal("the file is not stuffed")
			}
			var once sync.Once
			defer client.SetHook("size", func() {
				once.Do(func() {
					g, err := other.Open(ctx, p)
					if err == nil {
						_, err = g.WriteAt(bytes.Repeat([]byte{'x'}, grown), 0)
					}
					if err != nil {
						t.Errorf("the other client's write: %v", err)
					}
				})
			})()
			n, err := size(f)
			if err != nil || (n != 100 && n != grown) {
				t.Errorf("%s of a stuffed file another client grows to %d meanwhile: %d, %v; want 100 or %d", name, grown, n, err, grown)
			}
		})
	}
}

// TestCreateOfANameRemovedMeanwhile: a Create (not exclusive) that finds
// its name taken opens the file to truncate it; if another client removes
// it in between, the create is tried again and makes a new file, as
// open(2) with O_CREAT does. It failed with ENOENT.
func TestCreateOfANameRemovedMeanwhile(t *testing.T) {
	l := startLocal(t, false)
	c, other := localClient(t, l), localClient(t, l)
	ctx := context.Background()
	old, err := other.Create(ctx, "/f", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.WriteAt([]byte("old contents"), 0); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	defer client.SetHook("create exists", func() {
		once.Do(func() {
			if err := other.Remove(ctx, "/f"); err != nil {
				t.Errorf("the other client's remove: %v", err)
			}
		})
	})()
	f, err := c.Create(ctx, "/f", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatalf("Create of a name another client removed meanwhile: %v", err)
	}
	if _, err := f.WriteAt([]byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	g, err := other.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 10)
	if n, err := g.ReadAt(p, 0); n != 3 || !errors.Is(err, io.EOF) || string(p[:n]) != "new" {
		t.Fatalf("the new file reads %q, %v; want %q", p[:n], err, "new")
	}
}
