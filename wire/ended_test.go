package wire

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A call whose context has already ended sends nothing and leaves the
// connection, and the other callers' requests on it, alone. Before, it
// wrote its frame against a deadline in the past, took the failed write
// for a partly sent frame and cut the connection: every request in
// flight on it failed with "connection lost", a non-idempotent one
// (a create, a rename) with no retry.
func TestCallWithEndedContextKeepsConnection(t *testing.T) {
	h := newTestHandler()
	arrived := make(chan struct{})
	h.onCall = func(req *Request) {
		if req.Op == opBlock {
			close(arrived)
		}
	}
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)

	other := make(chan error, 1)
	go func() {
		_, _, err := c.Call(context.Background(), opBlock, nil, nil, nil)
		other <- err
	}()
	<-arrived // the other request is at the server
	for _, ended := range []func() (context.Context, context.CancelFunc){
		func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		},
		func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		},
	} {
		ctx, cancel := ended()
		_, _, err := c.Call(ctx, opEcho, []byte("x"), [][]byte{make([]byte, 100)}, nil)
		cancel()
		if !errors.Is(err, ctx.Err()) {
			t.Errorf("call with an ended context: %v; want %v", err, ctx.Err())
		}
		if c.Broken() {
			t.Fatal("a call with an ended context broke the connection")
		}
	}
	close(h.gate)
	if err := <-other; err != nil {
		t.Fatalf("the other caller's request: %v", err)
	}
	if _, _, err := c.Call(context.Background(), opEcho, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
}
