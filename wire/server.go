package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
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

// AnswerSizer is implemented by handlers that can tell from a request alone
// how much bulk data its answer may carry (a read's length). The server
// takes that much from its memory budget before running the handler and
// gives it back once the answer is written, so that answers waiting for a
// client that does not read them count against the budget too. The answer
// is counted as the size class GetBuffer takes it from.
type AnswerSizer interface {
	AnswerSize(op uint8, args []byte) int64
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// Name identifies the server in logs and in the handshake.
	Name string
	// Secret is the shared secret clients must prove they know. Required.
	Secret []byte
	// Protection is how frames are protected after the handshake (default
	// ProtectAEAD); clients must use the same.
	Protection Protection
	// MaxInFlight bounds the requests one connection may have running at
	// once (default 32).
	MaxInFlight int
	// MemoryBudget bounds the memory all connections together hold for
	// their requests (default 256 MiB: four of the largest frames): each
	// request's sections and the answer a handler announces with
	// AnswerSizer, the buffers they are read and sealed through, and each
	// connection's read buffer. A sixteenth of it is kept for sealing
	// answers as they are written. One connection holds at most a quarter
	// of the rest at a time (or one frame, alone), so that a client that
	// stalls cannot take it all. Goroutine stacks and the runtime's own
	// memory are not counted.
	MemoryBudget int64
	// MaxConns caps the connections served at once (default: three
	// quarters of the descriptor limit, at most 65536); MaxConnsPerPeer
	// caps those from one host (default 1024, or half of MaxConns if less).
	// A connection over a cap is told why and closed.
	MaxConns        int
	MaxConnsPerPeer int
	// MaxUnauthenticated is how many connections may be in their
	// handshake (default a quarter of MaxConns) before a new one takes
	// the place of the oldest unauthenticated one, older than a fifth of
	// HandshakeTimeout, from the network that holds the most (see Gate),
	// so that a flood without the secret cannot keep honest clients out.
	MaxUnauthenticated int
	// HandshakeTimeout is how long a new connection has to authenticate
	// (default HandshakeTimeout, 10 s).
	HandshakeTimeout time.Duration
	// FrameTimeout and MinFrameRate bound the time one frame may take to
	// arrive once its header has, and to be written: FrameTimeout plus its
	// size at MinFrameRate bytes per second (defaults 30 s and 1 MiB/s).
	// A peer slower than that is dropped and its memory given back.
	FrameTimeout time.Duration
	MinFrameRate int64
	// Logger receives connection-level events. The caller's logger names
	// the server (cluster's do: server=data0); the default,
	// slog.Default(), is given server=Name.
	Logger *slog.Logger
	// Observer, if set, is told about connections, requests and errors
	// (package metrics); see ServerObserver.
	Observer ServerObserver
}

// Server accepts connections and dispatches their requests to a Handler.
type Server struct {
	h    Handler
	opts ServerOptions
	// The memory budget in two parts: sealing is for the buffers answers
	// are sealed in as they are written (a sixteenth), budget for the
	// rest. They are apart so that a handler holding its request's memory
	// never waits for memory held by handlers waiting for it.
	budget, sealing *Budget
	log             *slog.Logger

	// One limiter per kind of warning a peer can cause without the secret
	// (or with it, by misbehaving), so that a flood is logged only a few
	// times per interval; acc has those of accepting.
	warnHandshake, warnFrame *LogLimiter

	// quit ends when Close is called; it cancels every connection's
	// context, so that nothing (a reader waiting for memory, a handler
	// waiting on its context) outlives Close.
	quit context.Context
	stop context.CancelFunc

	gate *Gate
	acc  *Acceptor
}

// NewServer returns a server for h.
func NewServer(h Handler, opts ServerOptions) *Server {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 32
	}
	if opts.MemoryBudget <= 0 {
		opts.MemoryBudget = DefaultMemoryBudget
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = defaultMaxConns()
	}
	if opts.MaxConnsPerPeer <= 0 {
		// One host never takes every place, whatever the descriptor limit.
		opts.MaxConnsPerPeer = max(1, min(DefaultMaxConnsPerPeer, opts.MaxConns/2))
	}
	if opts.MaxUnauthenticated <= 0 {
		opts.MaxUnauthenticated = DefaultMaxUnauthenticated(opts.MaxConns)
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = HandshakeTimeout
	}
	if opts.FrameTimeout <= 0 {
		opts.FrameTimeout = DefaultFrameTimeout
	}
	if opts.MinFrameRate <= 0 {
		opts.MinFrameRate = DefaultMinFrameRate
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default().With("server", opts.Name)
	}
	quit, stop := context.WithCancel(context.Background())
	sealing := sealingShare(opts.MemoryBudget)
	s := &Server{
		h: h, opts: opts, budget: NewBudget(opts.MemoryBudget - sealing), sealing: NewBudget(sealing),
		quit: quit, stop: stop,
		log:           opts.Logger,
		warnHandshake: NewLogLimiter(), warnFrame: NewLogLimiter(),
		gate: NewGate(opts.MaxConns, opts.MaxConnsPerPeer, opts.MaxUnauthenticated, EvictableAfter(opts.HandshakeTimeout)),
	}
	s.acc = NewAcceptor(AcceptorConfig{Gate: s.gate, Logger: s.log, Event: s.observeError,
		Refuse: func(nc net.Conn, r *Refusal) error {
			why := s.refusal(r)
			s.observeRefused(r)
			refuse(nc, why)
			return why
		}})
	if opts.Observer != nil {
		opts.Observer.Budget(s.memoryUsage)
	}
	return s
}

// Serve accepts connections on ln until ctx is done or Close is called.
// It returns nil after a clean shutdown, and an error only when the
// listener fails for good: running out of descriptors or buffers makes it
// back off and accept again.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if len(s.opts.Secret) == 0 {
		return errors.New("wire: server has no shared secret configured")
	}
	err := s.acc.Serve(ctx, ln, func(nc net.Conn, pass *Pass) {
		s.observeConn(true)
		s.serveConn(ctx, nc, pass)
		s.observeConn(false)
	})
	if errors.Is(err, net.ErrClosed) {
		return nil // Close ran before
	}
	if err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	return nil
}

// refusal says why a connection was refused, for its peer.
func (s *Server) refusal(r *Refusal) error {
	return fmt.Errorf("server %s: %w", r.Reason(s.opts.Name, "max-conns-per-peer", "max-conns"), syscall.EAGAIN)
}

// refuse tells the peer why it is not served, in place of the hello frame
// (a new client prints the reason) or, for a connection evicted in its
// handshake, of the answer to its proof, and closes the connection. The
// frame fits a socket buffer holding at most the hello, so the short
// deadline only guards against the impossible.
func refuse(nc net.Conn, why error) {
	_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_ = writeFrame(nc, opHello, FlagError, 0, encodeError(why))
	nc.Close()
}

// Close stops the listeners, drops every connection and waits for the
// connection goroutines to finish.
func (s *Server) Close() error {
	s.stop()
	s.acc.Close()
	return nil
}

func (s *Server) serveConn(ctx context.Context, nc net.Conn, pass *Pass) {
	defer nc.Close()
	peer := nc.RemoteAddr().String()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	sess, err := serverHandshake(nc, s.opts.Name, s.opts.Secret, s.opts.Protection, s.opts.HandshakeTimeout, pass.Authenticated)
	if err != nil {
		if pass.Evicted() { // counted and logged as the eviction
			// The client waits for the hello or for the answer to its
			// proof, and takes a refusal in place of either: it dials
			// again, as when the server is full.
			refuse(nc, fmt.Errorf("server %s: %w", EvictionReason(s.opts.Name), syscall.EAGAIN))
			return
		}
		s.observeHandshake(err)
		s.warnHandshake.Warn(s.log, "handshake failed", "peer", peer, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	stopQuit := context.AfterFunc(s.quit, cancel)
	defer stopQuit()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	// What the connection holds whatever it does, counted for as long as
	// it lives: its read buffer, and the small argument section it reads
	// before it knows a request's size (see connMemory).
	s.budget.Charge(connMemory)
	defer s.budget.Refund(connMemory)

	var (
		wmu     sync.Mutex // one response frame at a time on the socket
		running sync.WaitGroup
		slots   = make(chan struct{}, s.opts.MaxInFlight)
		// share bounds what this connection holds of the server's budget,
		// so that one that stops reading its answers, or stalls in the
		// middle of a request, leaves memory for the others.
		share = NewBudget(max(s.budget.total/4, 1))
	)
	sizer, _ := s.h.(AnswerSizer)
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
		h := Header{Op: op, Flags: flags, ReqID: reqID, ArgLen: uint32(len(args)), DataLen: uint32(totalLen(data))}
		var hb [HeaderSize]byte
		h.Encode(hb[:])
		sealMem := sess.send.writeMemory(len(args), data)
		if s.sealing.Acquire(ctx, sealMem) != nil {
			return // the connection is ending: no answer can reach the client
		}
		defer s.sealing.Release(sealMem)
		wmu.Lock()
		// A client that stops reading its answers is dropped once a frame
		// has waited longer than its size allows; its memory comes back.
		_ = nc.SetWriteDeadline(frameDeadline(s.opts.FrameTimeout, s.opts.MinFrameRate, len(args)+totalLen(data)))
		err := sess.send.writeFrame(nc, hb[:], args, data)
		wmu.Unlock()
		if err != nil {
			s.observeTimeout(err)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.warnFrame.Warn(s.log, "client does not read its answers, closing connection", "peer", peer, "err", err)
			}
			// The reader may still hold requests it has buffered: cancel,
			// so that it serves none of them for a client now gone.
			cancel()
			nc.Close()
		}
	}

	// badFrame ends the connection on a frame that did not authenticate,
	// telling the client why so that its error says so.
	badFrame := func(err error) {
		s.observeError(ErrKindFrameAuth)
		s.warnFrame.Warn(s.log, "frame authentication failed, closing connection", "peer", peer, "err", err)
		var hb [HeaderSize]byte
		args := encodeError(fmt.Errorf("server %s: request from %s: %w: %w", s.opts.Name, peer, err, syscall.EBADMSG))
		h := Header{Op: opGoodbye, Flags: FlagResponse | FlagError, ArgLen: uint32(len(args))}
		h.Encode(hb[:])
		sealMem := sess.send.writeMemory(len(args), nil)
		if s.sealing.Acquire(ctx, sealMem) != nil {
			return
		}
		defer s.sealing.Release(sealMem)
		wmu.Lock()
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = sess.send.writeFrame(nc, hb[:], args, nil)
		wmu.Unlock()
	}
	br := bufio.NewReaderSize(nc, readBufSize)
	recv := sess.recv
	for ctx.Err() == nil {
		// No deadline between frames: pooled client connections stay
		// open, idle, for as long as their client runs.
		h, err := sess.recv.readHeader(br)
		if errors.Is(err, ErrFrameAuth) {
			badFrame(err)
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
				s.log.Debug("connection ended", "peer", peer, "err", err)
				return
			}
			// The lengths cannot be trusted, so the stream is lost.
			s.observeError(ErrKindFrame)
			s.warnFrame.Warn(s.log, "bad frame header, closing connection", "peer", peer, "err", err)
			return
		}
		if h.Flags&FlagResponse != 0 || h.Op >= opHello {
			// A client sends requests of its service's operations only;
			// anything else means it is confused or hostile.
			s.observeError(ErrKindFrame)
			s.warnFrame.Warn(s.log, "protocol violation, closing connection", "peer", peer, "op", h.Op, "flags", h.Flags)
			return
		}
		// The memory the request holds until it is answered: its sections
		// as they are read (GetBuffer's size class for the data) and the
		// buffers reading them takes.
		need := int64(h.ArgLen) + recv.readMemory(int(h.ArgLen), int(h.DataLen))
		if h.DataLen > 0 {
			need += pooledSize(int(h.DataLen))
		}
		var args []byte // nil: serveRequest reads them
		if sizer != nil && h.ArgLen <= maxSizedArgs {
			// The answer's size is known from the arguments, which are read
			// first for that; they are small for every operation that
			// answers with bulk data.
			args = make([]byte, h.ArgLen)
			if err := s.readBody(nc, br, sess.recv, h, args, nil); err != nil {
				if errors.Is(err, ErrFrameAuth) {
					badFrame(err)
				}
				s.log.Debug("connection ended mid-frame", "peer", peer, "err", err)
				return
			}
			if n := min(max(sizer.AnswerSize(h.Op, args), 0), MaxDataLen); n > 0 {
				need += pooledSize(int(n))
			}
		}
		if !s.serveRequest(ctx, nc, br, sess.recv, h, args, need, share, slots, &running, peer, respond, badFrame) {
			return
		}
	}
}

// readBody reads the sections of a frame whose header has arrived: args
// (unless already read, then nil) and data, within the frame's deadline.
func (s *Server) readBody(nc net.Conn, br *bufio.Reader, recv *half, h Header, args, data []byte) error {
	_ = nc.SetReadDeadline(frameDeadline(s.opts.FrameTimeout, s.opts.MinFrameRate, len(args)+len(data)))
	err := recv.readArgs(br, args)
	if err == nil {
		_, err = recv.readData(br, len(data), [][]byte{data})
	}
	s.observeTimeout(err)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.warnFrame.Warn(s.log, "request frame did not arrive in time, closing connection", "peer", nc.RemoteAddr().String(), "op", h.Op, "bytes", h.ArgLen+h.DataLen)
	}
	_ = nc.SetReadDeadline(time.Time{})
	return err
}

// serveRequest takes need bytes of memory, reads the rest of the request
// (args, unless given, and data) and starts its handler. It reports false
// when the connection must end.
func (s *Server) serveRequest(ctx context.Context, nc net.Conn, br *bufio.Reader, recv *half, h Header, args []byte, need int64, share *Budget, slots chan struct{}, running *sync.WaitGroup, peer string, respond func(uint64, uint8, Response, error), badFrame func(error)) bool {
	// The connection's share first: while it waits, it holds nothing of
	// the server's budget.
	if err := share.Acquire(ctx, need); err != nil {
		return false
	}
	if err := s.budget.Acquire(ctx, need); err != nil {
		share.Release(need)
		return false
	}
	var data []byte
	if h.DataLen > 0 {
		data = GetBuffer(int(h.DataLen))
	}
	release := func() {
		if data != nil {
			PutBuffer(data)
		}
		s.budget.Release(need)
		share.Release(need)
	}
	var readArgs []byte
	if args == nil {
		args = make([]byte, h.ArgLen)
		readArgs = args
	}
	if err := s.readBody(nc, br, recv, h, readArgs, data); err != nil {
		release()
		if errors.Is(err, ErrFrameAuth) {
			badFrame(err)
		}
		s.log.Debug("connection ended mid-frame", "peer", peer, "err", err)
		return false
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		release()
		return false
	}
	running.Add(1)
	go func() {
		defer running.Done()
		defer func() { <-slots }()
		defer release()
		req := Request{Op: h.Op, Args: args, Data: data, Peer: peer}
		start := s.observeStart(h.Op)
		resp, herr := s.call(ctx, &req)
		respond(h.ReqID, h.Op, resp, herr)
		s.observeDone(h, start, resp, herr)
	}()
	return true
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
