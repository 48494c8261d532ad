package client_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// What a context expects a path to resolve to (meta.WithExpect) reaches
// the metadata server with each path request: a path that now leads to
// another directory is refused with ESTALE, naming the path, and nothing
// changes; the same request without an expectation (the native client's
// path ops) acts on the path as given.
func TestExpectOverTheWire(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	for _, d := range []string{"/A", "/A/D"} {
		if err := c.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	oldD, err := c.Lookup(ctx, "/A/D")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, "/A", "/B"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/A", "/A/D", "/A/D/sub"} {
		if err := c.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stale := meta.WithExpect(ctx, meta.Expect{Dir: oldD.ID})
	ops := map[string]func(ctx context.Context) error{
		"lookup": func(ctx context.Context) error { _, err := c.Lookup(ctx, "/A/D/sub"); return err },
		"create": func(ctx context.Context) error {
			_, err := c.Create(ctx, "/A/D/f", client.CreateOptions{Exclusive: true})
			return err
		},
		"mkdir":  func(ctx context.Context) error { return c.Mkdir(ctx, "/A/D/e", 0o755) },
		"remove": func(ctx context.Context) error { return c.Remove(ctx, "/A/D/sub") },
		"rename": func(ctx context.Context) error { return c.Rename(ctx, "/A/D/sub", "/A/D/sub2") },
	}
	for _, name := range []string{"lookup", "create", "mkdir", "remove", "rename"} {
		err := ops[name](stale)
		if !errors.Is(err, syscall.ESTALE) || !strings.Contains(err.Error(), "/A/D") {
			t.Errorf("%s expecting the moved directory: %v, want ESTALE naming /A/D", name, err)
		}
	}
	ents, err := c.Readdir(ctx, "/A/D")
	if err != nil || len(ents) != 1 || ents[0].Name != "sub" {
		t.Fatalf("/A/D after the refused ops: %v, %v; want only sub", ents, err)
	}
	for _, name := range []string{"lookup", "create", "mkdir", "rename"} {
		if err := ops[name](ctx); err != nil {
			t.Errorf("%s without an expectation: %v", name, err)
		}
	}
}
