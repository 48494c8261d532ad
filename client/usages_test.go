package client_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"pgregory.net/rapid"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/server/meta"
)

// UsagesOf answers for each file exactly what UsageOf does, whatever the
// layout (stuffed, basic, striped, varstrip, twod), holes and batch
// boundaries; a directory is zero.
func TestUsagesOfEqualsUsageOf(t *testing.T) {
	ctx := context.Background()
	l, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), Stuffing: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := l.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	layouts := []string{
		"", // the default, stuffed while small
		"basic",
		"simple_stripe:strip_size=4096",
		"varstrip:strips=0:3000;1:5000;2:1000;3:7000",
		"twod_stripe:num_groups=2,strip_size=4096,group_strip_factor=3",
	}
	iter := 0
	rapid.Check(t, func(rt *rapid.T) {
		iter++
		dir := fmt.Sprintf("/p%d", iter)
		if err := c.Mkdir(ctx, dir, 0o755); err != nil {
			rt.Fatal(err)
		}
		var attrs []meta.Attr
		for i := range rapid.IntRange(0, 8).Draw(rt, "files") {
			if rapid.IntRange(0, 9).Draw(rt, "dir") == 0 {
				a, err := c.MkdirAttr(ctx, fmt.Sprintf("%s/d%d", dir, i), 0o755)
				if err != nil {
					rt.Fatal(err)
				}
				attrs = append(attrs, a)
				continue
			}
			opts := client.CreateOptions{Mode: client.DefaultFileMode}
			if s := rapid.SampledFrom(layouts).Draw(rt, "layout"); s != "" {
				opts.Layout = mustLayout(t, s)
			}
			path := fmt.Sprintf("%s/f%d", dir, i)
			f, err := c.Create(ctx, path, opts)
			if err != nil {
				rt.Fatal(err)
			}
			for range rapid.IntRange(0, 3).Draw(rt, "writes") {
				off := rapid.Int64Range(0, 200_000).Draw(rt, "off")
				n := rapid.IntRange(1, 30_000).Draw(rt, "len")
				if _, err := f.WriteAt(make([]byte, n), off); err != nil {
					rt.Fatal(err)
				}
			}
			if rapid.Bool().Draw(rt, "truncate") {
				if err := f.Truncate(rapid.Int64Range(0, 300_000).Draw(rt, "size")); err != nil {
					rt.Fatal(err)
				}
			}
			f.Close()
			// As a listing sees it.
			a, err := c.Lookup(ctx, path)
			if err != nil {
				rt.Fatal(err)
			}
			attrs = append(attrs, a)
		}
		defer client.SetUsageBatchMax(rapid.IntRange(1, 5).Draw(rt, "batch"))()
		got, errs := c.UsagesOf(ctx, attrs)
		if len(got) != len(attrs) || len(errs) != len(attrs) {
			rt.Fatalf("%d usages and %d errors for %d files", len(got), len(errs), len(attrs))
		}
		for i, a := range attrs {
			want, err := c.UsageOf(ctx, a)
			if err != nil {
				rt.Fatalf("UsageOf file %d (%s, stuffed %v): %v", i, a.Layout, a.Stuffed, err)
			}
			if errs[i] != nil || got[i] != want {
				rt.Errorf("file %d (%s, stuffed %v): UsagesOf %+v, %v; UsageOf %+v", i, a.Layout, a.Stuffed, got[i], errs[i], want)
			}
		}
	})
}

// A file whose layout names a server the cluster lacks fails alone; the
// others in the call are answered.
func TestUsagesOfFailsPerFile(t *testing.T) {
	ctx := context.Background()
	l, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := l.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f, err := c.Create(ctx, "/a", client.CreateOptions{Mode: client.DefaultFileMode})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	good := f.Attr()
	bad := good
	bad.Servers = append([]uint32(nil), good.Servers...)
	bad.Servers[0] = 99
	got, errs := c.UsagesOf(ctx, []meta.Attr{bad, good})
	if errs[0] == nil || errs[1] != nil || got[1].Size != 5 {
		t.Errorf("UsagesOf(bad, good) = %+v, %v; want an error for the first only and size 5 for the second", got, errs)
	}
	// A datafile removed under the listing is what a size request says.
	if err := c.RemoveData(ctx, "/a", good); err != nil {
		t.Fatal(err)
	}
	want, werr := c.UsageOf(ctx, good)
	got, errs = c.UsagesOf(ctx, []meta.Attr{good})
	if got[0] != want || !errors.Is(errs[0], fs.ErrNotExist) != !errors.Is(werr, fs.ErrNotExist) {
		t.Errorf("after RemoveData: UsagesOf %+v, %v; UsageOf %+v, %v", got[0], errs[0], want, werr)
	}
}
