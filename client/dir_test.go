package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
)

// startEmbedded starts an in-process cluster with its directory on tmpfs
// when there is one (a create is one fsynced metadata transaction; this
// test needs many, not their durability) and returns a client of it.
func startEmbedded(t *testing.T) *client.Client {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "pario-dir-")
	if err != nil {
		dir = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	ctx := context.Background()
	l, err := cluster.Start(ctx, cluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := l.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// createMany creates dir/name(i) for i in [0, n) from 16 goroutines.
func createMany(t *testing.T, c *client.Client, dir string, n int, name func(int) string) {
	t.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && failed.Load() == nil; i = int(next.Add(1) - 1) {
				if _, err := c.Create(ctx, dir+"/"+name(i), client.CreateOptions{Exclusive: true}); err != nil {
					failed.Store(&err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatalf("create: %v", *err)
	}
}

// TestLargeDirectoryListing: 20,000 files with 7-character names, more than
// one frame's worth of entries (which failed with "frame too large"), are
// listed whole, in byte order, by Readdir, by the Dir iterator and by a
// DirReader with small pages.
func TestLargeDirectoryListing(t *testing.T) {
	const n = 20_000
	c := startEmbedded(t)
	ctx := context.Background()
	if err := c.Mkdir(ctx, "/big", 0o755); err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("f%06d", i) }
	createMany(t, c, "/big", n, name)

	ents, err := c.Readdir(ctx, "/big")
	if err != nil {
		t.Fatalf("Readdir of %d entries: %v", n, err)
	}
	check := func(how string, got []string) {
		t.Helper()
		if len(got) != n {
			t.Fatalf("%s: %d entries, want %d", how, len(got), n)
		}
		for i, g := range got {
			if g != name(i) {
				t.Fatalf("%s: entry %d is %q, want %q", how, i, g, name(i))
			}
		}
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	check("Readdir", names)

	names = names[:0]
	for e, err := range c.Dir(ctx, "/big") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name)
	}
	check("Dir", names)

	names = names[:0]
	r := c.OpenDir("/big", 333)
	for {
		e, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name)
	}
	check("DirReader with pages of 333", names)
	if _, err := r.Next(ctx); err != io.EOF {
		t.Errorf("Next after the end: %v, want io.EOF", err)
	}

	// Pages are bounded by the limit asked and by the server's.
	for _, limit := range []int{1, 333, 0, 1 << 20} {
		page, next, err := c.ReaddirPage(ctx, "/big", "", limit)
		want := min(max(limit, 1), 1024)
		if limit == 0 {
			want = 1024
		}
		if err != nil || len(page) != want || next != page[len(page)-1].Name {
			t.Errorf("ReaddirPage(limit %d): %d entries, next %q, %v; want %d ending at next", limit, len(page), next, err, want)
		}
	}

	// Stopping early asks for no more pages, and is not an error.
	count := 0
	for _, err := range c.Dir(ctx, "/big") {
		if err != nil {
			t.Fatal(err)
		}
		if count++; count == 10 {
			break
		}
	}
}

func TestDirErrors(t *testing.T) {
	c := startEmbedded(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, "/file", client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error
	}{
		{"/nope", fs.ErrNotExist},
		{"/file", syscall.ENOTDIR},
	} {
		_, err := c.OpenDir(tc.path, 0).Next(ctx)
		if !errors.Is(err, tc.want) {
			t.Errorf("OpenDir(%q).Next: %v, want %v", tc.path, err, tc.want)
		}
		n := 0
		for _, err := range c.Dir(ctx, tc.path) {
			n++
			if !errors.Is(err, tc.want) {
				t.Errorf("Dir(%q): %v, want %v", tc.path, err, tc.want)
			}
		}
		if n != 1 {
			t.Errorf("Dir(%q) yielded %d times, want once (the error)", tc.path, n)
		}
	}
	// An empty directory lists nothing.
	if err := c.Mkdir(ctx, "/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenDir("/empty", 0).Next(ctx); err != io.EOF {
		t.Errorf("empty directory: %v, want io.EOF", err)
	}
}

// TestDirConcurrentChanges: files created and removed while a directory
// is read page by page are never listed twice, and every file present
// throughout is listed exactly once.
func TestDirConcurrentChanges(t *testing.T) {
	c := startEmbedded(t)
	ctx := context.Background()
	if err := c.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	const stable = 500
	stableName := func(i int) string { return fmt.Sprintf("s%04d", i*3) }
	createMany(t, c, "/d", stable, stableName)
	isStable := map[string]bool{}
	for i := range stable {
		isStable[stableName(i)] = true
	}
	stop := make(chan struct{})
	var churn atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Names before, among and after the stable ones.
				name := fmt.Sprintf("%c%04d", "ast"[r.IntN(3)], r.IntN(stable*3))
				if isStable[name] {
					continue
				}
				if r.IntN(2) == 0 {
					_, _ = c.Create(ctx, "/d/"+name, client.CreateOptions{Exclusive: true})
				} else {
					_ = c.Remove(ctx, "/d/"+name)
				}
				churn.Add(1)
			}
		})
	}
	for round := 0; round < 10 || churn.Load() < 2000; round++ {
		if round > 1000 {
			t.Fatalf("only %d creates and removes in %d rounds", churn.Load(), round)
		}
		seen := map[string]int{}
		r := c.OpenDir("/d", 17+round)
		for {
			e, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if seen[e.Name]++; seen[e.Name] > 1 {
				t.Fatalf("round %d: %q listed twice", round, e.Name)
			}
		}
		for name := range isStable {
			if seen[name] != 1 {
				t.Fatalf("round %d: %q, present throughout, listed %d times", round, name, seen[name])
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d creates and removes during the listings", churn.Load())
}
