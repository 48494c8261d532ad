package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
)

// Request is one decoded request frame handed to a Handler. Args and Data
// are only valid until the handler returns.
type Request struct {
	Op   uint8
	Args []byte
	Data []byte
	Peer string // remote address, for logs
}

// Response is what a handler answers. Release, if set, runs once the
// response has been written (or dropped), to return pooled buffers.
type Response struct {
	Args    []byte
	Data    [][]byte
	Release func()
}

// Handler serves the requests of one service. Handlers run concurrently.
// An error becomes an error response carrying its errno (see ErrnoOf).
type Handler interface {
	ServeWire(ctx context.Context, req *Request) (Response, error)
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// Name identifies the server in logs and in the handshake.
	Name string
	// Secret is the shared secret clients must prove they know. Required.
	Secret []byte
	// MaxInFlight bounds the requests one connection may have running at
	// once (default 32).
	MaxInFlight int
	// MemoryBudget bounds the bytes of request data held in memory by all
	// connections together (default 64 MiB).
	MemoryBudget int64
	// Logger receives connection-level events (default slog.Default()).
	Logger *slog.Logger
}

// Server accepts connections and dispatches their requests to a Handler.
type Server struct {
	h      Handler
	opts   ServerOptions
	budget *Budget
	log    *slog.Logger

	// quit ends when Close is called; it cancels every connection's
	// context, so that nothing (a reader waiting for memory, a handler
	// waiting on its context) outlives Close.
	quit context.Context
	stop context.CancelFunc

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	lns   map[net.Listener]struct{}
	wg    sync.WaitGroup
}

// NewServer returns a server for h.
func NewServer(h Handler, opts ServerOptions) *Server {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 32
	}
	if opts.MemoryBudget <= 0 {
		opts.MemoryBudget = 64 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	quit, stop := context.WithCancel(context.Background())
	return &Server{
		h: h, opts: opts, budget: NewBudget(opts.MemoryBudget),
		quit: quit, stop: stop,
		log:   opts.Logger.With("server", opts.Name),
		conns: map[net.Conn]struct{}{}, lns: map[net.Listener]struct{}{},
	}
}

// Serve accepts connections on ln until ctx is done or Close is called.
// It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if len(s.opts.Secret) == 0 {
		return errors.New("wire: server has no shared secret configured")
	}
	s.mu.Lock()
	if s.quit.Err() != nil {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("wire: accept on %s: %w", ln.Addr(), err)
		}
		s.mu.Lock()
		if s.quit.Err() != nil {
			// Close ran between Accept and here.
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(ctx, nc)
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
		}()
	}
}

// Close stops the listeners, drops every connection and waits for the
// connection goroutines to finish.
func (s *Server) Close() error {
	s.stop()
	s.mu.Lock()
	for ln := range s.lns {
		ln.Close()
	}
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) serveConn(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	peer := nc.RemoteAddr().String()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if err := serverHandshake(nc, s.opts.Name, s.opts.Secret); err != nil {
		s.log.Warn("handshake failed", "peer", peer, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	stopQuit := context.AfterFunc(s.quit, cancel)
	defer stopQuit()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()

	var (
		wmu     sync.Mutex // one response frame at a time on the socket
		running sync.WaitGroup
		slots   = make(chan struct{}, s.opts.MaxInFlight)
	)
	// Once the reader stops, the connection is gone: no answer can reach
	// the client any more, so the handlers still running are cancelled
	// before they are waited for.
	defer func() {
		cancel()
		running.Wait()
	}()
	respond := func(reqID uint64, op uint8, resp Response, herr error) {
		if resp.Release != nil {
			defer resp.Release()
		}
		args, data := resp.Args, resp.Data
		if herr == nil && (len(args) > MaxArgLen || totalLen(data) > MaxDataLen) {
			// A frame this large would break the client's connection.
			herr = fmt.Errorf("answer to op %d of %d+%d bytes: %w: %w", op, len(args), totalLen(data), ErrFrameTooLarge, syscall.EIO)
		}
		flags := uint8(FlagResponse)
		if herr != nil {
			flags |= FlagError
			args, data = encodeError(herr), nil
		}
		h := Header{Op: op, Flags: flags, ReqID: reqID, ArgLen: uint32(len(args)), DataLen: uint32(totalLen(data)), PayloadCRC: Checksum(args, data)}
		var hb [HeaderSize]byte
		h.Encode(hb[:])
		bufs := make(net.Buffers, 0, 2+len(data))
		bufs = append(bufs, hb[:], args)
		bufs = append(bufs, data...)
		wmu.Lock()
		_, err := bufs.WriteTo(nc)
		wmu.Unlock()
		if err != nil {
			nc.Close() // the reader notices and ends the connection
		}
	}

	br := bufio.NewReaderSize(nc, 64<<10)
	var hb [HeaderSize]byte
	for {
		if _, err := io.ReadFull(br, hb[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("connection ended", "peer", peer, "err", err)
			}
			return
		}
		h, err := DecodeHeader(hb[:])
		if err != nil {
			// The lengths cannot be trusted, so the stream is lost.
			s.log.Warn("bad frame header, closing connection", "peer", peer, "err", err)
			return
		}
		if h.Flags&FlagResponse != 0 || h.Op >= opHello {
			// A client sends requests of its service's operations only;
			// anything else means it is confused or hostile.
			s.log.Warn("protocol violation, closing connection", "peer", peer, "op", h.Op, "flags", h.Flags)
			return
		}
		need := int64(h.DataLen)
		if err := s.budget.Acquire(ctx, need); err != nil {
			return
		}
		args := make([]byte, h.ArgLen)
		var data []byte
		if h.DataLen > 0 {
			data = GetBuffer(int(h.DataLen))
		}
		release := func() {
			if data != nil {
				PutBuffer(data)
			}
			s.budget.Release(need)
		}
		_, err = io.ReadFull(br, args)
		if err == nil {
			_, err = io.ReadFull(br, data)
		}
		if err != nil {
			release()
			s.log.Debug("connection ended mid-frame", "peer", peer, "err", err)
			return
		}
		if c := Checksum(args, [][]byte{data}); c != h.PayloadCRC {
			release()
			s.log.Warn("rejected corrupted request", "peer", peer, "op", h.Op, "req", h.ReqID)
			respond(h.ReqID, h.Op, Response{}, fmt.Errorf("request %d rejected: %w: %w", h.ReqID, ErrPayloadCRC, syscall.EBADMSG))
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			release()
			return
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { <-slots }()
			defer release()
			req := Request{Op: h.Op, Args: args, Data: data, Peer: peer}
			resp, herr := s.call(ctx, &req)
			respond(h.ReqID, h.Op, resp, herr)
		}()
	}
}

// call runs the handler, turning a panic into an EIO answer: a bug
// triggered by one request must not take the whole server down.
func (s *Server) call(ctx context.Context, req *Request) (resp Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panic", "op", req.Op, "peer", req.Peer, "panic", r)
			resp, err = Response{}, fmt.Errorf("internal error serving op %d: %v: %w", req.Op, r, syscall.EIO)
		}
	}()
	return s.h.ServeWire(ctx, req)
}
