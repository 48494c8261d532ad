package wire

import (
	"errors"
	"os"
	"time"
)

// ServerObserver is told what a Server does, for metrics (package metrics
// turns it into Prometheus series). Its methods run on the serving path,
// concurrently: they must be cheap and must not block. A nil
// ServerOptions.Observer costs one comparison per event.
type ServerObserver interface {
	// Budget is called once, by NewServer, with a function that reports
	// the server's memory budget and the bytes of it in use right now.
	Budget(usage func() (total, used int64))
	// ConnAccepted and ConnClosed bracket every connection served.
	ConnAccepted()
	ConnClosed()
	// ConnRefused counts a connection turned away: reason is
	// RefusedMaxConns, RefusedMaxConnsPerPeer or RefusedPenalized.
	ConnRefused(reason string)
	// RequestStarted and RequestDone bracket one request's handler: in is
	// its argument and data bytes, out its answer's (0 for an error
	// answer), err the handler's error.
	RequestStarted(op uint8)
	RequestDone(op uint8, in, out int, d time.Duration, err error)
	// Error counts an event that ends or rejects a connection or a frame
	// before any handler runs: one of the Err* kinds below.
	Error(kind string)
}

// Reasons of ServerObserver.ConnRefused.
const (
	RefusedMaxConns        = "max-conns"
	RefusedMaxConnsPerPeer = "max-conns-per-peer"
	RefusedPenalized       = "penalized" // a network whose connections kept failing to authenticate (Gate)
)

// Kinds of ServerObserver.Error.
const (
	ErrKindAccept    = "accept"     // a temporary accept failure (EMFILE, ...)
	ErrKindAuth      = "auth"       // a client without the secret
	ErrKindHandshake = "handshake"  // any other failed handshake
	ErrKindFrame     = "frame"      // bad header or protocol violation
	ErrKindFrameAuth = "frame_auth" // a frame that failed authentication (tampered, replayed, dropped)
	ErrKindCRC       = "crc"        // a request whose payload checksum failed (not counted since protocol version 3: tags check the payload)
	ErrKindTimeout   = "timeout"    // a frame that did not arrive or leave in time
	ErrKindEvicted   = "evicted"    // an unauthenticated connection closed to admit another (MaxUnauthenticated)
)

// The helpers below keep the observer's calls in server.go to one line
// each.

func (s *Server) observeError(kind string) {
	if s.opts.Observer != nil {
		s.opts.Observer.Error(kind)
	}
}

// observeTimeout counts err if it is a frame deadline running out.
func (s *Server) observeTimeout(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.observeError(ErrKindTimeout)
	}
}

func (s *Server) observeHandshake(err error) {
	switch {
	case errors.Is(err, ErrAuth):
		s.observeError(ErrKindAuth)
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.observeError(ErrKindTimeout)
	default:
		s.observeError(ErrKindHandshake)
	}
}

// observeRefused counts a connection the gate refused.
func (s *Server) observeRefused(r *Refusal) {
	if s.opts.Observer == nil {
		return
	}
	reason := RefusedMaxConns
	switch {
	case r.Penalized != "":
		reason = RefusedPenalized
	case r.PerHost():
		reason = RefusedMaxConnsPerPeer
	}
	s.opts.Observer.ConnRefused(reason)
}

func (s *Server) observeConn(open bool) {
	switch {
	case s.opts.Observer == nil:
	case open:
		s.opts.Observer.ConnAccepted()
	default:
		s.opts.Observer.ConnClosed()
	}
}

// observeStart returns the request's start time (zero without an
// observer: no clock read on the unobserved path).
func (s *Server) observeStart(op uint8) time.Time {
	if s.opts.Observer == nil {
		return time.Time{}
	}
	s.opts.Observer.RequestStarted(op)
	return time.Now()
}

func (s *Server) observeDone(h Header, start time.Time, resp Response, err error) {
	if s.opts.Observer == nil {
		return
	}
	out := 0
	if err == nil {
		out = len(resp.Args) + totalLen(resp.Data)
	}
	s.opts.Observer.RequestDone(h.Op, int(h.ArgLen)+int(h.DataLen), out, time.Since(start), err)
}

// usage reports the budget's size and the bytes taken from it.
func (b *Budget) usage() (total, used int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total, b.used + b.charged
}

// CallObserver is told about every call an Endpoint makes, retries
// included in one call, for the client's metrics. It runs on the caller's
// path: cheap, non-blocking.
type CallObserver interface {
	CallDone(op uint8, sent, received int, d time.Duration, err error)
}

// observeCall reports one call to the endpoint's observer, if any.
func (e *Endpoint) observeCall(op uint8, start time.Time, args []byte, data [][]byte, respArgs []byte, n int, err error) {
	if e.opts.Observer == nil {
		return
	}
	e.opts.Observer.CallDone(op, len(args)+totalLen(data), len(respArgs)+n, time.Since(start), err)
}
