package wire

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pario/pario/wire/throttle"
)

// EndpointOptions configure how a client talks to one server.
type EndpointOptions struct {
	// Conns is how many connections to keep to the server; calls are spread
	// over them round robin (default 2). More than one lets large transfers
	// and small calls overlap in the kernel.
	Conns int
	// Retries is how many times a failed call is retried on a new
	// connection before the error is returned (default 5, as PVFS2's
	// client; negative: none). A connection the server refuses at its
	// caps is dialled again until the call's Timeout, not counted here:
	// no request was sent, and a busy server frees places.
	Retries int
	// RetryDelay is the first wait between attempts; it doubles each time
	// up to 2 s (default 100 ms).
	RetryDelay time.Duration
	// Timeout bounds a whole call, its retries included, when the caller's
	// context has no deadline (default 60 s); a deadline of the caller's
	// bounds it instead, earlier or later (the mount's requests carry
	// theirs). A server that hangs (stopped, or its disk stuck) fails the
	// call after Timeout, not after Timeout for every attempt.
	Timeout time.Duration
	// DialTimeout bounds connecting and authenticating (default 5 s).
	DialTimeout time.Duration
	// Protection is how frames are protected after the handshake; it must
	// be the server's (default ProtectAEAD).
	Protection Protection
	// Observer, if set, is told about every call (package metrics).
	Observer CallObserver
	// Throttle, if set, is the emulated link to the server (emulate.go).
	Throttle *throttle.Bucket
}

func (o *EndpointOptions) fill() {
	if o.Conns <= 0 {
		o.Conns = 2
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = 5
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 100 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
}

// Endpoint is a client's handle on one server: a small pool of
// authenticated connections, retries and timeouts. Every error it returns
// names the server.
type Endpoint struct {
	Name   string // e.g. "data server 2 (127.0.0.1:7001)"
	Addr   string
	secret []byte
	opts   EndpointOptions

	slots  []slot
	closed atomic.Bool
	next   atomic.Uint64
}

// slot holds one pooled connection. Its lock is a channel so that a caller
// waiting while another dials can give up when its context ends; dialling
// one slot never holds up calls on the others.
type slot struct {
	lock chan struct{}
	conn *Conn
}

// NewEndpoint returns an endpoint for the server at addr. Nothing is
// dialled until the first call.
func NewEndpoint(name, addr string, secret []byte, opts EndpointOptions) *Endpoint {
	opts.fill()
	e := &Endpoint{Name: name, Addr: addr, secret: secret, opts: opts, slots: make([]slot, opts.Conns)}
	for i := range e.slots {
		e.slots[i].lock = make(chan struct{}, 1)
	}
	return e
}

// Close closes the endpoint's connections; later calls fail with
// net.ErrClosed.
func (e *Endpoint) Close() error {
	e.closed.Store(true)
	for i := range e.slots {
		s := &e.slots[i]
		s.lock <- struct{}{}
		if s.conn != nil {
			s.conn.Close()
			s.conn = nil
		}
		<-s.lock
	}
	return nil
}

func (e *Endpoint) conn(ctx context.Context) (*Conn, error) {
	s := &e.slots[e.next.Add(1)%uint64(len(e.slots))]
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, &DialError{Server: e.Name, Err: ctx.Err()}
	}
	defer func() { <-s.lock }()
	if e.closed.Load() {
		return nil, &DialError{Server: e.Name, Err: net.ErrClosed}
	}
	if s.conn != nil && !s.conn.Broken() {
		return s.conn, nil
	}
	dctx, cancel := context.WithTimeout(ctx, e.opts.DialTimeout)
	defer cancel()
	c, err := DialProtected(dctx, e.Addr, e.Name, e.secret, e.opts.Protection)
	if err != nil {
		return nil, err
	}
	s.conn = c
	return c, nil
}

// Call performs one request with retries. An idempotent request (a
// positioned read or write, a size or sync) is retried after any transport
// failure; any other request only when it never reached the server
// (connect failures), since the first attempt might have taken effect.
// Errors from the server itself (a RemoteError) are never retried, nor is a
// wrong secret.
func (e *Endpoint) Call(ctx context.Context, op uint8, idempotent bool, args []byte, data [][]byte, into [][]byte) (resp []byte, n int, err error) {
	if e.opts.Observer != nil {
		start := time.Now()
		defer func() { e.observeCall(op, start, args, data, resp, n, err) }()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.Timeout)
		defer cancel()
	}
	if err := e.throttle(ctx, args, data, into); err != nil {
		return nil, 0, err
	}
	delay := e.opts.RetryDelay
	var last error
	for attempt, tries := 0, 0; attempt <= e.opts.Retries; tries++ {
		if tries > 0 {
			// Jittered, so that the ranks of a job refused together do
			// not come back together.
			t := time.NewTimer(delay/2 + rand.N(delay/2+1))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, 0, fmt.Errorf("%w (giving up: %w)", last, ctx.Err())
			case <-t.C:
			}
			delay = min(2*delay, 2*time.Second)
		}
		args, n, err := e.attempt(ctx, op, args, data, into)
		if err == nil {
			return args, n, nil
		}
		last = err
		if refusedBusy(err) && e.opts.Retries > 0 {
			// Refused at a connection cap (or a penalty) before the
			// request was sent: dial again, backing off, until the call's
			// deadline, as a busy server frees places (docs/store.md).
			continue
		}
		if !retryable(ctx, err, idempotent) {
			return nil, 0, err
		}
		attempt++
	}
	return nil, 0, fmt.Errorf("%w (after %d attempts)", last, e.opts.Retries+1)
}

func (e *Endpoint) attempt(ctx context.Context, op uint8, args []byte, data [][]byte, into [][]byte) ([]byte, int, error) {
	c, err := e.conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	return c.Call(ctx, op, args, data, into)
}

// refusedBusy reports whether err is a server's refusal of the connection
// in place of its hello, at a cap or a penalty (EAGAIN): nothing was sent.
func refusedBusy(err error) bool {
	var dial *DialError
	var remote *RemoteError
	return errors.As(err, &dial) && errors.As(err, &remote) && remote.Errno == syscall.EAGAIN
}

func retryable(ctx context.Context, err error, idempotent bool) bool {
	// A frame that did not authenticate was changed on the way (or the
	// peer is broken): that must reach the user, not be retried away. A
	// mismatched protection mode does not mend by itself.
	if ctx.Err() != nil || errors.Is(err, ErrAuth) || errors.Is(err, ErrFrameAuth) || errors.Is(err, ErrProtectionMismatch) {
		return false
	}
	var remote *RemoteError
	if errors.As(err, &remote) {
		// EBADMSG: the server rejected a request that arrived corrupted
		// without acting on it, so sending it again is always safe.
		return remote.Errno == syscall.EBADMSG
	}
	var dial *DialError
	if errors.As(err, &dial) {
		return !errors.Is(err, net.ErrClosed)
	}
	return idempotent
}
