package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Operations of the test service.
const (
	opEcho    uint8 = 1 // answers with the request's args and data
	opSlow    uint8 = 2 // sleeps args[0:8] milliseconds (or until ctx is done), then echoes
	opErrno   uint8 = 3 // fails with fs.ErrNotExist
	opPanic   uint8 = 4 // panics
	opData    uint8 = 5 // answers with args[0:8] bytes of pattern data
	opBlock   uint8 = 6 // blocks until the handler's gate is opened or ctx is done
	opCtxWait uint8 = 7 // blocks until ctx is done, then reports it
)

// testHandler implements the test service and counts what it does.
type testHandler struct {
	calls   atomic.Int64 // every ServeWire
	running atomic.Int64 // handlers running now
	maxRun  atomic.Int64 // most handlers seen running at once
	gate    chan struct{}
	ctxDone chan struct{} // opCtxWait reports here when its ctx ends
	onCall  func(req *Request)
}

func newTestHandler() *testHandler {
	return &testHandler{gate: make(chan struct{}), ctxDone: make(chan struct{}, 64)}
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func (h *testHandler) ServeWire(ctx context.Context, req *Request) (Response, error) {
	h.calls.Add(1)
	n := h.running.Add(1)
	defer h.running.Add(-1)
	for {
		m := h.maxRun.Load()
		if n <= m || h.maxRun.CompareAndSwap(m, n) {
			break
		}
	}
	if h.onCall != nil {
		h.onCall(req)
	}
	echo := func() Response {
		r := Response{Args: append([]byte(nil), req.Args...)}
		if len(req.Data) > 0 {
			r.Data = [][]byte{append([]byte(nil), req.Data...)}
		}
		return r
	}
	switch req.Op {
	case opEcho:
		return echo(), nil
	case opSlow:
		d := NewDec(req.Args)
		ms := d.U64("ms")
		if err := d.Err(); err != nil {
			return Response{}, err
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
		return echo(), nil
	case opErrno:
		return Response{}, fmt.Errorf("no such thing %q: %w", req.Args, fs.ErrNotExist)
	case opPanic:
		panic("test handler panics on purpose")
	case opData:
		d := NewDec(req.Args)
		n := d.U64("n")
		if err := d.Done(); err != nil {
			return Response{}, err
		}
		return Response{Args: []byte("data"), Data: [][]byte{pattern(int(n), 1)}}, nil
	case opBlock:
		select {
		case <-h.gate:
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
		return Response{}, nil
	case opCtxWait:
		<-ctx.Done()
		h.ctxDone <- struct{}{}
		return Response{}, ctx.Err()
	}
	return Response{}, errors.New("unknown op")
}

type handlerFunc func(ctx context.Context, req *Request) (Response, error)

func (f handlerFunc) ServeWire(ctx context.Context, req *Request) (Response, error) {
	return f(ctx, req)
}

// testServer is a Server serving on a loopback listener for one test.
type testServer struct {
	*Server
	Addr string
	done chan error
}

func startServerOn(t testing.TB, ln net.Listener, h Handler, opts ServerOptions) *testServer {
	t.Helper()
	if opts.Secret == nil {
		opts.Secret = testSecret
	}
	if opts.Name == "" {
		opts.Name = "test server"
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	s := &testServer{Server: NewServer(h, opts), Addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { s.done <- s.Serve(context.Background(), ln) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop closes the server and checks that Serve returned cleanly; it may be
// called more than once.
func (s *testServer) stop(t testing.TB) {
	t.Helper()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("Server.Close did not return")
	}
	select {
	case err, ok := <-s.done:
		if ok && err != nil {
			t.Errorf("Serve: %v", err)
		}
		if ok {
			close(s.done)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Serve did not return after Close")
	}
}

func startServer(t testing.TB, h Handler, opts ServerOptions) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, ln, h, opts)
}

func dialTest(t testing.TB, addr string) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, "test server ("+addr+")", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn connects to addr and runs the client handshake by hand, leaving
// a socket on which the test writes plain frames itself (they are sealed
// on the way out, and the answers opened).
func rawConn(t testing.TB, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_, sess, err := clientHandshake(nc, "test server", testSecret, ProtectAEAD)
	if err != nil {
		t.Fatal(err)
	}
	return newSealedConn(nc, sess)
}

// fakeServer accepts connections on loopback, runs the server handshake on
// each and hands the socket to serve: a server that misbehaves on purpose.
func fakeServer(t testing.TB, serve func(nc net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				sess, err := serverHandshake(nc, "fake", testSecret, ProtectAEAD, HandshakeTimeout, nil)
				if err != nil {
					return
				}
				serve(newSealedConn(nc, sess))
			}()
		}
	}()
	return ln.Addr().String()
}

// within fails the test if f does not return within d.
func within(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func crcOf(b []byte) uint32 { return Checksum(b, nil) }
