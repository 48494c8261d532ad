package wire

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var fastRetries = EndpointOptions{Retries: 5, RetryDelay: 5 * time.Millisecond, DialTimeout: time.Second, Timeout: 5 * time.Second}

func newTestEndpoint(t *testing.T, addr string, opts EndpointOptions) *Endpoint {
	e := NewEndpoint("test endpoint ("+addr+")", addr, testSecret, opts)
	t.Cleanup(func() { e.Close() })
	return e
}

func TestEndpointCall(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	e := newTestEndpoint(t, s.Addr, EndpointOptions{Conns: 3})
	ctx := context.Background()
	for i := range 10 {
		into := make([]byte, 100)
		args, n, err := e.Call(ctx, opEcho, i%2 == 0, []byte("hi"), [][]byte{[]byte("data")}, [][]byte{into})
		if err != nil || string(args) != "hi" || string(into[:n]) != "data" {
			t.Fatalf("call %d: %q %q, %v", i, args, into[:n], err)
		}
	}
	// Remote errors are not retried and name the endpoint.
	_, _, err := e.Call(ctx, opErrno, true, nil, nil, nil)
	if !errors.Is(err, syscall.ENOENT) || !strings.HasPrefix(err.Error(), "test endpoint (") {
		t.Fatalf("%v", err)
	}
	if n := h.calls.Load(); n != 11 {
		t.Fatalf("%d handler calls, want 11", n)
	}
}

// A restarted server is found again: the old connections are dropped and
// an idempotent call goes through on a new one.
func TestEndpointServerRestart(t *testing.T) {
	h1 := newTestHandler()
	s1 := startServer(t, h1, ServerOptions{})
	e := newTestEndpoint(t, s1.Addr, fastRetries)
	ctx := context.Background()
	for range 4 { // dial both pooled connections
		if _, _, err := e.Call(ctx, opEcho, true, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	s1.stop(t)
	if _, _, err := e.Call(ctx, opEcho, true, nil, nil, nil); err == nil {
		t.Fatal("call to a stopped server succeeded")
	}

	ln, err := net.Listen("tcp", s1.Addr)
	if err != nil {
		t.Fatal(err)
	}
	h2 := newTestHandler()
	startServerOn(t, ln, h2, ServerOptions{})
	for i := range 4 {
		if args, _, err := e.Call(ctx, opEcho, true, []byte("again"), nil, nil); err != nil || string(args) != "again" {
			t.Fatalf("call %d after restart: %q, %v", i, args, err)
		}
	}
	if n := h2.calls.Load(); n != 4 {
		t.Fatalf("restarted server served %d calls, want 4", n)
	}
}

// A server that drops the connection after taking a request: idempotent
// calls are retried, others are not (they may have taken effect).
func TestEndpointRetryAfterBreak(t *testing.T) {
	var requests atomic.Int64
	addr := fakeServer(t, func(nc net.Conn) {
		for {
			f, err := ReadFrame(nc)
			if err != nil {
				return
			}
			if requests.Add(1)%2 == 1 {
				return // hang up on every other request, mid-call
			}
			nc.Write(AppendFrame(nil, f.Op, FlagResponse, f.ReqID, []byte("done"), nil))
		}
	})
	ctx := context.Background()
	e := newTestEndpoint(t, addr, fastRetries)

	args, _, err := e.Call(ctx, opEcho, true, nil, nil, nil)
	if err != nil || string(args) != "done" || requests.Load() != 2 {
		t.Fatalf("idempotent call: %q, %v after %d requests", args, err, requests.Load())
	}
	_, _, err = e.Call(ctx, opEcho, false, nil, nil, nil)
	var ce *ConnError
	if !errors.As(err, &ce) || requests.Load() != 3 {
		t.Fatalf("non-idempotent call: %v after %d requests, want a ConnError after 3", err, requests.Load())
	}
	if !strings.HasPrefix(err.Error(), "test endpoint (") {
		t.Fatalf("error %q does not name the endpoint", err)
	}

	// An idempotent call that keeps failing gives up after Retries+1 attempts.
	requests.Store(0)
	addr2 := fakeServer(t, func(nc net.Conn) {
		if _, err := ReadFrame(nc); err == nil {
			requests.Add(1)
		}
	})
	e2 := newTestEndpoint(t, addr2, EndpointOptions{Retries: 2, RetryDelay: time.Millisecond})
	_, _, err = e2.Call(ctx, opEcho, true, nil, nil, nil)
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "after 3 attempts") || requests.Load() != 3 {
		t.Fatalf("%v after %d requests", err, requests.Load())
	}
}

// A request rejected as corrupted (EBADMSG) never reached the handler, so
// even a non-idempotent one is sent again.
func TestEndpointRetryBadMessage(t *testing.T) {
	var requests atomic.Int64
	addr := fakeServer(t, func(nc net.Conn) {
		for {
			f, err := ReadFrame(nc)
			if err != nil {
				return
			}
			if requests.Add(1) == 1 {
				nc.Write(AppendFrame(nil, f.Op, FlagResponse|FlagError, f.ReqID, encodeError(ErrPayloadCRC), nil))
				continue
			}
			nc.Write(AppendFrame(nil, f.Op, FlagResponse, f.ReqID, []byte("ok"), nil))
		}
	})
	e := newTestEndpoint(t, addr, fastRetries)
	if args, _, err := e.Call(context.Background(), opEcho, false, nil, nil, nil); err != nil || string(args) != "ok" || requests.Load() != 2 {
		t.Fatalf("%q, %v after %d requests", args, err, requests.Load())
	}
}

// A server that is not up yet: connecting is retried, even for a call that
// is not idempotent, since nothing was sent.
func TestEndpointDialRetry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	e := newTestEndpoint(t, addr, EndpointOptions{Retries: -1, DialTimeout: time.Second})
	_, _, err = e.Call(context.Background(), opEcho, true, nil, nil, nil)
	var de *DialError
	if !errors.As(err, &de) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.HasPrefix(err.Error(), "test endpoint ("+addr+"): connect: ") {
		t.Fatalf("no server: %v", err)
	}

	h := newTestHandler()
	started := make(chan struct{})
	go func() {
		defer close(started)
		time.Sleep(60 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		startServerOn(t, ln, h, ServerOptions{})
	}()
	e2 := newTestEndpoint(t, addr, EndpointOptions{Retries: 10, RetryDelay: 10 * time.Millisecond})
	_, _, err = e2.Call(context.Background(), opEcho, false, nil, nil, nil)
	<-started
	if err != nil {
		t.Fatal(err)
	}
	if n := h.calls.Load(); n != 1 {
		t.Fatalf("handler called %d times", n)
	}
}

// A wrong secret is not retried.
func TestEndpointWrongSecret(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	startServerOn(t, cl, newTestHandler(), ServerOptions{})
	e := NewEndpoint("server X", ln.Addr().String(), []byte("the wrong secret, sixteen+"), fastRetries)
	defer e.Close()
	_, _, err = e.Call(context.Background(), opEcho, true, nil, nil, nil)
	if !errors.Is(err, ErrAuth) || !strings.HasPrefix(err.Error(), "server X: ") {
		t.Fatalf("%v, want ErrAuth", err)
	}
	if n := cl.accepted.Load(); n != 1 {
		t.Fatalf("%d connection attempts with a wrong secret", n)
	}
}

type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return nc, err
}

// The caller's context bounds the whole call, retries included.
func TestEndpointContext(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	e := newTestEndpoint(t, s.Addr, fastRetries)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := e.Call(ctx, opBlock, true, nil, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "test endpoint (") {
		t.Fatalf("%v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("returned after %v", d)
	}
	if n := h.calls.Load(); n != 1 {
		t.Fatalf("timed out call attempted %d times", n)
	}
	// When the caller sets no deadline, Timeout bounds the whole call, not
	// each attempt: the timed-out attempt is not retried.
	e2 := newTestEndpoint(t, s.Addr, EndpointOptions{Conns: 1, Retries: 1, RetryDelay: time.Millisecond, Timeout: 30 * time.Millisecond})
	if _, _, err := e2.Call(context.Background(), opEcho, true, nil, nil, nil); err != nil {
		t.Fatal(err) // dialled in time, as the rest of the test needs
	}
	before := h.calls.Load()
	_, _, err = e2.Call(context.Background(), opBlock, true, nil, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "attempts") {
		t.Fatalf("%v", err)
	}
	waitFor(t, "handler call", func() bool { return h.calls.Load() == before+1 })
	// Non-idempotent: one attempt only.
	before = h.calls.Load()
	if _, _, err := e2.Call(context.Background(), opBlock, false, nil, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
	waitFor(t, "handler call", func() bool { return h.calls.Load() == before+1 })
	time.Sleep(50 * time.Millisecond)
	if n := h.calls.Load() - before; n != 1 {
		t.Fatalf("non-idempotent call attempted %d times", n)
	}
	close(h.gate)
}

func TestEndpointClose(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	e := newTestEndpoint(t, s.Addr, EndpointOptions{Conns: 2})
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, _, err := e.Call(ctx, opCtxWait, false, nil, nil, nil)
		errc <- err
	}()
	waitFor(t, "handler to start", func() bool { return h.running.Load() == 1 })
	e.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("call in flight on Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call in flight not ended by Close")
	}
	// The server sees the connection go and cancels the handler.
	select {
	case <-h.ctxDone:
	case <-time.After(5 * time.Second):
		t.Fatal("handler not cancelled")
	}
	e.Close()
	// A closed endpoint stays closed: no new connection, no retries.
	if _, _, err := e.Call(ctx, opEcho, true, nil, nil, nil); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("call on a closed endpoint: %v, want net.ErrClosed", err)
	}
}

// TestEndpointDialHonoursContext: a server that accepts but never answers
// the handshake must not hold callers past their deadlines, neither the
// one dialling nor those queued behind it for the same connection slot.
func TestEndpointDialHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	e := NewEndpoint("silent server", ln.Addr().String(), []byte("0123456789abcdef"), EndpointOptions{Conns: 1, Retries: -1, DialTimeout: time.Minute})
	defer e.Close()
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < 3; i++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, _, err := e.Call(ctx, opEcho, true, nil, nil, nil)
			if err == nil || !strings.Contains(err.Error(), "silent server") {
				t.Errorf("call against a silent server: %v", err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("calls with 300 ms deadlines took %v", d)
	}
}
