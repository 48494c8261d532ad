package fusefs_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/fusefs"
)

// While this mount creates and removes names in a directory it made (so
// that it answers the lookups of absent names there itself), names made
// there at the same time through another mount show here at once, each
// checked right after its create returned, with no retry.
func TestAbsentNamesNotStaleUnderConcurrentCreates(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	const rounds, n = 3, 40
	for r := range rounds {
		dir := fmt.Sprint("d", r)
		if err := os.Mkdir(a.path(dir), 0o777); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // A's own creates and removes keep its names current
			defer wg.Done()
			for i := range n {
				name := a.path(dir, fmt.Sprint("a", i))
				f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
				if err != nil {
					t.Error(err)
					return
				}
				f.Close()
				if i%3 == 0 {
					if err := os.Remove(name); err != nil {
						t.Error(err)
						return
					}
				}
				if err := os.Mkdir(a.path(dir, fmt.Sprint("s", i)), 0o755); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range n {
				name := fmt.Sprint("b", i)
				if i%2 == 0 {
					writeFile(t, b.path(dir, name), []byte("b"))
				} else {
					// Into a directory A made within the directory.
					if err := os.Mkdir(b.path(dir, "s"+fmt.Sprint(i), name), 0o755); err != nil && !os.IsNotExist(err) {
						t.Error(err)
						return
					} else if err != nil {
						continue // A has not made it yet
					}
					if err := statErr(a.path(dir, "s"+fmt.Sprint(i), name)); err != nil {
						t.Errorf("round %d: %s made through B inside A's new directory: stat through A: %v", r, name, err)
					}
					continue
				}
				if err := statErr(a.path(dir, name)); err != nil {
					t.Errorf("round %d: %s made through B: stat through A right after: %v", r, name, err)
				}
			}
		}()
		wg.Wait()
	}
}

// A metadata server that restarts forgets the leases it gave: a name made
// after the restart, by a client that never knew this mount, shows here
// once its create has returned, though this mount knew the directory
// empty under its old lease.
func TestAbsentNamesNotStaleAcrossMetaRestart(t *testing.T) {
	t.Setenv("PARIO_LEASE", "3s")
	p := spawn(t)
	a := mount(t, p, fusefs.Options{OpTimeout: 2 * time.Second})
	waitLease(t, a)
	if err := os.Mkdir(a.path("d"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := statErr(a.path("d", "x")); !os.IsNotExist(err) {
		t.Fatalf("stat of an absent name: %v", err)
	}
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
	if err := p.StartMeta(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := p.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create(context.Background(), "/d/x", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := statErr(a.path("d", "x")); err != nil {
		t.Errorf("stat through the mount of a name made after the metadata server restarted: %v", err)
	}
}
