package wire

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/wire/floodtest"
)

// addrConn is a connection from a chosen address that records its
// eviction (the gate wakes its owner by passing its deadline).
type addrConn struct {
	net.Conn // nil: only the methods below are used
	remote   net.Addr
	evicted  atomic.Bool // woken by the gate (an eviction)
}

func (c *addrConn) RemoteAddr() net.Addr        { return c.remote }
func (c *addrConn) Close() error                { return nil }
func (c *addrConn) SetDeadline(time.Time) error { c.evicted.Store(true); return nil }

func connFrom(ip string) *addrConn {
	return &addrConn{remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}
}

func admit(t *testing.T, g *Gate, c net.Conn) *Pass {
	t.Helper()
	a := g.Admit(c)
	if a.Pass == nil {
		t.Fatalf("connection from %v not admitted: %+v", c.RemoteAddr(), a)
	}
	return a.Pass
}

// refusal is why g refuses c (nil if admitted).
func refusal(g *Gate, c net.Conn) *Refusal { return g.Admit(c).Refused }

// Past its unauthenticated cap the gate evicts the oldest unauthenticated
// connection of the network holding the most, never an authenticated one.
func TestGateEvictsTheFloodersOldest(t *testing.T) {
	g := NewGate(100, 100, 4, 0)
	honest := connFrom("10.0.0.1")
	hp := admit(t, g, honest)
	var flood []*addrConn
	for range 3 {
		c := connFrom("10.0.0.66")
		admit(t, g, c)
		flood = append(flood, c)
	}
	// The cap (4) is reached: the next one, from anywhere, evicts the
	// flooder's oldest, not the honest host's one connection.
	next := connFrom("10.0.0.2")
	admit(t, g, next)
	if !flood[0].evicted.Load() || flood[1].evicted.Load() || honest.evicted.Load() {
		t.Fatalf("evicted: flood %v %v, honest %v; want the flood's oldest alone", flood[0].evicted.Load(), flood[1].evicted.Load(), honest.evicted.Load())
	}
	if !hp.Authenticated() {
		t.Fatal("the honest connection lost its place")
	}
	// Authenticated, it is never evicted, however many come.
	for i := range 20 {
		admit(t, g, connFrom(fmt.Sprintf("10.0.1.%d", i)))
	}
	if honest.evicted.Load() {
		t.Fatal("an authenticated connection was evicted")
	}
	st := g.Stats()
	if st.Unauthenticated != 4 || st.Evicted != 1+19 {
		t.Fatalf("stats %+v, want 4 unauthenticated and 20 evicted", st)
	}
}

// An evicted connection cannot authenticate after, and its place is free
// at once, counted once however its owner ends it.
func TestGateEvictedCannotAuthenticate(t *testing.T) {
	g := NewGate(2, 2, 2, 0)
	a := admit(t, g, connFrom("10.0.0.1"))
	admit(t, g, connFrom("10.0.0.2"))
	admit(t, g, connFrom("10.0.0.3")) // evicts a, the oldest of equals
	if a.Authenticated() {
		t.Fatal("an evicted connection authenticated")
	}
	a.Done()
	a.Done()
	if st := g.Stats(); st.Conns != 2 || st.Unauthenticated != 2 {
		t.Fatalf("stats %+v, want 2 connections, both unauthenticated", st)
	}
}

// With every place held by authenticated connections, a new one is
// refused with the server's cap; from a host at its own cap, with the
// host's.
func TestGateRefusesAtItsCaps(t *testing.T) {
	g := NewGate(4, 2, 4, 0)
	for _, ip := range []string{"10.0.0.1", "10.0.0.1", "10.0.0.2"} {
		if p := admit(t, g, connFrom(ip)); !p.Authenticated() {
			t.Fatal("not authenticated")
		}
	}
	r := refusal(g, connFrom("10.0.0.1"))
	if r == nil || !r.PerHost() || r.Host != "10.0.0.1" || r.Conns != 2 || r.Limit != 2 {
		t.Fatalf("refusal %+v, want the per-host cap of 10.0.0.1", r)
	}
	admit(t, g, connFrom("10.0.0.3")).Authenticated()
	r = refusal(g, connFrom("10.0.0.4"))
	if r == nil || r.PerHost() || r.Conns != 4 || r.Limit != 4 {
		t.Fatalf("refusal %+v, want the server's cap", r)
	}
	g.Close()
	if !g.Admit(connFrom("10.0.0.4")).Closed {
		t.Fatal("a closed gate admitted a connection")
	}
}

// One host holding a whole IPv6 /64 is one network for eviction, however
// many addresses it uses, while each address is its own peer.
func TestGateGroupsIPv6By64(t *testing.T) {
	g := NewGate(100, 100, 4, 0)
	var flood []*addrConn
	for i := range 3 {
		c := connFrom(fmt.Sprintf("2001:db8:1:2::%x", i+1))
		admit(t, g, c)
		flood = append(flood, c)
	}
	other := connFrom("2001:db8:1:3::1")
	admit(t, g, other)
	admit(t, g, connFrom("2001:db8:1:3::2"))
	if !flood[0].evicted.Load() || other.evicted.Load() {
		t.Fatal("the eviction did not take the /64 holding the most")
	}
	for _, tc := range []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"::1", "::/64"},
	} {
		if got := peerNetwork(&net.TCPAddr{IP: net.ParseIP(tc.ip)}); got != tc.want {
			t.Errorf("peerNetwork(%s) = %s, want %s", tc.ip, got, tc.want)
		}
	}
}

// Concurrent admissions, authentications and ends keep the counts right
// (run with -race).
func TestGateConcurrent(t *testing.T) {
	g := NewGate(64, 64, 8, 0)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				p := g.Admit(connFrom(fmt.Sprintf("10.0.%d.%d", w, i%7))).Pass
				if p == nil {
					continue
				}
				if i%3 == 0 {
					p.Authenticated()
				}
				p.Done()
			}
		}()
	}
	wg.Wait()
	if st := g.Stats(); st.Conns != 0 || st.Unauthenticated != 0 {
		t.Fatalf("after every connection ended: %+v", st)
	}
}

// A flood of connections that never authenticate, from more hosts than
// the server has places for and re-opened as fast as they are closed,
// does not keep an honest client out: it gets in, and is served, beside
// it. Before the gate, the flood held every place and the client was
// refused ("has 16 connections, its limit").
func TestFloodFromManyHostsWithoutTheSecret(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{MaxConns: 16, MaxConnsPerPeer: 4, HandshakeTimeout: 5 * time.Second})
	flood := floodtest.Start(s.Addr, 8, 4)
	defer flood.Stop()
	waitFor(t, "the flood to be under way", func() bool { return flood.Opened() >= 64 })
	start := time.Now()
	for i := range 5 {
		// pario's own client, refused as busy, dials again until its
		// timeout; a place frees as the flood's connections age and are
		// evicted, and its networks are refused.
		ep := NewEndpoint("test server", s.Addr, testSecret, EndpointOptions{Conns: 1, Timeout: 15 * time.Second})
		_, _, err := ep.Call(context.Background(), opEcho, true, []byte("hi"), nil, nil)
		ep.Close()
		if err != nil {
			t.Fatalf("honest client %d beside the flood (%d flood connections opened, %v in): %v", i, flood.Opened(), time.Since(start), err)
		}
	}
	st := s.gate.Stats()
	t.Logf("5 honest clients in %v beside a flood of %d connections; gate %+v", time.Since(start), flood.Opened(), st)
	if st.Evicted == 0 {
		t.Fatalf("gate %+v: want some evicted", st)
	}
}

// A network whose connections keep being evicted is refused for a while,
// with a reason; connections that end by themselves are no strike, and
// evictions further apart than the window do not add up.
func TestGatePenalizesEvictedNetworks(t *testing.T) {
	g := NewGate(100, 100, 1, 0)
	now := time.Unix(1e9, 0)
	g.now = func() time.Time { return now }
	newcomer := 0
	// Each connection from 10.0.0.9 is evicted by a newcomer from another
	// network, which then authenticates.
	evictNine := func() {
		admit(t, g, connFrom("10.0.0.9"))
		newcomer++
		admit(t, g, connFrom(fmt.Sprintf("10.1.%d.%d", newcomer/200, newcomer%200))).Authenticated()
	}
	for range 3 * penaltyStrikes {
		admit(t, g, connFrom("10.0.0.8")).Done() // ended in its handshake: no strike
	}
	for range penaltyStrikes - 1 {
		evictNine()
	}
	// Spread out: the window forgets them.
	now = now.Add(penaltyWindow + time.Second)
	for range penaltyStrikes {
		evictNine()
	}
	r := refusal(g, connFrom("10.0.0.9"))
	if r == nil || r.Penalized != "10.0.0.9" || !r.Until.Equal(now.Add(penaltyFor)) {
		t.Fatalf("after %d evictions in a row: refusal %+v, want a penalty", penaltyStrikes, r)
	}
	if msg := r.Reason("meta", "max-conns-per-peer", "max-conns"); !strings.Contains(msg, "meta refuses connections from 10.0.0.9") || !strings.Contains(msg, "evicted") {
		t.Fatalf("reason %q", msg)
	}
	// Others are not held back, and the penalty ends.
	admit(t, g, connFrom("10.0.0.8"))
	now = now.Add(penaltyFor)
	admit(t, g, connFrom("10.0.0.9"))
}

// A connection that authenticates ends its network's run of evictions:
// honest clients behind one address (a NAT) with a flooder are not
// refused with it while they keep getting in, though the count starts
// again after them. Before, their authentications changed nothing, and
// the network was refused at its 8th eviction in 10 s whatever came
// between.
func TestGateAuthenticationForgivesStrikes(t *testing.T) {
	g := NewGate(100, 100, 1, 0)
	now := time.Unix(1e9, 0)
	g.now = func() time.Time { return now }
	newcomer := 0
	evictNine := func() {
		t.Helper()
		admit(t, g, connFrom("10.0.0.9"))
		newcomer++
		admit(t, g, connFrom(fmt.Sprintf("10.1.0.%d", newcomer))).Authenticated()
	}
	for range penaltyStrikes - 1 {
		evictNine()
	}
	// An honest client behind the same address gets in.
	if !admit(t, g, connFrom("10.0.0.9")).Authenticated() {
		t.Fatal("the honest client was evicted")
	}
	for range penaltyStrikes - 1 {
		evictNine() // each admitted: the run began again
	}
	evictNine()
	if r := refusal(g, connFrom("10.0.0.9")); r == nil || r.Penalized != "10.0.0.9" {
		t.Fatalf("after %d evictions in a row since the last authentication: refusal %+v, want a penalty", penaltyStrikes, r)
	}
}

// A handshake younger than minAge is never evicted: a burst of honest
// connections meets the caps alone, as before the gate; once older, an
// unauthenticated connection may be.
func TestGateSparesYoungHandshakes(t *testing.T) {
	g := NewGate(4, 100, 2, time.Second)
	now := time.Unix(1e9, 0)
	g.now = func() time.Time { return now }
	var burst []*addrConn
	for range 4 {
		c := connFrom("10.0.0.5")
		admit(t, g, c)
		burst = append(burst, c)
	}
	// Full, every one young: the next is refused, none evicted.
	if r := refusal(g, connFrom("10.0.0.6")); r == nil || r.PerHost() {
		t.Fatalf("refusal %+v, want the server's cap", r)
	}
	for i, c := range burst {
		if c.evicted.Load() {
			t.Fatalf("young handshake %d evicted", i)
		}
	}
	now = now.Add(time.Second)
	admit(t, g, connFrom("10.0.0.6"))
	if !burst[0].evicted.Load() || burst[1].evicted.Load() {
		t.Fatal("past minAge, the oldest was not the one evicted")
	}
}

// A network never evicts its own connections to make room for more of
// them: past the unauthenticated cap, a flooder's newcomer is admitted
// only as the caps allow, and a newcomer from another network evicts.
func TestGateFloodDoesNotChurnItsOwnPlaces(t *testing.T) {
	g := NewGate(3, 100, 2, 0)
	a, b := connFrom("10.0.0.9"), connFrom("10.0.0.9")
	admit(t, g, a)
	admit(t, g, b)
	c := connFrom("10.0.0.9")
	admit(t, g, c) // no eviction: the server's cap is not reached yet
	if a.evicted.Load() || b.evicted.Load() {
		t.Fatal("a network evicted its own connection")
	}
	if r := refusal(g, connFrom("10.0.0.9")); r == nil {
		t.Fatal("a fourth connection past the server's cap of 3 was admitted")
	}
	admit(t, g, connFrom("10.0.0.1"))
	if !a.evicted.Load() || b.evicted.Load() {
		t.Fatal("another network's newcomer did not evict the flood's oldest")
	}
}

// kindCounter is a ServerObserver that counts errors by kind.
type kindCounter struct {
	mu    sync.Mutex
	kinds map[string]int
}

func (k *kindCounter) Budget(func() (int64, int64))                      {}
func (k *kindCounter) ConnAccepted()                                     {}
func (k *kindCounter) ConnClosed()                                       {}
func (k *kindCounter) ConnRefused(string)                                {}
func (k *kindCounter) RequestStarted(uint8)                              {}
func (k *kindCounter) RequestDone(uint8, int, int, time.Duration, error) {}
func (k *kindCounter) Error(kind string) {
	k.mu.Lock()
	k.kinds[kind]++
	k.mu.Unlock()
}

func (k *kindCounter) count(kind string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kinds[kind]
}

// An eviction is counted and logged once, as an eviction naming the
// connection evicted, not also as the evicted connection's failed
// handshake (which pario_errors_total{kind="handshake"} would count).
func TestEvictionCountedOnce(t *testing.T) {
	var logs syncBuffer
	obs := &kindCounter{kinds: map[string]int{}}
	s := startServer(t, newTestHandler(), ServerOptions{MaxConns: 100, MaxUnauthenticated: 1, HandshakeTimeout: 500 * time.Millisecond,
		Observer: obs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, 7)}}
	silent, err := d.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(200 * time.Millisecond) // older than a fifth of the handshake timeout
	c := dialTest(t, s.Addr)
	defer c.Close()
	waitFor(t, "the eviction to be counted", func() bool { return obs.count(ErrKindEvicted) == 1 })
	time.Sleep(100 * time.Millisecond) // the evicted connection's goroutine has ended
	if n := obs.count(ErrKindHandshake) + obs.count(ErrKindTimeout); n != 0 {
		t.Errorf("the eviction also counted as %d failed handshakes", n)
	}
	out := logs.String()
	if strings.Contains(out, "handshake failed") || !strings.Contains(out, "evicted=127.0.1.7") {
		t.Errorf("log:\n%s\nwant the eviction naming 127.0.1.7, and no failed handshake", out)
	}
}

// pario's own client dials again when a server refuses it at a cap, until
// the call's timeout, as docs/store.md says: before, Endpoint.Call failed
// at the first refusal ("has 1 connections, its limit"), since the
// refusal's errno (EAGAIN) is not one it retried.
func TestEndpointDialsAgainWhenRefused(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{MaxConns: 1})
	held := dialTest(t, s.Addr)
	go func() {
		time.Sleep(700 * time.Millisecond)
		held.Close()
	}()
	ep := NewEndpoint("test server", s.Addr, testSecret, EndpointOptions{Conns: 1, Timeout: 10 * time.Second})
	defer ep.Close()
	start := time.Now()
	if _, _, err := ep.Call(context.Background(), opEcho, true, []byte("hi"), nil, nil); err != nil {
		t.Fatalf("a call while the server was full for 0.7 s: %v", err)
	}
	if took := time.Since(start); took < 600*time.Millisecond {
		t.Errorf("the call took %v: the server was not full when it came (the test proves nothing)", took)
	}
}

// BenchmarkGateAdmitManyNetworks admits connections past the eviction
// threshold with 65,536 networks each holding one young unauthenticated
// connection (none can be evicted): an admission looks at evictSample of
// them, not every network (a scan of all took 8-11 ms per admission).
func BenchmarkGateAdmitManyNetworks(b *testing.B) {
	g := NewGate(1<<20, 16, 1<<14, time.Hour)
	conns := make([]*addrConn, 1<<16)
	for i := range conns {
		conns[i] = connFrom(fmt.Sprintf("10.%d.%d.1", i>>8, i&0xff))
		g.Admit(conns[i])
	}
	extra := connFrom("192.0.2.1")
	b.ResetTimer()
	for range b.N {
		if p := g.Admit(extra).Pass; p != nil {
			p.Done()
		}
	}
}
