package medic_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
	"github.com/pario/pario/wire/floodtest"
)

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Connections that never authenticate (no key needed to open them) cost
// the receiver little memory each, and an honest sender is served beside
// them. Before, each took a 512 KiB read buffer at accept: 60 of them
// held 30 MiB, 2,000 a gigabyte.
func TestReceiverFloodWithoutTheKey(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	before := heapInUse()
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	const n = 60 // under the per-host cap: all of them are held open
	for range n {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	// Each is accepted and sent the hello; none answers it.
	for _, c := range flood {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			t.Fatalf("a flood connection was not greeted: %v", err)
		}
	}
	grew := int64(heapInUse()) - int64(before)
	t.Logf("%d unauthenticated connections: heap %+d KiB", n, grew>>10)
	if grew > 8<<20 {
		t.Errorf("%d unauthenticated connections took %d MiB of the receiver's heap", n, grew>>20)
	}
	p := writeFile(t, "out.txt", report(200))
	start := time.Now()
	if _, err := sendFile(t, s, p, "zstd", medic.SendOptions{}); err != nil {
		t.Fatalf("an honest send beside the flood: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("an honest send beside the flood took %v", took)
	}
}

// More connections from one host than the receiver admits are refused
// at once, with a reason the sender prints, not held.
func TestReceiverRefusesPastItsPerHostLimit(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range medic.DefaultMaxConnsPerPeer {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(200 * time.Millisecond) // all of them accepted
	p := writeFile(t, "out.txt", report(200))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := medic.SendFile(ctx, p, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: "zstd", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     medic.SendOptions{Addr: s.addr, Key: s.key, StallTimeout: time.Second},
		SpoolDir: t.TempDir(),
	})
	if err == nil || !strings.Contains(err.Error(), "limit per host") || !errors.Is(err, medic.ErrBusy) {
		t.Fatalf("a connection past the per-host limit for longer than the stall timeout: %v, want a refusal naming the limit", err)
	}
	for _, c := range held[:8] {
		c.Close()
	}
	held = held[8:]
	// The receiver counts a connection out once its handshake sees the
	// close.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := sendFile(t, s, p, "zstd", medic.SendOptions{})
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "limit per host") || time.Now().After(deadline) {
			t.Fatalf("a send once connections were closed: %v", err)
		}
	}
}

// A receiver out of file descriptors goes on accepting once they free up
// (it backs off, as net/http does), where its Serve used to return on the
// first EMFILE, so that `pario medic serve` exited and an embedding
// program's receiver stopped accepting.
func TestReceiverSurvivesRunningOutOfDescriptors(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(fds) + 16)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var flood []net.Conn
	for range 64 {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err != nil {
			continue // out of descriptors here too
		}
		flood = append(flood, c)
	}
	time.Sleep(300 * time.Millisecond) // the receiver's accepts meet EMFILE
	for _, c := range flood {
		c.Close()
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, "out.txt", report(200))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = medic.SendFile(ctx, p, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: "zstd", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     medic.SendOptions{Addr: s.addr, Key: s.key},
		SpoolDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("a send once descriptors were free again: %v", err)
	}
}

// A sender refused because the receiver is at its connection limits
// (ErrBusy) dials again, backing off, until a connection frees up (within
// its stall timeout): a job whose ranks all send at once gets through.
// Before, the send failed at the first refusal.
func TestBusyReceiverIsDialledAgain(t *testing.T) {
	key := medictest.Key(t)
	_, addr := serveConfig(t, medic.ServerConfig{Key: key, MaxConnsPerPeer: 2})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(200 * time.Millisecond) // both accepted
	go func() {
		time.Sleep(700 * time.Millisecond)
		for _, c := range held {
			c.Close()
		}
	}()
	p := writeFile(t, "out.txt", report(200))
	start := time.Now()
	_, err := medic.SendFile(context.Background(), p, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: "zstd", Cipher: medic.CipherXChaCha20Poly1305, Key: key},
		Send:     medic.SendOptions{Addr: addr, Key: key, StallTimeout: 10 * time.Second},
		SpoolDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("a send to a receiver busy for 0.7 s: %v", err)
	}
	if took := time.Since(start); took < 600*time.Millisecond {
		t.Errorf("the send took %v: the receiver was not busy when it came (the test proves nothing)", took)
	}
}

// A flood of connections that never authenticate, from more hosts than the
// receiver has places for and opened again as fast as they are closed,
// does not keep an honest sender out: its handshake takes the place of
// the flood's oldest (wire.Gate). Before, the flood held every place and
// the sender was refused as busy until its stall timeout.
func TestReceiverFloodFromManyHosts(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	s.srv, s.addr = serveConfig(t, medic.ServerConfig{Key: s.key, MaxConns: 16, MaxConnsPerPeer: 4, HandshakeTimeout: time.Second, Store: medic.DirStore(t.TempDir())})
	flood := floodtest.Start(s.addr, 8, 4)
	defer flood.Stop()
	for deadline := time.Now().Add(10 * time.Second); flood.Opened() < 64; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood opened %d connections in 10 s", flood.Opened())
		}
	}
	p := writeFile(t, "out.txt", report(200))
	for i := range 3 {
		if _, err := sendFile(t, s, p, "zstd", medic.SendOptions{StallTimeout: 20 * time.Second}); err != nil {
			t.Fatalf("honest send %d beside the flood (%d flood connections opened): %v", i, flood.Opened(), err)
		}
	}
}

// Many senders at once against a receiver that holds two connections: each
// refused sender comes back at its own jittered time, and every one gets
// through well within its stall timeout (senders retrying in step would
// meet the limit together each time). The jitter was reasoned, not
// measured, before this test.
func TestManySendersShareABusyReceiver(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	s.srv, s.addr = serveConfig(t, medic.ServerConfig{Key: s.key, MaxConns: 2, MaxConnsPerPeer: 2, Store: medic.DirStore(t.TempDir())})
	const senders = 24
	errs := make(chan error, senders)
	start := time.Now()
	paths := make([]string, senders)
	for i := range paths {
		paths[i] = writeFile(t, fmt.Sprintf("out%d.txt", i), report(300+i))
	}
	for _, p := range paths {
		go func() {
			_, err := sendFile(t, s, p, "zstd", medic.SendOptions{StallTimeout: 60 * time.Second})
			errs <- err
		}()
	}
	for range senders {
		if err := <-errs; err != nil {
			t.Fatalf("a sender among %d: %v", senders, err)
		}
	}
	took := time.Since(start)
	t.Logf("%d senders through 2 connections: %v", senders, took)
	if took > 30*time.Second {
		t.Errorf("%d senders through 2 connections took %v", senders, took)
	}
}

// stalledConn holds back what a sender writes (pretending it went), as a
// long, slow link does, and reports its first write on wrote.
type stalledConn struct {
	net.Conn
	once  sync.Once
	wrote chan struct{}
}

func (c *stalledConn) Write(b []byte) (int, error) {
	c.once.Do(func() { close(c.wrote) })
	return len(b), nil
}

// A sender on a slow link, whose handshake a flood evicts from the
// receiver (it has sat in its handshake past the 1/5 of the handshake
// timeout that spares it), is told why, as when the receiver is busy, and
// dials again: its send succeeds once the flood ends, within its stall
// timeout. Before, the receiver closed the connection without a word and
// the send failed ("read auth answer: EOF").
func TestEvictedSenderDialsAgain(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	s.srv, s.addr = serveConfig(t, medic.ServerConfig{Key: s.key, MaxConns: 8, MaxConnsPerPeer: 8, HandshakeTimeout: 5 * time.Second,
		Store: medic.DirStore(t.TempDir())})
	var dials atomic.Int64
	first := &stalledConn{wrote: make(chan struct{})}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil || dials.Add(1) > 1 {
			return c, err
		}
		first.Conn = c
		return first, nil
	}
	p := writeFile(t, "out.txt", report(200))
	done := make(chan error, 1)
	go func() {
		_, err := sendFile(t, s, p, "zstd", medic.SendOptions{Dial: dial, StallTimeout: 30 * time.Second})
		done <- err
	}()
	select {
	case <-first.wrote: // its proof is on the slow link
	case err := <-done:
		t.Fatalf("the send ended before its handshake stalled: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the sender did not authenticate")
	}
	// A flood from other networks, until one of them takes the stalled
	// sender's place (once it is older than 1 s) and the sender dials
	// again, or gives up.
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	var err error
	ended := false
	for i := 0; dials.Load() < 2 && !ended; i++ {
		if i == 400 {
			t.Fatal("the flood did not evict the stalled sender in 20 s")
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(i%200+1))}}
		if c, derr := d.Dial("tcp", s.addr); derr == nil {
			flood = append(flood, c)
		}
		select {
		case err = <-done:
			ended = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, c := range flood { // the flood ends
		c.Close()
	}
	if !ended {
		err = <-done
	}
	if err != nil {
		t.Fatalf("a send evicted by a flood, which then ended: %v", err)
	}
}
