package meta

import (
	"slices"
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
)

// TestPinnedPlacement: servers= puts a file's datafiles on the servers it
// names, at create and at a layout change of an empty file; the round
// robin goes on for the others; a directory default cannot pin.
func TestPinnedPlacement(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 8})
	l, err := dist.ParseLayout("varstrip:strips=0:701;1:701;2:701,servers=5;2;7")
	if err != nil {
		t.Fatal(err)
	}
	a := okAttr(t)(s.Create(ctx, "/pinned", 0o644, l))
	if !slices.Equal(a.Servers, []uint32{5, 2, 7}) {
		t.Errorf("pinned create: servers %v, want [5 2 7]", a.Servers)
	}
	if a.Layout.Servers != "" || a.Layout.Datafiles != 3 {
		t.Errorf("stored layout %+v: the pin belongs in the server list only", a.Layout)
	}
	if got := okAttr(t)(s.Lookup(ctx, "/pinned")); !slices.Equal(got.Servers, a.Servers) {
		t.Errorf("lookup: servers %v", got.Servers)
	}
	b := okAttr(t)(s.Create(ctx, "/free", 0o644, dist.Layout{Dist: dist.SimpleStripe, Datafiles: 2}))
	if len(b.Servers) != 2 || b.Servers[1] != (b.Servers[0]+1)%8 {
		t.Errorf("unpinned create: servers %v, want two in a row", b.Servers)
	}

	e := okAttr(t)(s.Create(ctx, "/empty", 0o644, dist.Layout{}))
	pin, _ := dist.ParseLayout("simple_stripe:servers=3;1")
	e = okAttr(t)(s.SetLayout(ctx, "/empty", pin, true))
	if !slices.Equal(e.Servers, []uint32{3, 1}) {
		t.Errorf("setlayout with a pin: servers %v, want [3 1]", e.Servers)
	}

	for _, bad := range []string{"simple_stripe:servers=1;9", "basic:servers=8"} {
		l, err := dist.ParseLayout(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, "/bad", 0o644, l); errnoOf(t, err) != syscall.EINVAL {
			t.Errorf("create with %q on 8 servers: %v, want EINVAL", bad, err)
		}
	}
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	if _, err := s.SetLayout(ctx, "/d", pin, false); errnoOf(t, err) != syscall.EINVAL {
		t.Errorf("pinned directory default: %v, want EINVAL", err)
	}
}
