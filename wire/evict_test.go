package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// gateClock replaces g's clock by one the test moves (under g's lock, as
// the gate reads it), and returns the function that moves it.
func gateClock(g *Gate) (advance func(time.Duration)) {
	var mu sync.Mutex
	now := time.Unix(1e9, 0)
	g.mu.Lock()
	g.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g.mu.Unlock()
	return func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

// dialFrom opens a connection to addr from the loopback address ip, one
// that never answers the server's hello (a flood's), closed at the test's
// end.
func dialFrom(t testing.TB, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A connection evicted in its handshake is told why, as a connection
// refused at a cap is: a busy refusal (EAGAIN) naming the server, which
// pario's client dials again after. Before, it was closed without a word
// and its client failed with "read auth reply: EOF".
func TestEvictedHandshakeIsToldWhy(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{Name: "data7", MaxConns: 100, MaxUnauthenticated: 1})
	advance := gateClock(s.gate)
	slow, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	waitFor(t, "the slow client to be admitted", func() bool { return s.gate.Stats().Unauthenticated == 1 })
	advance(EvictableAfter(HandshakeTimeout))
	dialFrom(t, "127.0.1.1", s.Addr) // takes the slow client's place
	waitFor(t, "the eviction", func() bool { return s.gate.Stats().Evicted == 1 })
	// The slow client's handshake goes on now: hello, auth, answer.
	_, _, err = clientHandshake(slow, "data7 (test)", testSecret, ProtectAEAD)
	if !errors.Is(err, syscall.EAGAIN) || !strings.Contains(err.Error(), "server data7") || !strings.Contains(err.Error(), "evicted") {
		t.Fatalf("handshake of an evicted connection: %v; want a busy refusal (EAGAIN) from data7 saying it was evicted", err)
	}
	var remote *RemoteError
	if !errors.As(err, &remote) || !refusedBusy(&DialError{Server: "data7", Err: err}) {
		t.Fatalf("%v: not a busy refusal to Endpoint.Call", err)
	}
}

// stallProxy forwards connections to a server, holding back what the
// client sends on its first connections (a long, slow link) while the
// server's side flows: the client's handshake stalls after the hello.
type stallProxy struct {
	ln    net.Listener
	hold  int      // connections whose client bytes are held
	held  chan int // the index of each held connection, once its client has sent something
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newStallProxy(t *testing.T, server string, hold int) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, hold: hold, held: make(chan int, hold)}
	t.Cleanup(p.close)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { // server to client, and the end of both
				defer p.wg.Done()
				_, _ = io.Copy(c, up)
				c.Close()
				up.Close()
			}()
			go func() {
				defer p.wg.Done()
				if i < p.hold {
					var b [1]byte
					if _, err := c.Read(b[:]); err == nil {
						p.held <- i
					}
					_, _ = io.Copy(io.Discard, c)
					return
				}
				_, _ = io.Copy(up, c)
				if tc, ok := up.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}()
		}
	}()
	return p
}

func (p *stallProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// An honest client on a slow link whose handshake a flood evicts, again
// and again, dials again as when refused busy, until its call's timeout,
// and its call succeeds once the flood ends; an eviction does not use up
// its retries. Before, each eviction was a bare EOF, retried as a failed
// attempt: the call failed after Retries+1 of them ("read auth reply: EOF
// (after 3 attempts)").
func TestEndpointDialsAgainWhenEvicted(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{MaxConns: 100, MaxUnauthenticated: 1})
	advance := gateClock(s.gate)
	const evictions = 3
	proxy := newStallProxy(t, s.Addr, evictions)
	ep := NewEndpoint("test server", proxy.ln.Addr().String(), testSecret, EndpointOptions{Conns: 1, Retries: evictions - 1, Timeout: 30 * time.Second})
	defer ep.Close()
	done := make(chan error, 1)
	go func() {
		_, _, err := ep.Call(context.Background(), opEcho, true, []byte("hi"), nil, nil)
		done <- err
	}()
	for i := range evictions {
		select {
		case <-proxy.held:
		case err := <-done:
			t.Fatalf("the call ended after %d evictions: %v", i, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("the client did not dial again after %d evictions", i)
		}
		// The client's connection alone is in its handshake (the
		// flooder before it has gone): it is the one the next evicts.
		waitFor(t, "the flooder to go", func() bool { return s.gate.Stats().Unauthenticated == 1 })
		advance(EvictableAfter(HandshakeTimeout))
		flooder := dialFrom(t, fmt.Sprintf("127.0.1.%d", i+1), s.Addr)
		waitFor(t, "the eviction", func() bool { return s.gate.Stats().Evicted == int64(i+1) })
		flooder.Close() // the flood ends
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a call evicted %d times, then free to go: %v", evictions, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end")
	}
}
