package cluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/wire"
)

// killableListeners hands out listeners that a test can make fail for
// good, as a listener whose socket was destroyed would.
type killableListeners struct {
	mu     sync.Mutex
	lns    []*killable
	killed bool
}

type killable struct {
	net.Listener
	owner *killableListeners
}

func (k *killable) Accept() (net.Conn, error) {
	nc, err := k.Listener.Accept()
	k.owner.mu.Lock()
	killed := k.owner.killed
	k.owner.mu.Unlock()
	if err != nil && killed {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EINVAL}
	}
	return nc, err
}

func (l *killableListeners) listen(network, addr string) (net.Listener, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := &killable{Listener: ln, owner: l}
	l.lns = append(l.lns, k)
	return k, nil
}

// kill makes listener i fail.
func (l *killableListeners) kill(i int) {
	l.mu.Lock()
	l.killed = true
	ln := l.lns[i]
	l.mu.Unlock()
	ln.Listener.Close()
}

// A server whose accept loop ends on its own is reported, naming it, so
// that `pario up` exits instead of staying up deaf; the end of the context
// is not a failure.
func TestLocalWaitReportsDeadServer(t *testing.T) {
	var kl killableListeners
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := Start(ctx, Config{Dir: t.TempDir(), DataServers: 2, Listen: kl.listen})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waited := make(chan error, 1)
	go func() { waited <- l.Wait(ctx) }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v with every server up", err)
	case <-time.After(100 * time.Millisecond):
	}
	kl.kill(1) // the listeners are opened data0, data1, meta
	select {
	case err := <-waited:
		if err == nil || !strings.Contains(err.Error(), "I/O server data1") || !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("Wait: %v, want an error naming data1 and the accept failure", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not notice a dead server")
	}

	l2, err := Start(ctx, Config{Dir: t.TempDir(), DataServers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	ctx2, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if err := l2.Wait(ctx2); err != nil {
		t.Fatalf("Wait at the end of its context: %v", err)
	}
}

func writeArgs(id uint64, off int64) []byte {
	var e wire.Enc
	data.WriteRequest{ID: id, Offset: off}.Encode(&e)
	return e.Bytes()
}

// makeDatafiles claims the I/O server behind e for a test incarnation and
// creates the given datafiles (writes never create them).
func makeDatafiles(ctx context.Context, t *testing.T, e *wire.Endpoint, ids ...uint64) {
	t.Helper()
	const incarnation = 0x5eed
	if _, _, err := wire.Call(ctx, e, data.OpClaim, data.ClaimRequest{Incarnation: incarnation}, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, _, err := wire.Call(ctx, e, data.OpCreate, data.CreateRequest{ID: id, Incarnation: incarnation}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// With the I/O server's default settings, a client that announces a 64 MiB
// write and stalls in the middle of it does not stop other clients' writes
// (before, it held the whole 64 MiB budget until it went away).
func TestDataServerStalledWriteDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secret := NewSecret()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := StartDataServer(ctx, ln, DataServerConfig{Name: "data0", Dir: t.TempDir(), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	nc, err := wire.DialRaw(ctx, ds.Addr, secret)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	args := writeArgs(1, 0)
	h := wire.Header{Op: data.OpWrite.Code, ReqID: 1, ArgLen: uint32(len(args)), DataLen: wire.MaxDataLen}
	var hb [wire.HeaderSize]byte
	h.Encode(hb[:])
	nc.Write(append(hb[:], args...))
	nc.Write(make([]byte, 1<<20)) // and nothing more

	e := wire.NewEndpoint("I/O server data0", ds.Addr, secret, wire.EndpointOptions{Timeout: 5 * time.Second})
	defer e.Close()
	makeDatafiles(ctx, t, e, 2)
	start := time.Now()
	for i := range 8 {
		if _, _, err := e.Call(ctx, data.OpWrite.Code, true, writeArgs(2, int64(i)<<20), [][]byte{make([]byte, 1<<20)}, nil); err != nil {
			t.Fatalf("write %d behind a stalled client: %v", i, err)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("8 writes of 1 MiB took %v behind a stalled client", d)
	}
}

// Two clients pipelining 64 MiB reads and never reading the answers make
// the I/O server hold one answer per connection, not one per request.
func TestDataServerUnreadReadsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secret := NewSecret()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := StartDataServer(ctx, ln, DataServerConfig{Name: "data0", Dir: t.TempDir(), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	e := wire.NewEndpoint("I/O server data0", ds.Addr, secret, wire.EndpointOptions{})
	defer e.Close()
	// A sparse 64 MiB datafile: its reads answer 64 MiB of zeros.
	makeDatafiles(ctx, t, e, 7)
	if _, _, err := e.Call(ctx, data.OpWrite.Code, true, writeArgs(7, wire.MaxDataLen-1), [][]byte{{1}}, nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 2 {
		nc, err := wire.DialRaw(ctx, ds.Addr, secret)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		var frames []byte
		for i := range 8 {
			var a wire.Enc
			a.U64(7)
			a.I64(0)
			a.I64(wire.MaxDataLen)
			frames = wire.AppendFrame(frames, data.OpRead.Code, 0, uint64(i+1), a.Bytes(), nil)
		}
		nc.Write(frames)
	}
	time.Sleep(time.Second)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// Before, all 16 answers were built: 1 GiB.
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 400<<20 {
		t.Fatalf("heap grew by %d MiB for 16 unread 64 MiB answers", grew>>20)
	}
}

// A cluster started with integrity protection says so in its cluster file,
// serves clients that use it, and refuses those that do not.
func TestLocalWireProtection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	l, err := Start(ctx, Config{Dir: dir, DataServers: 2, Protection: wire.ProtectIntegrity})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cf, err := ReadFile(l.ClusterFile)
	if err != nil {
		t.Fatal(err)
	}
	if cf.Protection != wire.ProtectIntegrity {
		t.Fatalf("cluster file has wire protection %s, want integrity", cf.Protection)
	}
	c, err := l.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create(ctx, "/f", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("CONFIDENTIAL"), 50000)
	if _, err := f.WriteAtContext(ctx, want, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAtContext(ctx, got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v", err)
	}
	// A client left at the default (aead) is refused, with a reason.
	_, err = client.Dial(ctx, client.Options{Meta: l.Meta.Addr, Secret: l.Secret})
	if !errors.Is(err, wire.ErrProtectionMismatch) || !strings.Contains(err.Error(), "wire-protection") {
		t.Fatalf("client with another protection mode: %v", err)
	}
}
