package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
)

// These tests run an embedded cluster through its life: stop, restore,
// start. Each failed on the code where writes created datafiles.

func startLocal(t *testing.T, dir string) *Local {
	t.Helper()
	l, err := Start(context.Background(), Config{Dir: dir, DataServers: 4})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func dial(t *testing.T, l *Local) *client.Client {
	t.Helper()
	c, err := l.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// content is file name's bytes in these tests: n bytes no other file has.
func content(name string, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = name[i%len(name)] ^ byte(i/len(name))
	}
	return b
}

func writeFile(t *testing.T, c *client.Client, path string, p []byte) {
	t.Helper()
	ctx := context.Background()
	f, err := c.Create(ctx, path, client.CreateOptions{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(p, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, c *client.Client, path string) []byte {
	t.Helper()
	ctx := context.Background()
	f, err := c.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	size, err := f.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, size)
	if n, err := f.ReadAt(p, 0); n != len(p) || err != nil && err != io.EOF {
		t.Fatalf("read %s: %d of %d bytes, %v", path, n, len(p), err)
	}
	return p
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// datafiles lists the datafiles of every I/O server of an embedded
// cluster in dir, by server name.
func datafiles(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for i := range 4 {
		name := fmt.Sprintf("data%d", i)
		m, err := filepath.Glob(filepath.Join(dir, name, "df", "*", "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			out[name] = append(out[name], filepath.Base(p))
		}
	}
	return out
}

// A meta.db restored from a backup taken before /secret-report.txt was
// made: files made afterwards read only their own bytes (the issue's
// 1-byte /newfile.txt read back as 64,893 bytes of the secret report).
func TestRestoredMetaDBNeverMixesFiles(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "meta", "meta.db")
	want := map[string][]byte{"/before.txt": content("/before.txt", 100000)}

	l := startLocal(t, dir)
	writeFile(t, dial(t, l), "/before.txt", want["/before.txt"])
	l.Close()
	copyFile(t, db, filepath.Join(dir, "meta.db.backup"))

	l = startLocal(t, dir)
	c := dial(t, l)
	writeFile(t, c, "/secret-report.txt", content("/secret-report.txt", 64893))
	for i := range 20 { // more files than one ID, on every server
		writeFile(t, c, fmt.Sprintf("/later%d", i), content(fmt.Sprintf("/later%d", i), 70000+i))
	}
	l.Close()
	copyFile(t, filepath.Join(dir, "meta.db.backup"), db)

	l = startLocal(t, dir)
	defer l.Close()
	c = dial(t, l)
	for i := range 30 {
		name := fmt.Sprintf("/new%d.txt", i)
		want[name] = content(name, 1+i*5000)
		writeFile(t, c, name, want[name])
	}
	ents, err := c.Readdir(context.Background(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Fatalf("namespace holds %d entries, want %d", len(ents), len(want))
	}
	for _, e := range ents {
		path := "/" + e.Name
		if got := readFile(t, c, path); !bytes.Equal(got, want[path]) {
			t.Errorf("%s reads %d bytes, want its own %d (equal: %v)", path, len(got), len(want[path]), bytes.Equal(got, want[path]))
		}
	}
}

// A metadata server on an empty directory against I/O servers that hold
// data refuses to start and says how to recover; with --adopt-data it
// starts, and its files read only their own bytes.
func TestFreshMetaDirRefusesServersWithData(t *testing.T) {
	dir := t.TempDir()
	l := startLocal(t, dir)
	old := content("/old", 200000)
	writeFile(t, dial(t, l), "/old", old)
	l.Close()
	if err := os.RemoveAll(filepath.Join(dir, "meta")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second try is refused the same way
		l, err := Start(context.Background(), Config{Dir: dir, DataServers: 4})
		if err == nil {
			l.Close()
			t.Fatal("metadata server started on an empty directory against I/O servers with data")
		}
		for _, w := range []string{"refusing to start", "another cluster incarnation", "I/O server data", "restore meta.db", "empty directories", "--adopt-data"} {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("error does not say %q:\n%v", w, err)
			}
		}
		t.Log(err)
	}
	l, err := Start(context.Background(), Config{Dir: dir, DataServers: 4, AdoptData: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := dial(t, l)
	for i := range 8 {
		name := fmt.Sprintf("/n%d", i)
		writeFile(t, c, name, []byte{byte(i)})
		if got := readFile(t, c, name); !bytes.Equal(got, []byte{byte(i)}) {
			t.Fatalf("%s reads %d bytes, want 1", name, len(got))
		}
	}
}

// rm while another client writes: once the metadata server has removed
// the datafiles (after answering the rm), the writer's later writes and
// syncs fail naming the path, and nothing is recreated on any I/O server.
func TestWriteAfterRemoveIsStale(t *testing.T) {
	dir := t.TempDir()
	l := startLocal(t, dir)
	defer l.Close()
	ctx := context.Background()
	writer, remover := dial(t, l), dial(t, l)
	before := datafiles(t, dir)
	f, err := writer.Create(ctx, "/x", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	chunk := content("/x", 4<<20)
	if _, err := f.WriteAt(chunk, 0); err != nil {
		t.Fatal(err)
	}
	if err := remover.Remove(ctx, "/x"); err != nil {
		t.Fatal(err)
	}
	// Wait for the reaper. (Other datafiles come and go meanwhile: the
	// metadata server's precreate pools.)
	leaf := fmt.Sprintf("%016x", uint64(f.Attr().ID))
	held := func() []string {
		var on []string
		for srv, names := range datafiles(t, dir) {
			if slices.Contains(names, leaf) {
				on = append(on, srv)
			}
		}
		return on
	}
	for end := time.Now().Add(10 * time.Second); len(held()) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("10 s after rm, datafile %s of /x is still on %v", leaf, held())
		}
	}
	_, werr := f.WriteAt(chunk, 4<<20)
	serr := f.Sync()
	terr := f.Truncate(1 << 30)
	for name, err := range map[string]error{"write": werr, "sync": serr, "truncate": terr} {
		if !errors.Is(err, syscall.ESTALE) || !strings.Contains(err.Error(), "stale file handle: /x was removed") {
			t.Errorf("%s after rm: %v, want ESTALE naming /x", name, err)
		}
	}
	for srv, names := range datafiles(t, dir) {
		if slices.Contains(names, leaf) {
			t.Fatalf("datafile %s of /x is on %s after rm and late writes (before the file: %v)", leaf, srv, before[srv])
		}
	}
	if _, err := remover.Lookup(ctx, "/x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("/x after rm: %v", err)
	}
}

// BenchmarkCreate measures creates through an embedded cluster of four I/O
// servers (each create now makes its datafiles on all four, in parallel).
func BenchmarkCreate(b *testing.B) {
	l, err := Start(context.Background(), Config{Dir: b.TempDir(), DataServers: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	c, err := l.Client(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	i := 0
	for b.Loop() {
		if _, err := c.Create(context.Background(), fmt.Sprintf("/f%d", i), client.CreateOptions{Exclusive: true}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// An I/O server that never answers does not keep the metadata server from
// starting: its claim waits startClaimTimeout, and it is claimed before
// its first create.
func TestMetaStartsWithHungServer(t *testing.T) {
	defer func(d time.Duration) { startClaimTimeout = d }(startClaimTimeout)
	startClaimTimeout = 300 * time.Millisecond
	hung, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never handshakes
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ms, err := StartMetaServer(context.Background(), ln, MetaServerConfig{
		Dir: t.TempDir(), Secret: NewSecret(), Data: []ServerEntry{{Name: "data0", Addr: hung.Addr().String()}},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("start took %v with a hung I/O server", d)
	}
}
