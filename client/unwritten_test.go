package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/data"
)

// An empty file costs no datafile file on any I/O server and a small one
// a file only where its bytes are (server/data/unwritten.go), yet every
// server lists all of a file's datafiles, fsck finds nothing, and the
// files survive a kill -9 of every I/O server: their records were synced
// with the pool that made them.
func TestUnwrittenDatafilesEndToEnd(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()
	const layout = "simple_stripe:strip_size=65536"
	var empty, small []*client.File
	for i := range 8 {
		f, err := c.Create(ctx, fmt.Sprintf("/empty-%d", i), client.CreateOptions{Layout: mustLayout(t, layout)})
		if err != nil {
			t.Fatal(err)
		}
		empty = append(empty, f)
		small = append(small, writeFile(t, c, fmt.Sprintf("/small-%d", i), layout, 1000))
	}
	onDisk := func(idx int, id uint64) bool {
		_, err := os.Stat(datafilePath(p.DataDir(idx), id))
		return err == nil
	}
	check := func(when string) {
		t.Helper()
		for _, f := range empty {
			a := f.Attr()
			for _, srv := range a.Servers {
				if onDisk(int(srv), uint64(a.ID)) {
					t.Fatalf("%s: empty file %d has a datafile file on data%d", when, a.ID, srv)
				}
			}
		}
		for _, f := range small {
			a := f.Attr()
			for k, srv := range a.Servers {
				if got, want := onDisk(int(srv), uint64(a.ID)), k == 0; got != want {
					t.Fatalf("%s: 1000-byte file %d, datafile %d on data%d: a file: %v, want %v", when, a.ID, k, srv, got, want)
				}
			}
		}
		listed := map[[2]uint64]bool{}
		for i := range p.File.Data {
			dfs, err := c.ListDatafiles(ctx, i)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dfs {
				listed[[2]uint64{uint64(i), d.ID}] = true
			}
		}
		for _, f := range append(empty, small...) {
			a := f.Attr()
			for _, srv := range a.Servers {
				if !listed[[2]uint64{uint64(srv), uint64(a.ID)}] {
					t.Fatalf("%s: data%d does not list datafile %d", when, srv, a.ID)
				}
			}
		}
		res, err := c.Fsck(ctx, client.FsckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Clean() {
			t.Fatalf("%s: fsck: %+v", when, res.Findings)
		}
	}
	check("before the kills")

	for i := range p.File.Data {
		if err := p.Kill(fmt.Sprintf("data%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := p.StartData(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	check("after kill -9 of every I/O server")

	// A write to an empty file after the restarts makes its file; a
	// write to a removed one is stale and makes nothing.
	want := randomBytes(t, 3<<16)
	if _, err := empty[0].WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := empty[0].ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back after the first write: %v", err)
	}
	if err := c.Remove(ctx, "/empty-1"); err != nil {
		t.Fatal(err)
	}
	// The metadata server's reaper removes the datafiles after answering.
	a := empty[1].Attr()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		dfs, err := c.ListDatafiles(ctx, int(a.Servers[0]))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(dfs, func(d data.DatafileInfo) bool { return d.ID == uint64(a.ID) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after rm, data%d still lists datafile %d", a.Servers[0], a.ID)
		}
	}
	if _, err := empty[1].WriteAt([]byte("late"), 0); !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("write to a removed empty file: %v, want ESTALE", err)
	}
	for _, srv := range a.Servers {
		if onDisk(int(srv), uint64(a.ID)) {
			t.Fatalf("a write to removed file %d made its datafile on data%d", a.ID, srv)
		}
	}
}
