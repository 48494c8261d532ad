package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
)

// TestLsAndRmPaged: pario ls lists directories of several pages whole and
// in byte order, ls -l too, and rm -r removes a tree whose directories
// each span several pages.
func TestLsAndRmPaged(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "pario-ls-") // tmpfs: fsyncs cost nothing
	if err != nil {
		dir = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	ctx := context.Background()
	l := startLocal(t, cluster.Config{Dir: dir})
	c := dialLocal(t, l)

	// /t: 2,100 files and two directories; /t/d1: 1,500 files and one
	// directory of 3; /t/d2 empty. Names sort differently as strings and
	// as numbers, and in byte order uppercase comes first.
	var want []string
	for _, d := range []string{"/t", "/t/d1", "/t/d1/sub", "/t/d2"} {
		if err := c.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	create := func(p string) {
		if _, err := c.Create(ctx, p, client.CreateOptions{Exclusive: true}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2100 {
		name := fmt.Sprintf("f%d", i)
		if i%100 == 0 {
			name = fmt.Sprintf("F%d", i)
		}
		create("/t/" + name)
		want = append(want, name)
	}
	want = append(want, "d1", "d2")
	slices.Sort(want)
	for i := range 1500 {
		create(fmt.Sprintf("/t/d1/%05d", i))
	}
	for i := range 3 {
		create(fmt.Sprintf("/t/d1/sub/%d", i))
	}

	cf := l.ClusterFile
	if got := strings.Fields(run(t, cf, "ls", "/t")); !slices.Equal(got, want) {
		t.Fatalf("pario ls /t: %d names, want %d in byte order", len(got), len(want))
	}
	long := strings.Split(strings.TrimSpace(run(t, cf, "ls", "-l", "/t/d1")), "\n")
	if len(long) != 1501 || !strings.Contains(long[0], "00000") || !strings.HasSuffix(strings.Fields(long[1500])[6], "sub") {
		t.Fatalf("pario ls -l /t/d1: %d lines (want 1501), first %q, last %q", len(long), long[0], long[len(long)-1])
	}

	run(t, cf, "rm", "-r", "/t")
	if files, dirs, err := c.MetaStats(ctx); err != nil || files != 0 || dirs != 1 {
		t.Fatalf("after rm -r /t: %d files and %d directories (%v), want 0 and the root", files, dirs, err)
	}
}
