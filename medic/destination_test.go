package medic_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// TestDestinationThatCannotHoldTheOutput: a destination name that is a
// directory at the receiver, or lies under a file there, is refused at
// the offer, before a byte of the container is sent, naming the path.
// Before, the whole container was sent and regenerated and the rename
// failed ("rename dest/.medic-isdir.123.tmp dest/isdir: file exists").
func TestDestinationThatCannotHoldTheOutput(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	os.Mkdir(filepath.Join(s.dest, "isdir"), 0o755)
	os.WriteFile(filepath.Join(s.dest, "afile"), []byte("x\n"), 0o644)
	p := writeFile(t, "out.txt", report(2000))
	for _, c := range []struct{ as, want string }{
		{"isdir", `destination "isdir": ` + filepath.Join(s.dest, "isdir") + " is a directory at the receiver"},
		{"afile/x", `destination "afile/x": ` + filepath.Join(s.dest, "afile") + " is a file at the receiver, not a directory"},
		{"afile/x/y", `destination "afile/x/y": ` + filepath.Join(s.dest, "afile") + " is a file at the receiver"},
	} {
		rep, err := sendFile(t, s, p, "zstd", medic.SendOptions{Name: c.as})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("send as %s: %v, want %q", c.as, err, c.want)
			continue
		}
		if rep.Send != nil && rep.Send.Sent != 0 {
			t.Errorf("send as %s: %+v sent, want nothing before the refusal", c.as, rep.Send)
		}
	}
	onlyFiles(t, s.dest, "afile", "isdir")
	// A file in the directory is fine.
	if _, err := sendFile(t, s, p, "zstd", medic.SendOptions{Name: "isdir/out.txt"}); err != nil {
		t.Fatal(err)
	}
}

// TestParioStoreCheck: the same refusals in the pario store.
func TestParioStoreCheck(t *testing.T) {
	ctx := context.Background()
	l, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), DataServers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.MkdirAll(ctx, "/archive/isdir", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create(ctx, "/archive/afile", client.CreateOptions{Mode: client.DefaultFileMode})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st := medic.ParioStore(c, "/archive")
	for name, want := range map[string]string{
		"isdir":   "pario:/archive/isdir is a directory at the receiver",
		"afile/x": "pario:/archive/afile is a file at the receiver",
	} {
		if err := st.Check(ctx, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s): %v, want %q", name, err, want)
		}
	}
	for _, name := range []string{"new", "isdir/new", "new/deeper/x", "afile"} {
		if err := st.Check(ctx, name); err != nil {
			t.Errorf("Check(%s): %v", name, err)
		}
	}
}

// TestReceiverDirRemovedWhileItRuns: the receiver's directory (with its
// staging area inside) removed while it runs is made again by the next
// send. Before, every send failed until a restart, naming a staged part
// ("open DIR/.medic-staging/ID.part: no such file or directory"), even
// once the directory was back.
func TestReceiverDirRemovedWhileItRuns(t *testing.T) {
	key := medictest.Key(t)
	dest := filepath.Join(t.TempDir(), "dest")
	_, addr := serveConfig(t, medic.ServerConfig{Key: key, Store: medic.DirStore(dest), StagingDir: filepath.Join(dest, ".medic-staging")})
	if err := os.RemoveAll(dest); err != nil {
		t.Fatal(err)
	}
	s := &site{key: key, addr: addr, dest: dest}
	data := report(2000)
	p := writeFile(t, "out.txt", data)
	if _, err := sendFile(t, s, p, "zstd", medic.SendOptions{}); err != nil {
		t.Fatalf("send after the receiver's directory was removed: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "out.txt")); string(b) != string(data) {
		t.Fatal("the stored output differs")
	}
}
