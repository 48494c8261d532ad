package wire

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Gate admits a server's connections. It caps them in all and per peer
// host, as a server must, and it keeps connections that have not yet
// authenticated, which anyone can open, from taking the places honest
// peers need:
//
//   - Past MaxUnauthenticated connections in their handshake, or when the
//     server is full, a new connection takes the place of the oldest
//     unauthenticated one from the network that holds the most of them,
//     as sshd's MaxStartups drops early, among those older than minAge: a
//     handshake under way, which takes a few round trips, is never cut
//     (a burst of honest clients, a job's ranks connecting at once, meets
//     the caps alone, as before), while a connection that has sat there
//     longer is most likely one that never authenticates. A flood without
//     the secret so mostly evicts itself, and honest clients get in.
//   - A network whose connections keep being evicted (penaltyStrikes of
//     them, each within penaltyWindow of the one before, and none of its
//     connections authenticating between them) has its new connections
//     refused for penaltyFor, as OpenSSH's PerSourcePenalties do: a flood
//     churning its connections faster than honest handshakes complete
//     would otherwise evict those too. Only evictions count: a
//     connection that ends by itself, or with a wrong secret, held its
//     place without keeping anyone out. An authentication ends the run
//     (forgiveLocked), unlike OpenSSH's penalties, which only expire.
//   - Authenticated connections are never evicted; past MaxConns or
//     MaxConnsPerPeer of them a new connection is refused with a reason.
//
// Unauthenticated connections are grouped by network for eviction (an
// IPv4 address, an IPv6 /64, which one host can fill with addresses), and
// counted per address against MaxConnsPerPeer, so that the hosts of a
// cluster sharing one IPv6 prefix are not one peer.
type Gate struct {
	maxConns, maxPerPeer, maxUnauth int
	minAge                          time.Duration

	mu     sync.Mutex
	closed bool
	conns  map[*Pass]struct{}
	peers  map[string]int     // connections per peer address
	unauth map[string][]*Pass // unauthenticated, per network, oldest first
	// pending holds every unauthenticated pass (in no order; Pass.idx is
	// its place): their count, and a sample for evictLocked.
	pending []*Pass
	evicted int64
	strikes map[string]*strikes // per network
	pruned  time.Time           // when strikes was last swept
	now     func() time.Time    // time.Now; tests move it
}

// Penalties of networks whose connections keep being evicted.
const (
	penaltyStrikes = 8
	penaltyWindow  = 10 * time.Second
	penaltyFor     = 10 * time.Second
	// maxStruck bounds the networks whose strikes are remembered; past
	// it, expired ones are swept (at most once a second) and new ones are
	// not tracked until there is room (eviction still holds).
	maxStruck = 4096
	// evictSample is how many unauthenticated connections an eviction
	// looks at when there are more: networks holding many of them are
	// the likeliest drawn, and an admission costs the same whatever the
	// number of networks (a scan of 65,536 took 10 ms under the lock).
	evictSample = 32
)

// strikes are a network's recent connections that were evicted.
type strikes struct {
	n           int
	last, until time.Time
}

// Pass is one admitted connection's place in its Gate.
type Pass struct {
	g       *Gate
	nc      net.Conn
	host    string // PeerHost
	network string // what unauthenticated connections are grouped by
	since   time.Time
	idx     int // in Gate.pending while unauthenticated
	authed  bool
	gone    bool // evicted or done: its place is free
	evicted bool
}

// Refusal says why a connection was not admitted: the cap it met, and
// for a per-host cap the host; or, with Penalized, that its network
// is refused until Until.
type Refusal struct {
	Conns, Limit int
	Host         string // set for the per-host cap
	Penalized    string // the network, for a penalty
	Until        time.Time
}

// PerHost reports whether the per-host cap refused the connection.
func (r *Refusal) PerHost() bool { return r.Host != "" }

// Reason says why the connection was refused, naming server, and for a
// cap the option that sets it (perHost or all: each server names its
// own); the caller's error wraps it with its kind of busy.
func (r *Refusal) Reason(server, perHost, all string) string {
	switch {
	case r.Penalized != "":
		return fmt.Sprintf("%s refuses connections from %s for %.0f s: %d of them were evicted before they authenticated (a flood of connections that never do)",
			server, r.Penalized, max(1, math.Ceil(time.Until(r.Until).Seconds())), penaltyStrikes)
	case r.PerHost():
		return fmt.Sprintf("%s has %d connections from %s, its limit per host (%s)", server, r.Conns, r.Host, perHost)
	default:
		return fmt.Sprintf("%s has %d connections, its limit (%s)", server, r.Conns, all)
	}
}

// NewGate returns a gate with the given caps: maxConns connections in all,
// maxPerPeer from one address, maxUnauth of them unauthenticated (each at
// least 1), which may be evicted once older than minAge (see
// EvictableAfter).
func NewGate(maxConns, maxPerPeer, maxUnauth int, minAge time.Duration) *Gate {
	return &Gate{
		maxConns: max(1, maxConns), maxPerPeer: max(1, maxPerPeer), maxUnauth: max(1, maxUnauth), minAge: minAge,
		conns: make(map[*Pass]struct{}), peers: make(map[string]int), unauth: make(map[string][]*Pass),
		strikes: make(map[string]*strikes), now: time.Now,
	}
}

// EvictableAfter is how long an unauthenticated connection is safe from
// eviction, for a handshake deadline: a fifth of it (2 s of the default
// 10 s), several round trips of a long link.
func EvictableAfter(handshake time.Duration) time.Duration { return handshake / 5 }

// DefaultMaxUnauthenticated is the share of a server's connections that may
// be in their handshake at once when none is configured: a quarter.
func DefaultMaxUnauthenticated(maxConns int) int { return max(1, maxConns/4) }

// Admission is what Admit made of a connection.
type Admission struct {
	Pass    *Pass    // its place, if admitted
	Refused *Refusal // why not, if refused
	Closed  bool     // the gate is closed: the caller closes the connection and stops
	// Evicted is the unauthenticated connection whose place it took, if
	// any. Its place is free already, and its owner is woken (its
	// deadline passed), sees Pass.Evicted, tells its peer why where the
	// handshake allows (EvictionReason, as a busy refusal) and closes it.
	Evicted net.Conn
}

// EvictionReason says why a connection of server's was evicted, for its
// peer: a busy refusal (the servers wrap it with theirs), after which
// pario's clients dial again, as when a server is full.
func EvictionReason(server string) string {
	return server + " evicted this connection before it authenticated, to admit another: " +
		"too many connections were in their handshake (a flood of connections that never authenticate?)"
}

// Admit gives nc a place, evicting an unauthenticated connection if need
// be, or says why it is refused.
func (g *Gate) Admit(nc net.Conn) Admission {
	a := g.admit(nc)
	if a.Evicted != nil {
		// Its owner, not the accept loop, ends it: only the owner knows
		// where its handshake is, and so what its peer can be told. A
		// write here could also wait on the peer (a TLS handshake).
		_ = a.Evicted.SetDeadline(time.Now())
	}
	return a
}

func (g *Gate) admit(nc net.Conn) Admission {
	host, network := PeerHost(nc.RemoteAddr()), peerNetwork(nc.RemoteAddr())
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return Admission{Closed: true}
	}
	now := g.now()
	if st := g.strikes[network]; st != nil && now.Before(st.until) {
		return Admission{Refused: &Refusal{Penalized: network, Until: st.until}}
	}
	fromHost := g.peers[host]
	if fromHost >= g.maxPerPeer {
		if n := len(g.conns); n >= g.maxConns {
			return Admission{Refused: &Refusal{Conns: n, Limit: g.maxConns}}
		}
		return Admission{Refused: &Refusal{Conns: fromHost, Limit: g.maxPerPeer, Host: host}}
	}
	var a Admission
	if n := len(g.pending); n > 0 && (n >= g.maxUnauth || len(g.conns) >= g.maxConns) {
		if victim := g.evictLocked(now, len(g.unauth[network])); victim != nil {
			a.Evicted = victim.nc
		}
	}
	if n := len(g.conns); n >= g.maxConns {
		a.Refused = &Refusal{Conns: n, Limit: g.maxConns}
		return a
	}
	p := &Pass{g: g, nc: nc, host: host, network: network, since: now}
	g.conns[p] = struct{}{}
	g.peers[host]++
	g.unauth[p.network] = append(g.unauth[p.network], p)
	p.idx = len(g.pending)
	g.pending = append(g.pending, p)
	a.Pass = p
	return a
}

// evictLocked frees the place of the oldest unauthenticated connection of
// the network holding the most of them, among connections older than
// minAge and networks holding more than the newcomer's (held) does, and
// returns it for closing (nil if there is none). A network so never
// evicts its own connections to make room for more of them: a flood from
// a few hosts cannot churn its places, and they go to newcomers from
// other networks as soon as they are old enough. Past evictSample
// unauthenticated connections, the networks of that many drawn at random
// are the candidates.
func (g *Gate) evictLocked(now time.Time, held int) *Pass {
	var worst []*Pass
	consider := func(ps []*Pass) {
		if now.Sub(ps[0].since) < g.minAge || len(ps) <= held {
			return // its oldest is a handshake still under way, or it holds no more than the newcomer's network
		}
		if len(ps) > len(worst) || (len(ps) == len(worst) && ps[0].since.Before(worst[0].since)) {
			worst = ps
		}
	}
	if len(g.pending) <= evictSample {
		for _, ps := range g.unauth {
			consider(ps)
		}
	} else {
		for range evictSample {
			consider(g.unauth[g.pending[rand.IntN(len(g.pending))].network])
		}
	}
	if worst == nil {
		return nil
	}
	victim := worst[0]
	victim.evicted = true
	g.releaseLocked(victim)
	g.strikeLocked(victim.network)
	g.evicted++
	return victim
}

// releaseLocked frees p's place.
func (g *Gate) releaseLocked(p *Pass) {
	if p.gone {
		return
	}
	p.gone = true
	delete(g.conns, p)
	if g.peers[p.host]--; g.peers[p.host] <= 0 {
		delete(g.peers, p.host)
	}
	if !p.authed {
		g.dropUnauthLocked(p)
	}
}

// strikeLocked counts an evicted connection of network, and refuses the
// network's connections for penaltyFor at the
// penaltyStrikes-th in a row.
func (g *Gate) strikeLocked(network string) {
	now := g.now()
	st := g.strikes[network]
	if st == nil {
		if len(g.strikes) >= maxStruck && now.Sub(g.pruned) >= time.Second {
			g.pruned = now
			for n, s := range g.strikes {
				if now.Sub(s.last) > penaltyWindow && now.After(s.until) {
					delete(g.strikes, n)
				}
			}
		}
		if len(g.strikes) >= maxStruck {
			return
		}
		st = &strikes{}
		g.strikes[network] = st
	}
	if now.Sub(st.last) > penaltyWindow {
		st.n = 0
	}
	st.n++
	st.last = now
	if st.n >= penaltyStrikes {
		st.n = 0
		st.until = now.Add(penaltyFor)
	}
}

// dropUnauthLocked takes p out of the unauthenticated pool.
func (g *Gate) dropUnauthLocked(p *Pass) {
	last := g.pending[len(g.pending)-1]
	g.pending[p.idx], last.idx = last, p.idx
	g.pending = g.pending[:len(g.pending)-1]
	ps := g.unauth[p.network]
	for i, q := range ps {
		if q == p {
			ps = append(ps[:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(g.unauth, p.network)
	} else {
		g.unauth[p.network] = ps
	}
}

// Authenticated moves p out of the unauthenticated pool, where it could
// be evicted, before the server tells its peer that it is in. It reports
// false if p was evicted first (or its place was given back).
func (p *Pass) Authenticated() bool {
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if p.gone || p.authed {
		return !p.gone
	}
	g.dropUnauthLocked(p)
	p.authed = true
	g.forgiveLocked(p.network)
	return true
}

// forgiveLocked ends network's run of evictions: one of its connections
// authenticated, so an honest peer is there (behind one address with a
// flooder, a NAT), and penalizing the network would refuse it too; the
// evictions were done to its connections by newcomers, and a slow honest
// handshake is evicted like a flood's. A penalty in force stays to its
// end, and the count starts again from the next eviction.
func (g *Gate) forgiveLocked(network string) {
	if st := g.strikes[network]; st != nil {
		st.n = 0
	}
}

// Evicted reports whether p lost its place to another connection: its
// handshake's failure is that, not the peer's doing, and is counted and
// logged once, as the eviction.
func (p *Pass) Evicted() bool {
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
	return p.evicted
}

// Done frees p's place once its connection has ended.
func (p *Pass) Done() {
	p.g.mu.Lock()
	p.g.releaseLocked(p)
	p.g.mu.Unlock()
}

// Close closes every admitted connection and admits no more.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	var ncs []net.Conn
	for p := range g.conns {
		ncs = append(ncs, p.nc)
	}
	g.mu.Unlock()
	for _, nc := range ncs {
		nc.Close()
	}
}

// GateStats is what a Gate holds now.
type GateStats struct {
	Conns, Unauthenticated int
	Evicted                int64 // unauthenticated connections evicted so far
}

// Stats reports what g holds now.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GateStats{Conns: len(g.conns), Unauthenticated: len(g.pending), Evicted: g.evicted}
}

// peerNetwork is the network unauthenticated connections are grouped by:
// an IPv4 address, or an IPv6 /64 (one host may hold a whole /64).
func peerNetwork(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return PeerHost(a)
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return PeerHost(a)
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	pfx, err := ip.Prefix(64)
	if err != nil {
		return ip.String()
	}
	return pfx.String()
}
