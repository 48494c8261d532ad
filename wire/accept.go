package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// AcceptorConfig configures an Acceptor.
type AcceptorConfig struct {
	// Gate admits the connections (required).
	Gate *Gate
	// Logger receives the rate-limited warnings about accept failures,
	// refusals and evictions (default slog.Default()).
	Logger *slog.Logger
	// Prefix starts each warning's message ("medic: " for the receiver).
	Prefix string
	// Refuse (required) tells the peer of a connection the gate refused
	// why, and closes it; it returns the reason, for the log. It runs in the accept
	// loop, so it must not wait on the peer: one small write on a fresh
	// connection, or the work handed to Go.
	Refuse func(nc net.Conn, r *Refusal) error
	// Event, if set, counts ErrKindAccept and ErrKindEvicted
	// (ServerObserver.Error's kinds).
	Event func(kind string)
}

// Acceptor is the accept loop the store's servers and medic's receiver
// share, so that a fix to it lands once: it accepts, backs off and
// accepts again when out of descriptors or buffers (as net/http does),
// admits each connection through its Gate, refuses with a reason or
// evicts as the Gate says, logs each of these a few times per interval
// (LogLimiter), and runs each admitted connection in a goroutine that
// Close waits for.
type Acceptor struct {
	cfg AcceptorConfig

	// One limiter per kind of warning a peer can cause without the secret,
	// so that a flood is logged only a few times per interval.
	warnAccept, warnRefused, warnEvicted *LogLimiter

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close
	lns    map[net.Listener]struct{}
	// wg counts the connections' goroutines and Go's; Add is called under
	// mu with closed checked, so that Close's Wait cannot begin between.
	wg sync.WaitGroup
}

// NewAcceptor returns an acceptor for cfg.
func NewAcceptor(cfg AcceptorConfig) *Acceptor {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Acceptor{cfg: cfg,
		warnAccept: NewLogLimiter(), warnRefused: NewLogLimiter(), warnEvicted: NewLogLimiter(),
		done: make(chan struct{}), lns: map[net.Listener]struct{}{}}
}

// Serve accepts connections on ln until ctx is done or Close is called,
// and runs handle for each one admitted, in a goroutine of its own; the
// connection's place is given back (Pass.Done) when handle returns, and
// handle closes nc. It returns nil after a clean shutdown, net.ErrClosed
// if Close was called before, and an error only when the listener fails
// for good.
func (a *Acceptor) Serve(ctx context.Context, ln net.Listener, handle func(nc net.Conn, pass *Pass)) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	a.lns[ln] = struct{}{}
	a.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || a.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !TemporaryAcceptError(err) {
				return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
			}
			// Descriptors free up as connections end (unauthenticated ones
			// within the handshake timeout), so wait and try again.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			a.event(ErrKindAccept)
			a.warnAccept.Warn(a.cfg.Logger, a.cfg.Prefix+"accept failed, retrying", "addr", ln.Addr().String(), "err", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-a.done:
			}
			t.Stop()
			continue
		}
		delay = 0
		if !a.admit(nc, handle) {
			return nil
		}
	}
}

// admit passes nc through the gate and starts its handler, refuses it,
// or, with the acceptor closed, closes it and reports false.
func (a *Acceptor) admit(nc net.Conn, handle func(net.Conn, *Pass)) bool {
	a.mu.Lock()
	if a.closed {
		// Close ran between Accept and here.
		a.mu.Unlock()
		nc.Close()
		return false
	}
	ad := a.cfg.Gate.Admit(nc)
	if ad.Closed {
		a.mu.Unlock()
		nc.Close()
		return false
	}
	if ad.Evicted != nil {
		a.event(ErrKindEvicted)
		a.warnEvicted.Warn(a.cfg.Logger, a.cfg.Prefix+"unauthenticated connection evicted to admit another",
			"evicted", ad.Evicted.RemoteAddr().String(), "peer", nc.RemoteAddr().String())
	}
	if ad.Refused != nil {
		a.mu.Unlock()
		why := a.cfg.Refuse(nc, ad.Refused)
		a.warnRefused.Warn(a.cfg.Logger, a.cfg.Prefix+"connection refused", "peer", nc.RemoteAddr().String(), "err", why)
		return true
	}
	pass := ad.Pass
	a.wg.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		defer pass.Done()
		handle(nc, pass)
	}()
	return true
}

// Go runs f in a goroutine that Close waits for, unless the acceptor is
// closed (then it reports false and f does not run): work a Refuse hands
// off.
func (a *Acceptor) Go(f func()) bool {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return false
	}
	a.wg.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		f()
	}()
	return true
}

// Close stops the listeners, closes every admitted connection (the
// gate's) and waits for the goroutines of Serve's handlers and of Go.
func (a *Acceptor) Close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.done)
	}
	for ln := range a.lns {
		ln.Close()
	}
	a.cfg.Gate.Close()
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *Acceptor) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

func (a *Acceptor) event(kind string) {
	if a.cfg.Event != nil {
		a.cfg.Event(kind)
	}
}
