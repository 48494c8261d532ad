package rank

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config adjusts Join. The zero value detects everything from the
// environment.
type Config struct {
	// Env is the environment to detect from; nil means the process's.
	Env map[string]string
	// Rendezvous, when set, is rank 0's address (host or host:port); it
	// overrides the environment (a --rendezvous flag), except for ranks
	// pario's own launcher started, which meet where it says.
	Rendezvous string
	// JobID, when set, overrides the detected job id. Ranks with different
	// job ids refuse each other.
	JobID string
	// Timeout bounds the rendezvous: how long rank 0 waits for the others
	// and the others keep dialling it. Default 2 minutes.
	Timeout time.Duration
	// HeartbeatInterval and HeartbeatTimeout: idle connections carry a
	// heartbeat every interval, and a peer silent for the timeout is dead.
	// Rank 0's values apply to all ranks. Defaults 1s and 30s.
	HeartbeatInterval time.Duration
	HeartbeatTimeout  time.Duration
	// Listener, for rank 0, is a listener to use instead of binding the
	// rendezvous address. Join closes it when the rendezvous is over.
	Listener net.Listener
}

const (
	defaultTimeout   = 2 * time.Minute
	defaultInterval  = time.Second
	defaultHBTimeout = 30 * time.Second
	// helloTimeout bounds how long rank 0 waits for a hello on a new
	// connection.
	helloTimeout = 10 * time.Second
)

func (cfg *Config) defaults() {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = defaultInterval
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = defaultHBTimeout
	}
	if cfg.HeartbeatTimeout < 2*cfg.HeartbeatInterval {
		cfg.HeartbeatTimeout = 2 * cfg.HeartbeatInterval
	}
}

// CheckRendezvous says what is wrong with addr as Config.Rendezvous (host
// or host:port), so that a command can refuse it before it starts ranks
// that would each fail on it.
func CheckRendezvous(addr string) error {
	if _, err := withPort(addr, 1); err != nil {
		return fmt.Errorf("rendezvous address %q: %v", addr, err)
	}
	return nil
}

// Join detects this rank in the environment (see Detect), applies cfg's
// overrides and meets the other ranks at the rendezvous. It returns when all
// ranks have joined, or with an error naming what is missing when ctx ends
// or cfg.Timeout passes. With one rank it returns at once and does no I/O.
// When cfg.Env is nil and Launch started this rank, Join removes Launch's
// PARIO_* variables from the process environment once read, so that the
// commands the rank runs do not take themselves for ranks.
func Join(ctx context.Context, cfg Config) (*Comm, error) {
	env := cfg.Env
	if env == nil {
		env = Environ()
	}
	info, err := Detect(env)
	if err != nil {
		return nil, err
	}
	if cfg.Env == nil {
		consumeLaunchVars(info)
	}
	// Ranks pario's launcher started meet where it says (rank 0 holds the
	// socket it bound): an option given to the command they all run is
	// not theirs to follow.
	if cfg.Rendezvous != "" && info.Launcher != LauncherPario {
		addr, err := withPort(cfg.Rendezvous, info.Port)
		if err != nil {
			return nil, fmt.Errorf("rank: rendezvous address %q: %v", cfg.Rendezvous, err)
		}
		info.Rendezvous, info.RendezvousFrom = addr, "option"
	}
	if cfg.JobID != "" {
		info.JobID = cfg.JobID
	}
	if cfg.Listener == nil && info.ListenFD >= 0 && info.Rank == 0 && info.Size > 1 {
		f := os.NewFile(uintptr(info.ListenFD), "rendezvous listener")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("rank: PARIO_LISTEN_FD=%d: %v", info.ListenFD, err)
		}
		cfg.Listener = ln
	}
	return join(ctx, info, cfg)
}

// launchVars are the variables Launch gives each rank it starts.
var launchVars = []string{"PARIO_RANK", "PARIO_SIZE", "PARIO_RENDEZVOUS", "PARIO_JOB", "PARIO_LISTEN_FD"}

// consumeLaunchVars removes from the process environment what Launch told
// this rank, once read: a command the rank runs (pario farm runs one per
// segment) is not a rank of this run, and a pario inside it that found
// them took itself for one (dialling a rendezvous long over, or taking
// its own descriptor 3 for the launcher's listener). Variables a user set
// for mpirun or srun stay, as do the launcher's own (OMPI_*, SLURM_*).
func consumeLaunchVars(info Info) {
	if info.Launcher != LauncherPario {
		return
	}
	for _, v := range launchVars {
		os.Unsetenv(v)
	}
}

func join(ctx context.Context, info Info, cfg Config) (*Comm, error) {
	cfg.defaults()
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	c := newComm(info, host, os.Getpid(), cfg.HeartbeatInterval, cfg.HeartbeatTimeout)
	if info.Size == 1 {
		if cfg.Listener != nil {
			cfg.Listener.Close()
		}
		return c, nil
	}
	if info.Rendezvous == "" && (info.Rank != 0 || cfg.Listener == nil) {
		return nil, fmt.Errorf("rank %d of %d (launcher %s): no rendezvous address: pass one (--rendezvous) or set PARIO_RENDEZVOUS to rank 0's host[:port]", info.Rank, info.Size, info.Launcher)
	}
	deadline := time.Now().Add(cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if info.Rank == 0 {
		ln := cfg.Listener
		if ln == nil {
			if ln, err = net.Listen("tcp", bindAddr(info.Rendezvous)); err != nil {
				return nil, fmt.Errorf("rank 0: rendezvous at %s (from %s): %v", info.Rendezvous, info.RendezvousFrom, err)
			}
		}
		err = c.serve(ctx, ln, deadline, cfg.Timeout)
	} else {
		err = c.dial(ctx, deadline, cfg.Timeout)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// bindAddr is what rank 0 listens on for the rendezvous address addr: the
// IP itself when it is one, all interfaces for a host name.
func bindAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) != nil {
		return addr
	}
	return ":" + port
}

func (c *Comm) where() string {
	if c.info.Rendezvous == "" {
		return "the inherited listener"
	}
	if c.info.RendezvousFrom == "" {
		return c.info.Rendezvous
	}
	return fmt.Sprintf("%s (from %s)", c.info.Rendezvous, c.info.RendezvousFrom)
}

// refusals keeps what rank 0 refused at the rendezvous for its error
// message: a few of each kind and a count of the rest, so that a port
// scanner's thousand connections do not bury the rank that came with the
// wrong job id.
type refusals struct {
	ranks, strangers []string // refused hellos; connections that sent none
	more             int
}

const refusalsShown = 4

func (r *refusals) add(reason string, fromRank bool) {
	list := &r.strangers
	if fromRank {
		list = &r.ranks
	}
	if len(*list) < refusalsShown {
		*list = append(*list, reason)
		return
	}
	r.more++
}

func (r *refusals) String() string {
	all := append(append([]string(nil), r.ranks...), r.strangers...)
	if len(all) == 0 {
		return ""
	}
	s := "; refused: " + strings.Join(all, "; ")
	if r.more > 0 {
		s += fmt.Sprintf(" (and %d more refused)", r.more)
	}
	return s
}

// serve is rank 0's side of the rendezvous.
func (c *Comm) serve(ctx context.Context, ln net.Listener, deadline time.Time, timeout time.Duration) error {
	size := c.info.Size
	var (
		mu       sync.Mutex
		links    = make([]*link, size)
		joined   int
		decided  bool
		rejected refusals
		all      = make(chan struct{})
	)
	handshake := func(conn net.Conn) {
		hd := time.Now().Add(helloTimeout)
		if deadline.Before(hd) {
			hd = deadline
		}
		conn.SetDeadline(hd)
		rd := &deadlineConn{c: conn}
		br := bufio.NewReaderSize(rd, 64<<10)
		typ, body, err := readFrame(br, maxHello)
		var h hello
		if err == nil && typ != msgHello {
			err = fmt.Errorf("first message has type %d, not hello", typ)
		}
		if err == nil {
			h, err = decodeHello(body)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			rejected.add(fmt.Sprintf("a connection from %s: %v", conn.RemoteAddr(), err), false)
			conn.Close()
			return
		}
		var reason string
		switch {
		case decided:
			reason = "the rendezvous is over"
		case h.job != c.info.JobID:
			reason = fmt.Sprintf("job mismatch: rank 0 (%s:%d) is in job %q, rank %d (%s:%d) in job %q",
				c.host, c.pid, c.info.JobID, h.rank, h.host, h.pid, h.job)
		case h.size != size:
			reason = fmt.Sprintf("size mismatch: rank 0 (%s:%d) has %d ranks, rank %d (%s:%d) has %d",
				c.host, c.pid, size, h.rank, h.host, h.pid, h.size)
		case h.rank < 1 || h.rank >= size:
			reason = fmt.Sprintf("rank %d (%s:%d) is out of range [1, %d)", h.rank, h.host, h.pid, size)
		case links[h.rank] != nil:
			reason = fmt.Sprintf("rank %d joined twice: from %s:%d and from %s:%d",
				h.rank, links[h.rank].host, links[h.rank].pid, h.host, h.pid)
		}
		if reason != "" {
			rejected.add(reason, true)
			writeFrame(conn, rejectMsg(reason))
			conn.Close()
			return
		}
		links[h.rank] = newLink(c, h.rank, h.host, h.pid, conn, rd, br)
		joined++
		if joined == size-1 {
			close(all)
		}
	}
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		var backoff time.Duration
		for {
			conn, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return // the rendezvous is over
				}
				// Out of descriptors or memory, or a connection gone
				// before it was accepted: the ranks still to come may
				// find things better (net/http backs off alike). The
				// deadline closes the listener whatever the error.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			backoff = 0
			go handshake(conn)
		}
	}()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var err error
	select {
	case <-all:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("timed out after %v", timeout)
	}
	select {
	case <-all:
		err = nil
	default:
	}
	ln.Close()
	<-acceptDone
	mu.Lock()
	decided = true
	mu.Unlock()

	if err != nil {
		var missing []int
		for r := 1; r < size; r++ {
			if links[r] == nil {
				missing = append(missing, r)
			}
		}
		msg := fmt.Sprintf("rank 0 (%s:%d): rendezvous at %s: %d of %d ranks joined (%v); missing ranks %s",
			c.host, c.pid, c.where(), joined+1, size, err, ranges(missing))
		msg += rejected.String()
		for _, l := range links {
			if l != nil {
				l.conn.SetDeadline(time.Now().Add(time.Second))
				writeFrame(l.conn, rejectMsg(msg))
				l.conn.Close()
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", msg, ctx.Err())
		}
		return errors.New(msg)
	}

	w := welcome{host: c.host, pid: c.pid, interval: c.interval, timeout: c.timeout}.encode()
	for _, l := range links[1:] {
		l.conn.SetDeadline(time.Now().Add(c.timeout))
		writeFrame(l.conn, w) // a failure shows as the rank's death once started
		l.conn.SetDeadline(time.Time{})
	}
	c.mu.Lock()
	c.links = links
	c.mu.Unlock()
	for _, l := range links[1:] {
		l.start()
	}
	return nil
}

// dial is the side of the rendezvous of ranks other than 0.
func (c *Comm) dial(ctx context.Context, deadline time.Time, timeout time.Duration) error {
	me := c.info.Rank
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var d net.Dialer
	backoff := 10 * time.Millisecond
	var lastErr error
	for {
		conn, err := d.DialContext(dctx, "tcp", c.info.Rendezvous)
		if err == nil {
			return c.handshake(dctx, conn, timeout)
		}
		if dctx.Err() == nil || lastErr == nil {
			lastErr = err
		}
		select {
		case <-dctx.Done():
			err := fmt.Errorf("rank %d (%s:%d): rendezvous: rank 0 at %s not reachable within %v: %v",
				me, c.host, c.pid, c.where(), timeout, lastErr)
			if ctx.Err() != nil {
				return fmt.Errorf("%v: %w", err, ctx.Err())
			}
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (c *Comm) handshake(ctx context.Context, conn net.Conn, timeout time.Duration) error {
	me := c.info.Rank
	fail := func(format string, args ...any) error {
		conn.Close()
		err := fmt.Errorf("rank %d (%s:%d): rendezvous at %s: %s", me, c.host, c.pid, c.where(), fmt.Sprintf(format, args...))
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	h := hello{job: c.info.JobID, size: c.info.Size, rank: me, host: c.host, pid: c.pid}
	if err := writeFrame(conn, h.encode()); err != nil {
		return fail("sending hello: %v", err)
	}
	rd := &deadlineConn{c: conn}
	br := bufio.NewReaderSize(rd, 64<<10)
	typ, body, err := readFrame(br, maxHello)
	if err != nil {
		if ctx.Err() != nil {
			return fail("no welcome from rank 0 within %v (other ranks missing?)", timeout)
		}
		return fail("rank 0 closed the connection before the run started: %v", describe(err, timeout))
	}
	switch typ {
	case msgReject:
		d := &dec{b: body}
		reason := d.str()
		return fail("refused: %s", reason)
	case msgWelcome:
	default:
		return fail("unexpected message type %d from rank 0", typ)
	}
	w, err := decodeWelcome(body)
	if err != nil {
		return fail("bad welcome: %v", err)
	}
	if !stop() {
		return fail("gave up: %v", ctx.Err())
	}
	conn.SetDeadline(time.Time{})
	c.interval, c.timeout = w.interval, w.timeout
	c.root = newLink(c, 0, w.host, w.pid, conn, rd, br)
	c.root.start()
	return nil
}

// ranges writes sorted ints compactly: "2-5, 7".
func ranges(v []int) string {
	var parts []string
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(v[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", v[i], v[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// newToken returns a random job token.
func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewLocal connects n ranks inside this process over loopback TCP, through
// the same rendezvous and protocol as separate processes. The caller closes
// every Comm. cfg.Env, cfg.Rendezvous and cfg.Listener are ignored.
func NewLocal(ctx context.Context, n int, cfg Config) ([]*Comm, error) {
	if n < 1 || n > MaxSize {
		return nil, fmt.Errorf("rank: NewLocal: %d ranks", n)
	}
	job := cfg.JobID
	if job == "" {
		job = newToken()
	}
	var ln net.Listener
	addr := ""
	if n > 1 {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("rank: NewLocal: %v", err)
		}
		addr = ln.Addr().String()
	}
	comms := make([]*Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := Info{Rank: r, Size: n, LocalRank: r, Launcher: LauncherLocal, JobID: job,
				Rendezvous: addr, RendezvousFrom: "NewLocal", ListenFD: -1}
			rc := cfg
			rc.Listener = nil
			if r == 0 {
				rc.Listener = ln
			}
			comms[r], errs[r] = join(ctx, info, rc)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range comms {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return comms, nil
}

// RunLocal runs f on n goroutine ranks connected by NewLocal and closes each
// rank's Comm when its f returns. It returns the ranks' errors, each prefixed
// with its rank.
func RunLocal(ctx context.Context, n int, f func(ctx context.Context, c *Comm) error) error {
	comms, err := NewLocal(ctx, n, Config{})
	if err != nil {
		return err
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx, c); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
			c.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
