package client_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/internal/testbin"
	"github.com/pario/pario/wire"
)

// These tests run the real thing: `pario meta` and `pario data` as separate
// processes on loopback, talked to over TCP.

var parioBin string

func TestMain(m *testing.M) { testbin.Main(m, &parioBin) }

// spawn starts a 4-server cluster of processes for one test.
func spawn(t *testing.T, metaArgs ...string) *cluster.Processes {
	t.Helper()
	var logs testbin.LockedBuffer
	p, err := cluster.SpawnProcesses(context.Background(), cluster.ProcessConfig{
		Binary: parioBin, Dir: t.TempDir(), DataServers: 4, MetaArgs: metaArgs, Output: &logs,
	})
	if err != nil {
		t.Fatalf("spawn cluster: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *cluster.Processes, opts ...func(*client.Options)) *client.Client {
	t.Helper()
	c, err := p.Client(context.Background(), opts...)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func fastRetries(o *client.Options) {
	o.Endpoint = wire.EndpointOptions{Retries: 1, RetryDelay: 20 * time.Millisecond, Timeout: 10 * time.Second, DialTimeout: time.Second}
}

func randomBytes(t *testing.T, n int64) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func mustLayout(t *testing.T, s string) dist.Layout {
	t.Helper()
	l, err := dist.ParseLayout(s)
	if err != nil {
		t.Fatalf("layout %q: %v", s, err)
	}
	return l
}

// readAll reads a whole file through ReadAt in odd-sized chunks, checking
// io.ReaderAt's contract at the end.
func readAll(t *testing.T, f *client.File, size int64) []byte {
	t.Helper()
	out := make([]byte, 0, size)
	buf := make([]byte, 77777)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("ReadAt(%d): %v", off, err)
		}
		if n != len(buf) {
			t.Fatalf("ReadAt(%d) = %d bytes with nil error, want a full buffer", off, n)
		}
	}
	return out
}

func TestRoundTripEveryDistribution(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	cases := []struct {
		layout string
		strip  int64 // the first strip: sizes are chosen around it
	}{
		{"simple_stripe", 65536},
		{"simple_stripe:strip_size=4096", 4096},
		{"simple_stripe:strip_size=4096,num_datafiles=3", 4096},
		{"basic", 65536},
		{"varstrip:strips=0:3000;1:5000;2:1000;3:7000", 3000},
		{"varstrip:strips=1:4096;0:100;1:50", 4096},
		{"twod_stripe:num_groups=2,strip_size=4096,group_strip_factor=3", 4096},
		{"twod_stripe", 65536},
	}
	for i, tc := range cases {
		l := mustLayout(t, tc.layout)
		d, err := l.Build(4)
		if err != nil {
			t.Fatal(err)
		}
		stripe := int64(0)
		for df := 0; df < d.Datafiles(); df++ {
			stripe += d.PhysicalSize(df, 1<<40) / (1 << 40 / (tc.strip * 64))
		}
		sizes := []int64{0, 1, tc.strip - 1, tc.strip, tc.strip + 1, 7*tc.strip*int64(d.Datafiles()) + 12345}
		for _, size := range sizes {
			t.Run(fmt.Sprintf("%s/%d", tc.layout, size), func(t *testing.T) {
				path := fmt.Sprintf("/rt-%d-%d", i, size)
				data := randomBytes(t, size)
				f, err := c.Create(ctx, path, client.CreateOptions{Layout: l})
				if err != nil {
					t.Fatal(err)
				}
				if n, err := f.WriteAt(data, 0); err != nil || n != len(data) {
					t.Fatalf("WriteAt = %d, %v", n, err)
				}
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				// A second client opening afresh sees the same bytes.
				g, err := dial(t, p).Open(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				st, err := g.Stat()
				if err != nil {
					t.Fatal(err)
				}
				if st.Size != size {
					t.Fatalf("size = %d, want %d", st.Size, size)
				}
				if got := readAll(t, g, size); !bytes.Equal(got, data) {
					t.Fatalf("read back %d bytes differ from the %d written", len(got), len(data))
				}
				// viewdist: bytes per datafile follow the distribution's arithmetic.
				dfs, err := g.Datafiles(ctx)
				if err != nil {
					t.Fatal(err)
				}
				gd := g.Distribution()
				var total int64
				for _, df := range dfs {
					if want := gd.PhysicalSize(df.Datafile, size); df.Size != want {
						t.Errorf("datafile %d on %s holds %d bytes, distribution says %d", df.Datafile, df.Server.Name, df.Size, want)
					}
					total += df.Size
				}
				if total != size {
					t.Errorf("datafiles hold %d bytes in all, file has %d", total, size)
				}
			})
		}
	}
}

func TestSparseFileAndTruncate(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	f, err := c.Create(ctx, "/sparse", client.CreateOptions{Layout: mustLayout(t, "simple_stripe:strip_size=4096")})
	if err != nil {
		t.Fatal(err)
	}
	// One byte far out: everything before it is a hole of zeros.
	const far = 10*4096*4 + 5000
	if _, err := f.WriteAt([]byte{0xAB}, far); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, f, far+1)
	if int64(len(got)) != far+1 || got[far] != 0xAB || bytes.Count(got[:far], []byte{0}) != far {
		t.Fatalf("sparse read: %d bytes, last %#x", len(got), got[len(got)-1])
	}
	for _, size := range []int64{far + 100000, 3, 0, 4097} {
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		if s, err := f.Size(ctx); err != nil || s != size {
			t.Fatalf("after Truncate(%d): size %d, %v", size, s, err)
		}
	}
	if got := readAll(t, f, 4097); len(got) != 4097 || bytes.Count(got, []byte{0}) != 4097 {
		t.Fatalf("after truncate down and up the file should be 4097 zeros")
	}
}

func TestConcurrentWritersDisjointRanges(t *testing.T) {
	p := spawn(t)
	ctx := context.Background()
	const writers, per = 8, 1<<20 + 777 // ranges that cut strips at odd places
	setup := dial(t, p)
	if _, err := setup.Create(ctx, "/shared", client.CreateOptions{Layout: mustLayout(t, "simple_stripe:strip_size=65536")}); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, writers*per)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		c := dial(t, p) // each writer its own client, like separate ranks
		wg.Go(func() {
			f, err := c.Open(ctx, "/shared")
			if err != nil {
				t.Error(err)
				return
			}
			// Small writes, so the writers really interleave.
			for off := int64(w * per); off < int64((w+1)*per); off += 100003 {
				end := min(off+100003, int64((w+1)*per))
				if _, err := f.WriteAt(data[off:end], off); err != nil {
					t.Error(err)
					return
				}
			}
			if err := f.Sync(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	f, err := setup.Open(ctx, "/shared")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, f, int64(len(data))); !bytes.Equal(got, data) {
		t.Fatal("concurrent disjoint writes: file content differs")
	}
}

func TestDirectoryLayoutInherited(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	if err := c.MkdirAll(ctx, "/runs/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLayout(ctx, "/runs", mustLayout(t, "simple_stripe:strip_size=1m,num_datafiles=2")); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create(ctx, "/runs/a/b/out.dat", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := f.Attr()
	if a.Layout.Dist != dist.SimpleStripe || a.Layout.Params != "strip_size=1048576" || len(a.Servers) != 2 {
		t.Fatalf("inherited layout = %s on %d servers, want 1 MiB strips on 2", a.Layout, len(a.Servers))
	}
	// Hints beat the inherited default.
	g, err := c.Create(ctx, "/runs/a/hinted", client.CreateOptions{Hints: map[string]string{"varstrip_dist:string:strips": "0:200000;1:4000000"}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Attr().Layout.Dist != dist.Varstrip {
		t.Fatalf("hinted file got %s", g.Attr().Layout)
	}
	// A file outside the directory keeps the server default.
	h, err := c.Create(ctx, "/elsewhere", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Attr().Layout.String(); got != "simple_stripe:strip_size=65536,num_datafiles=4" {
		t.Fatalf("default layout = %s", got)
	}
	// Clearing the default returns new files to the server default.
	if err := c.SetLayout(ctx, "/runs", dist.Layout{}); err != nil {
		t.Fatal(err)
	}
	k, err := c.Create(ctx, "/runs/a/b/later", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Attr().Servers) != 4 {
		t.Fatalf("after clearing, new file on %d servers, want 4", len(k.Attr().Servers))
	}
	// A file with data cannot change layout; an empty one can.
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLayout(ctx, "/runs/a/b/out.dat", mustLayout(t, "basic")); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("SetLayout on a file with data: %v, want EBUSY", err)
	}
	if err := c.SetLayout(ctx, "/runs/a/b/later", mustLayout(t, "basic")); err != nil {
		t.Fatal(err)
	}
}

func TestNamespace(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	for _, d := range []string{"/x", "/x/y", "/z"} {
		if err := c.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := c.Create(ctx, "/x/y/f", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, 300000)
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, "/x/y/f", "/z/g"); err != nil {
		t.Fatal(err)
	}
	// The open file keeps working after the rename: datafiles follow the id.
	if got := readAll(t, f, int64(len(data))); !bytes.Equal(got, data) {
		t.Fatal("open file unreadable after rename")
	}
	if _, err := c.Lookup(ctx, "/x/y/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old name: %v, want not exist", err)
	}
	ents, err := c.Readdir(ctx, "/z")
	if err != nil || len(ents) != 1 || ents[0].Name != "g" {
		t.Fatalf("readdir /z = %v, %v", ents, err)
	}
	if err := c.Remove(ctx, "/x"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove non-empty dir: %v", err)
	}
	if n := usedDatafiles(t, c); n != 4 {
		t.Fatalf("a 300000-byte file on 4 servers has %d datafiles", n)
	}
	if err := c.Remove(ctx, "/z/g"); err != nil {
		t.Fatal(err)
	}
	if n := usedDatafiles(t, c); n != 0 {
		t.Fatalf("remove left %d datafiles behind", n)
	}
}

func usedDatafiles(t *testing.T, c *client.Client) uint64 {
	ctx := context.Background()
	pooled := func() uint64 {
		n, err := c.PooledDatafiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The metadata server's precreated datafiles are counted by the I/O
	// servers but are no file's: subtract them, read while no refill ran.
	for {
		before := pooled()
		// An I/O server answers from its last walk of the datafiles and
		// starts a new one when that is older than a second: past a
		// second, the second call starts a walk of what is there now,
		// which the third answers from.
		c.Statfs(ctx)
		time.Sleep(1100 * time.Millisecond)
		c.Statfs(ctx)
		time.Sleep(200 * time.Millisecond)
		var n uint64
		for _, s := range c.Statfs(ctx) {
			if s.Err != nil {
				t.Fatal(s.Err)
			}
			n += s.Datafiles
		}
		if after := pooled(); after == before {
			return n - after
		}
	}
}

func TestStuffing(t *testing.T) {
	p := spawn(t, "--stuffing")
	c := dial(t, p)
	ctx := context.Background()
	f, err := c.Create(ctx, "/small", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Attr().Stuffed {
		t.Fatal("new file not stuffed with --stuffing")
	}
	small := randomBytes(t, 288664%65536) // fits in the first 64 KiB strip
	if _, err := f.WriteAt(small, 0); err != nil {
		t.Fatal(err)
	}
	if !f.Attr().Stuffed {
		t.Fatal("file unstuffed by a write inside the first strip")
	}
	// The thesis' file: 288,664 bytes outgrow the first strip -> all datafiles.
	big := randomBytes(t, 288664)
	if _, err := f.WriteAt(big, 0); err != nil {
		t.Fatal(err)
	}
	if f.Attr().Stuffed {
		t.Fatal("file still stuffed after growing past the first strip")
	}
	a, err := c.Lookup(ctx, "/small")
	if err != nil || a.Stuffed {
		t.Fatalf("metadata still says stuffed: %+v %v", a, err)
	}
	dfs, err := f.Datafiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nonEmpty := 0
	for _, d := range dfs {
		if d.Size > 0 {
			nonEmpty++
		}
	}
	if nonEmpty != 4 {
		t.Fatalf("unstuffed 288664-byte file on %d datafiles, want 4", nonEmpty)
	}
	g, _ := dial(t, p).Open(ctx, "/small")
	if got := readAll(t, g, int64(len(big))); !bytes.Equal(got, big) {
		t.Fatal("content wrong after unstuffing")
	}
}

func TestIOServerKilledMidWrite(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()

	// Files on a single server each: find one that avoids the victim.
	const victim = 1
	var survivor string
	var survivorData []byte
	for i := 0; i < 4 && survivor == ""; i++ {
		path := fmt.Sprintf("/single-%d", i)
		f, err := c.Create(ctx, path, client.CreateOptions{Layout: mustLayout(t, "basic")})
		if err != nil {
			t.Fatal(err)
		}
		if f.Attr().Servers[0] != victim {
			survivor, survivorData = path, randomBytes(t, 100000)
			if _, err := f.WriteAt(survivorData, 0); err != nil {
				t.Fatal(err)
			}
		}
	}

	f, err := c.Create(ctx, "/striped", client.CreateOptions{Layout: mustLayout(t, "simple_stripe:strip_size=65536")})
	if err != nil {
		t.Fatal(err)
	}
	synced := randomBytes(t, 8<<20)
	if _, err := f.WriteAt(synced, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}

	// Keep writing past the synced part while the victim dies.
	werr := make(chan error, 1)
	go func() {
		chunk := randomBytes(t, 1<<20)
		for off := int64(len(synced)); ; off += int64(len(chunk)) {
			if _, err := f.WriteAt(chunk, off); err != nil {
				werr <- err
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := p.Kill(fmt.Sprintf("data%d", victim)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-werr:
		if !strings.Contains(err.Error(), fmt.Sprintf("data%d", victim)) {
			t.Fatalf("write error does not name the dead server data%d: %v", victim, err)
		}
		t.Logf("writer saw: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("writer did not fail within 30 s of the server's death")
	}

	// Files not on the dead server stay readable.
	g, err := c.Open(ctx, survivor)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, g, int64(len(survivorData))); !bytes.Equal(got, survivorData) {
		t.Fatal("file on a live server unreadable while another server is down")
	}
	// Reading the striped file names the dead server too.
	if _, err := f.ReadAt(make([]byte, 1<<20), 0); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("data%d", victim)) {
		t.Fatalf("read with a dead server: %v", err)
	}

	// After restart, everything that was synced reads back intact.
	if err := p.StartData(ctx, victim); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, len(synced))
	if _, err := f.ReadAt(back, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, synced) {
		t.Fatal("synced data damaged by the crash of an I/O server")
	}
}

func TestMetadataServerRestartKeepsCommittedEntries(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()
	var names []string
	for i := 0; i < 50; i++ {
		dir := fmt.Sprintf("/d%d", i%5)
		if i < 5 {
			if err := c.Mkdir(ctx, dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		name := fmt.Sprintf("%s/f%d", dir, i)
		f, err := c.Create(ctx, name, client.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(name), 0); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := c.SetLayout(ctx, "/d3", mustLayout(t, "basic")); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill("meta"); err != nil { // SIGKILL: no clean shutdown
		t.Fatal(err)
	}
	if err := p.StartMeta(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, p)
	for _, name := range names {
		f, err := c2.Open(ctx, name)
		if err != nil {
			t.Fatalf("after metadata server crash: %v", err)
		}
		got := make([]byte, len(name))
		if _, err := f.ReadAt(got, 0); err != nil || string(got) != name {
			t.Fatalf("%s reads %q, %v", name, got, err)
		}
	}
	if a, err := c2.Lookup(ctx, "/d3"); err != nil || a.Layout.Dist != dist.Basic {
		t.Fatalf("directory layout lost: %+v, %v", a.Layout, err)
	}
}

// TestBadInputWritesNothing: every bad request gets a clear error, nothing
// is created, and the servers keep serving.
func TestBadInputWritesNothing(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	cases := []struct {
		name  string
		path  string
		opts  client.CreateOptions
		wants string // a fragment the error must contain
	}{
		{"zero strip", "/bad1", client.CreateOptions{Hints: map[string]string{"strip_size": "0"}}, "strip_size"},
		{"negative strip", "/bad2", client.CreateOptions{Hints: map[string]string{"strip_size": "-65536"}}, "strip_size"},
		{"varstrip beyond servers", "/bad3", client.CreateOptions{Hints: map[string]string{"varstrip_dist:string:strips": "0:100;7:100"}}, "datafile 7"},
		{"varstrip gap", "/bad4", client.CreateOptions{Hints: map[string]string{"strips": "0:100;2:100"}}, "varstrip"},
		{"unknown hint", "/bad5", client.CreateOptions{Hints: map[string]string{"stripe_width": "4"}}, "stripe_width"},
		{"too many datafiles", "/bad6", client.CreateOptions{Hints: map[string]string{"num_datafiles": "9"}}, "9"},
		{"dotdot path", "/a/../bad7", client.CreateOptions{}, ".."},
		{"dot path", "/./bad8", client.CreateOptions{}, "."},
		{"relative path", "bad9", client.CreateOptions{}, "bad9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create(ctx, tc.path, tc.opts)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("error %q does not mention %q", err, tc.wants)
			}
		})
	}
	if _, err := dist.ParseHintString("strip_size"); err == nil {
		t.Fatal("malformed hint string accepted")
	}
	if _, err := dist.ParseLayout("simple_stripe:strip_size=0"); err == nil {
		t.Fatal("zero strip layout accepted")
	}
	if err := c.Mkdir(ctx, "/x/..", 0o755); err == nil {
		t.Fatal("mkdir with .. accepted")
	}
	ents, err := c.Readdir(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("bad requests left entries behind: %v", ents)
	}
	if n := usedDatafiles(t, c); n != 0 {
		t.Fatalf("bad requests left %d datafiles", n)
	}
	// A wrong secret gets a clear error and no access.
	_, err = client.Dial(ctx, client.Options{Meta: p.File.Meta, Secret: []byte("not the secret of this cluster")})
	if !errors.Is(err, wire.ErrAuth) {
		t.Fatalf("wrong secret: %v, want ErrAuth", err)
	}
	// Writes at a negative offset are refused before anything is sent.
	f, err := c.Create(ctx, "/ok", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), -1); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("negative offset: %v", err)
	}
	if s, _ := f.Size(ctx); s != 0 {
		t.Fatalf("refused write changed the size to %d", s)
	}
}

// TestIOServerMemoryBound: an I/O server with 16 requests of 1 MiB in
// flight (and then of 16 MiB, beyond its 64 MiB memory budget) stays under
// 128 MiB resident.
func TestIOServerMemoryBound(t *testing.T) {
	var logs testbin.LockedBuffer
	p, err := cluster.SpawnProcesses(context.Background(), cluster.ProcessConfig{
		Binary: parioBin, Dir: t.TempDir(), DataServers: 4, Output: &logs,
		DataArgs: []string{"--memory-budget", "64m"}, // the default, 256 MiB, is more than this test sends
	})
	if err != nil {
		t.Fatalf("spawn cluster: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	c := dial(t, p)
	f, err := c.Create(ctx, "/mem", client.CreateOptions{Layout: mustLayout(t, "basic")})
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("data%d", f.Attr().Servers[0])
	for _, size := range []int64{1 << 20, 16 << 20} {
		buf := randomBytes(t, size)
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ {
			c := dial(t, p) // separate connections, so 16 are really in flight
			g, err := c.Open(ctx, "/mem")
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for i := int64(0); i < 8; i++ {
					if _, err := g.WriteAt(buf, (int64(w)*8+i)*size); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	hwm := peakRSS(t, p.PID(server))
	t.Logf("%s peak RSS %d MiB", server, hwm>>20)
	if hwm > 128<<20 {
		t.Fatalf("%s peak RSS %d MiB, want under 128 MiB", server, hwm>>20)
	}
}

func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestCorruptedFramesRejected speaks raw frames to a real I/O server
// process: a request one bit of which flips on the way fails to
// authenticate, is not carried out, and the server says why (EBADMSG) as
// it hangs up; a frame with a damaged header, or one that is not a
// request, ends the connection; the server keeps serving.
func TestCorruptedFramesRejected(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	f, err := c.Create(ctx, "/target", client.CreateOptions{Layout: mustLayout(t, "basic")})
	if err != nil {
		t.Fatal(err)
	}
	addr := c.Servers()[f.Attr().Servers[0]].Addr
	write := func() []byte {
		var e wire.Enc
		e.U64(uint64(f.Attr().ID))
		e.I64(0)
		return wire.AppendFrame(nil, 1 /* data.OpWrite */, 0, 7, e.Bytes(), [][]byte{[]byte("corrupted payload")})
	}

	tcp, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	flip := &flipConn{Conn: tcp}
	nc, err := wire.AuthenticateRaw(ctx, flip, p.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	flip.armed.Store(true) // one bit of the sealed data record flips in transit
	if _, err := nc.Write(write()); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := wire.ReadFrame(nc)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Flags&wire.FlagError == 0 {
		t.Fatalf("corrupted request answered with flags %#x id %d, want an error", resp.Flags, resp.ReqID)
	}
	d := wire.NewDec(resp.Args)
	if errno := syscall.Errno(d.U32("errno")); errno != syscall.EBADMSG {
		t.Fatalf("corrupted request: errno %v, want EBADMSG", errno)
	}
	if _, err := wire.ReadFrame(nc); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after a corrupted request: %v, want the connection closed", err)
	}
	if size, err := f.Size(ctx); err != nil || size != 0 {
		t.Fatalf("a rejected write changed the file: size %d, %v", size, err)
	}

	nc, err = wire.DialRaw(ctx, addr, p.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	// A damaged header: the server cannot trust the lengths and hangs up.
	frame := write()
	frame[13] ^= 0x01 // argLen
	nc.Write(frame)
	if _, err := wire.ReadFrame(nc); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a frame with a damaged header: %v, want the connection closed", err)
	}

	// A response frame sent to a server is a protocol violation.
	nc2, err := wire.DialRaw(ctx, addr, p.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	nc2.Write(wire.AppendFrame(nil, 1, wire.FlagResponse, 1, nil, nil))
	nc2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := wire.ReadFrame(nc2); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a response frame sent to the server: %v, want the connection closed", err)
	}

	// The server is still fine, and the file still empty.
	if _, err := f.WriteAt([]byte("fine"), 0); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(ctx); size != 4 {
		t.Fatalf("size %d after a good write, want 4", size)
	}
}

// flipConn flips the last bit of the first write made once it is armed.
type flipConn struct {
	net.Conn
	armed atomic.Bool
}

func (c *flipConn) Write(p []byte) (int, error) {
	if len(p) > 0 && c.armed.CompareAndSwap(true, false) {
		p = append([]byte(nil), p...)
		p[len(p)-1] ^= 1
	}
	return c.Conn.Write(p)
}

// TestStuffedFileSeenByAnotherClient: a handle opened while the file was
// stuffed still sees all of it, and syncs all of it, after another client
// has grown (and so unstuffed) it.
func TestStuffedFileSeenByAnotherClient(t *testing.T) {
	p := spawn(t, "--stuffing")
	ctx := context.Background()
	a, b := dial(t, p), dial(t, p)
	fa, err := a.Create(ctx, "/grow", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fa.WriteAt([]byte("small"), 0); err != nil {
		t.Fatal(err)
	}
	fb, err := b.Open(ctx, "/grow")
	if err != nil {
		t.Fatal(err)
	}
	if !fb.Attr().Stuffed {
		t.Fatal("second handle should have opened a stuffed file")
	}
	big := randomBytes(t, 300000)
	if _, err := fa.WriteAt(big, 0); err != nil { // unstuffs
		t.Fatal(err)
	}
	if size, err := fb.Size(ctx); err != nil || size != int64(len(big)) {
		t.Fatalf("stale handle: size %d, %v; want %d", size, err, len(big))
	}
	if got := readAll(t, fb, int64(len(big))); !bytes.Equal(got, big) {
		t.Fatal("stale handle reads wrong data")
	}
	if err := fb.Truncate(100000); err != nil {
		t.Fatal(err)
	}
	if size, err := fa.Size(ctx); err != nil || size != 100000 {
		t.Fatalf("after truncate through the once-stale handle: size %d, %v", size, err)
	}
}
