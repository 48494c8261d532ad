package fusefs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pario/pario/fusefs"
)

func TestLayoutThroughExtendedAttributes(t *testing.T) {
	need(t, "getfattr", "setfattr", "dd")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	ctx := context.Background()
	get := func(path string) string {
		t.Helper()
		return strings.TrimSpace(sh(t, "getfattr --absolute-names --only-values -n user.pario.layout "+path))
	}

	// A file created with no layout anywhere gets the default.
	writeFile(t, m.path("plain"), []byte("x"))
	if got := get(m.path("plain")); got != "simple_stripe:strip_size=65536,num_datafiles=4" {
		t.Errorf("default layout: %q", got)
	}
	if out := sh(t, "getfattr --absolute-names -d -m - "+m.path("plain")); !strings.Contains(out, `user.pario.servers="data`) {
		t.Errorf("getfattr -d:\n%s", out)
	}

	// On a directory: the default its new files inherit.
	sh(t, fmt.Sprintf("mkdir %[1]s/runs && setfattr -n user.pario.layout -v simple_stripe:strip_size=1048576 %[1]s/runs", m.Dir))
	if got := get(m.path("runs")); got != "simple_stripe:strip_size=1048576" {
		t.Errorf("directory default: %q", got)
	}
	sh(t, fmt.Sprintf("mkdir %[1]s/runs/today && dd if=/dev/urandom of=%[1]s/runs/today/out.dat bs=1M count=3 status=none", m.Dir))
	if got := get(m.path("runs", "today", "out.dat")); got != "simple_stripe:strip_size=1048576,num_datafiles=4" {
		t.Errorf("inherited layout: %q", got)
	}
	a, err := m.c.Lookup(ctx, "/runs/today/out.dat")
	if err != nil || a.Layout.Params != "strip_size=1048576" {
		t.Errorf("layout in the store: %v %v", a.Layout, err)
	}

	// On an empty new file: its own layout, which its data then follows.
	sh(t, fmt.Sprintf(`touch %[1]s/two
setfattr -n user.pario.layout -v simple_stripe:strip_size=262144,num_datafiles=2 %[1]s/two
dd if=/dev/urandom of=%[1]s/two bs=1M count=1 conv=notrunc status=none`, m.Dir))
	if got := get(m.path("two")); got != "simple_stripe:strip_size=262144,num_datafiles=2" {
		t.Errorf("layout of an empty file: %q", got)
	}
	f, err := m.c.Open(ctx, "/two")
	if err != nil {
		t.Fatal(err)
	}
	dfs, err := f.Datafiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dfs) != 2 || dfs[0].Size != 512<<10 || dfs[1].Size != 512<<10 {
		t.Errorf("datafiles of /two: %+v", dfs)
	}

	// Set through a path while the file is open: the open descriptor
	// writes with the new layout.
	g, err := os.Create(m.path("open"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	sh(t, "setfattr -n user.pario.layout -v basic "+m.path("open"))
	if _, err := g.Write(randomBytes(t, 300000)); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if f, err := m.c.Open(ctx, "/open"); err != nil {
		t.Fatal(err)
	} else if dfs, err := f.Datafiles(ctx); err != nil || len(dfs) != 1 || dfs[0].Size != 300000 {
		t.Errorf("datafiles of /open: %+v %v", dfs, err)
	}

	// Refusals, each with a clear errno.
	for _, tc := range []struct{ cmd, want string }{
		{"setfattr -n user.pario.layout -v simple_stripe:strip_size=4096 " + m.path("runs", "today", "out.dat"), "Device or resource busy"},
		{"setfattr -n user.pario.layout -v no_such_dist " + m.path("runs"), "Invalid argument"},
		{"setfattr -n user.pario.layout -v simple_stripe:num_datafiles=9 " + m.path("runs"), "Invalid argument"},
		{"setfattr -n user.other -v 1 " + m.path("plain"), "Operation not supported"},
		{"setfattr -n user.pario.servers -v data0 " + m.path("plain"), "Operation not permitted"},
		{"getfattr -n user.pario.layout " + m.Dir, "No such attribute"},
	} {
		out, err := shErr(tc.cmd)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %v, want %q:\n%s", tc.cmd, err, tc.want, out)
		}
	}
	// Setting the layout a file already has is no change, even with data.
	sh(t, "setfattr -n user.pario.layout -v simple_stripe:strip_size=1m "+m.path("runs", "today", "out.dat"))

	// Removing a directory's default: new files inherit from above again.
	sh(t, fmt.Sprintf("setfattr -x user.pario.layout %[1]s/runs && touch %[1]s/runs/later", m.Dir))
	if got := get(m.path("runs", "later")); got != "simple_stripe:strip_size=65536,num_datafiles=4" {
		t.Errorf("after removing the default: %q", got)
	}
}
