package meta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
)

// A caller whose tree of the namespace is out of date (a mount that
// still holds /A/D after another mount moved /A to /B and made a new
// /A/D/x) names the old path with the IDs it knew: every op is refused
// with ESTALE, naming the path and both IDs, and the new /A/D/x and /A/D
// are left as they were. The same ops with the IDs the path has now, or
// with none (the native client), act as before.
func TestExpectRefusesMovedPath(t *testing.T) {
	ctx := context.Background()
	s := openT(t, Options{Servers: 2})
	for _, p := range []string{"/A", "/A/D", "/A/D/sub"} {
		okAttr(t)(s.Mkdir(ctx, p, 0o755))
	}
	oldD := okAttr(t)(s.Lookup(ctx, "/A/D"))
	oldX := okAttr(t)(s.Create(ctx, "/A/D/x", 0o644, dist.Layout{}))
	okAttr(t)(s.Symlink(ctx, "t", "/A/D/l"))
	if _, err := s.Rename(ctx, "/A", "/B"); err != nil {
		t.Fatal(err)
	}
	okAttr(t)(s.Mkdir(ctx, "/A", 0o755))
	newD := okAttr(t)(s.Mkdir(ctx, "/A/D", 0o755))
	okAttr(t)(s.Mkdir(ctx, "/A/D/sub", 0o755))
	newX := okAttr(t)(s.Create(ctx, "/A/D/x", 0o644, dist.Layout{}))
	okAttr(t)(s.Symlink(ctx, "t", "/A/D/l"))

	mode := uint32(0o600)
	ops := []struct {
		name string
		x    Expect
		do   func(ctx context.Context) error
	}{
		{"lookup", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Lookup(ctx, "/A/D/x"); return err }},
		{"remove", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Remove(ctx, "/A/D/x"); return err }},
		{"create", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Create(ctx, "/A/D/y", 0o644, dist.Layout{}); return err }},
		{"mkdir", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Mkdir(ctx, "/A/D/y", 0o755); return err }},
		{"mknod", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Mknod(ctx, "/A/D/y", KindFIFO, 0o644, 0); return err }},
		{"symlink", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Symlink(ctx, "t", "/A/D/y"); return err }},
		{"link", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Link(ctx, oldX.ID, "/A/D/y"); return err }},
		{"rename from", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Rename(ctx, "/A/D/x", "/y"); return err }},
		{"rename to", Expect{To: oldD.ID}, func(ctx context.Context) error { _, err := s.Rename(ctx, "/B/D/x", "/A/D/x"); return err }},
		{"rmdir", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Remove(ctx, "/A/D/sub"); return err }},
		{"setattr", Expect{Self: oldD.ID}, func(ctx context.Context) error {
			_, err := s.SetAttr(ctx, "/A/D", AttrChanges{Mode: &mode})
			return err
		}},
		{"setattr of a file", Expect{Self: oldX.ID}, func(ctx context.Context) error {
			_, err := s.SetAttr(ctx, "/A/D/x", AttrChanges{Mode: &mode})
			return err
		}},
		{"readdir", Expect{Self: oldD.ID}, func(ctx context.Context) error { _, _, err := s.ReaddirPage(ctx, "/A/D", "", 0); return err }},
		{"readlink", Expect{Dir: oldD.ID}, func(ctx context.Context) error { _, err := s.Readlink(ctx, "/A/D/l"); return err }},
		{"setlayout", Expect{Self: oldD.ID}, func(ctx context.Context) error { _, err := s.SetLayout(ctx, "/A/D", dist.Layout{}, false); return err }},
	}
	for _, op := range ops {
		err := op.do(WithExpect(ctx, op.x))
		if !errors.Is(err, syscall.ESTALE) {
			t.Errorf("%s through the moved directory: %v, want ESTALE", op.name, err)
			continue
		}
		want := oldD.ID
		if op.name == "setattr of a file" {
			want = oldX.ID
		}
		if msg := err.Error(); !strings.Contains(msg, "/A/D") || !strings.Contains(msg, fmt.Sprint(want)) {
			t.Errorf("%s: error %q names neither the path nor the expected ID %d", op.name, msg, want)
		}
	}
	// Nothing at the old path changed.
	if a, err := s.Lookup(ctx, "/A/D/x"); err != nil || a.ID != newX.ID || a.Mode != newX.Mode {
		t.Errorf("/A/D/x after the refused ops: %+v, %v; want file %d untouched", a, err, newX.ID)
	}
	if a, err := s.Lookup(ctx, "/A/D"); err != nil || a.ID != newD.ID || a.Mode != newD.Mode {
		t.Errorf("/A/D after the refused ops: %+v, %v; want directory %d untouched", a, err, newD.ID)
	}
	for _, p := range []string{"/A/D/y", "/y"} {
		if _, err := s.Lookup(ctx, p); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%s: %v, want ENOENT (made by a refused op?)", p, err)
		}
	}
	if _, err := s.Lookup(ctx, "/A/D/sub"); err != nil {
		t.Errorf("/A/D/sub: %v, want it kept", err)
	}

	// The IDs the paths have now pass; no IDs pass (the native client).
	if _, err := s.Remove(WithExpect(ctx, Expect{Dir: oldD.ID}), "/B/D/x"); err != nil {
		t.Errorf("remove /B/D/x expecting its directory %d: %v", oldD.ID, err)
	}
	if _, err := s.SetAttr(WithExpect(ctx, Expect{Self: newD.ID}), "/A/D", AttrChanges{Mode: &mode}); err != nil {
		t.Errorf("setattr /A/D expecting %d: %v", newD.ID, err)
	}
	if _, err := s.Rename(WithExpect(ctx, Expect{Dir: newD.ID, To: oldD.ID}), "/A/D/x", "/B/D/x"); err != nil {
		t.Errorf("rename /A/D/x to /B/D/x expecting both directories: %v", err)
	}
	if _, err := s.Remove(ctx, "/B/D/x"); err != nil {
		t.Errorf("remove /B/D/x expecting nothing: %v", err)
	}
	if _, err := s.Lookup(WithExpect(ctx, Expect{Self: RootID}), "/"); err != nil {
		t.Errorf("lookup / expecting the root: %v", err)
	}
	if _, err := s.Lookup(WithExpect(ctx, Expect{Self: oldD.ID}), "/"); !errors.Is(err, syscall.ESTALE) {
		t.Errorf("lookup / expecting %d: %v, want ESTALE", oldD.ID, err)
	}
}
