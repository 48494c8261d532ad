package medic_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// The receiver stores into a directory of the pario store: regenerated
// into a temporary pario path, renamed into place, nothing left on failure.
func TestParioStore(t *testing.T) {
	ctx := context.Background()
	l, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), DataServers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := medictest.Key(t)
	_, addr := serveConfig(t, medic.ServerConfig{Key: key, Store: medic.ParioStore(c, "/archive")})
	s := &site{key: key, addr: addr}
	data := report(30000)
	p := writeFile(t, "out.txt", data)
	rep, err := sendFile(t, s, p, "zstd", medic.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Send.Result.Path != "pario:/archive/out.txt" {
		t.Fatalf("stored at %s", rep.Send.Result.Path)
	}
	f, err := c.Open(ctx, "/archive/out.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)+10)
	n, _ := f.ReadAt(got, 0)
	if !bytes.Equal(got[:n], data) {
		t.Fatalf("pario copy differs (%d of %d bytes)", n, len(data))
	}
	// A failing regeneration leaves nothing in the pario directory.
	_, err = sendFile(t, s, writeFile(t, "lie.txt", []byte("x")), "liar-test", medic.SendOptions{})
	if !errors.Is(err, medic.ErrIntegrity) {
		t.Fatalf("got %v", err)
	}
	ents, err := c.Readdir(ctx, "/archive")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name != "out.txt" {
		t.Fatalf("/archive holds %+v", ents)
	}

	// A temporary that a dead receiver left is removed by the name its
	// Pending gave, relative to the store; other names are refused.
	st := medic.ParioStore(c, "/archive")
	pend, err := st.Begin(ctx, "sub/left.txt")
	if err != nil {
		t.Fatal(err)
	}
	pend.Write([]byte("partial"))
	if !strings.HasPrefix(pend.Temp(), "sub/.medic-left.txt.") {
		t.Fatalf("Temp() = %q", pend.Temp())
	}
	if err := st.RemoveTemp(ctx, "out.txt"); err == nil {
		t.Fatal("RemoveTemp took a stored output")
	}
	if err := st.RemoveTemp(ctx, pend.Temp()); err != nil {
		t.Fatal(err)
	}
	if ents, _ := c.Readdir(ctx, "/archive/sub"); len(ents) != 0 {
		t.Fatalf("/archive/sub holds %+v", ents)
	}
}
