package main

import (
	"context"
	"strings"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
)

// pario ls -l shows every file's size as its datafiles give it, whatever
// the layout (stuffed, one datafile, striped, sparse), sizes asked for a
// page at a time; a directory or a symbolic link is not asked.
func TestLsLongSizes(t *testing.T) {
	ctx := context.Background()
	l := startLocal(t, cluster.Config{Stuffing: true})
	c := dialLocal(t, l)
	if err := c.Mkdir(ctx, "/s", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Mkdir(ctx, "/s/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"dir": "", "empty": "0", "stuffed": "5", "basic": "70001", "striped": "300000", "sparse": "1073741825"}
	for _, tc := range []struct {
		name, layout string
		off          int64
		n            int
	}{
		{"empty", "", 0, 0},
		{"stuffed", "", 0, 5},
		{"basic", "basic", 1, 70000},
		{"striped", "simple_stripe:strip_size=4096", 0, 300000},
		{"sparse", "simple_stripe:strip_size=65536", 1 << 30, 1},
	} {
		opts := client.CreateOptions{Mode: client.DefaultFileMode}
		if tc.layout != "" {
			l, err := dist.ParseLayout(tc.layout)
			if err != nil {
				t.Fatal(err)
			}
			opts.Layout = l
		}
		f, err := c.Create(ctx, "/s/"+tc.name, opts)
		if err != nil {
			t.Fatal(err)
		}
		if tc.n > 0 {
			if _, err := f.WriteAt(make([]byte, tc.n), tc.off); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.Symlink(ctx, "stuffed", "/s/link"); err != nil {
		t.Fatal(err)
	}
	want["link"] = "7"
	lines := strings.Split(strings.TrimSpace(run(t, l.ClusterFile, "ls", "-l", "/s")), "\n")
	if len(lines) != len(want) {
		t.Fatalf("pario ls -l /s: %d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 7 {
			t.Fatalf("ls -l line %q: too few columns", line)
		}
		name, size := f[6], f[3]
		w, ok := want[name]
		if !ok {
			t.Errorf("ls -l line %q: unexpected name %q", line, name)
			continue
		}
		if w != "" && size != w {
			t.Errorf("ls -l line %q: size %s, want %s", line, size, w)
		}
	}
}
