package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Conn is a client connection to one server. Many goroutines may Call on
// it at once: requests are pipelined and answers matched by request id.
type Conn struct {
	server string // e.g. "data server 2 (127.0.0.1:7001)", for errors
	nc     net.Conn

	wmu  sync.Mutex // serialises request frames on the socket, and their records' numbers
	send *half      // guarded by wmu
	recv *half      // used by readLoop alone

	mu      sync.Mutex
	pending map[uint64]*call
	nextID  uint64
	err     error // set once the connection is broken; every later Call fails with it
	done    chan struct{}
}

type call struct {
	into [][]byte // where the response's data goes
	args []byte
	n    int
	err  error
	done chan struct{}
}

// Dial connects to addr and authenticates with secret, with the default
// wire protection (ProtectAEAD). server names the peer in every error this
// connection returns.
func Dial(ctx context.Context, addr, server string, secret []byte) (*Conn, error) {
	return DialProtected(ctx, addr, server, secret, ProtectAEAD)
}

// DialProtected is Dial with the given wire protection, which must be the
// server's.
func DialProtected(ctx context.Context, addr, server string, secret []byte, mode Protection) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &DialError{Server: server, Err: err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	_, sess, err := clientHandshake(nc, server, secret, mode)
	if !stop() {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		nc.Close()
		return nil, &DialError{Server: server, Err: fmt.Errorf("handshake: %w", err)}
	}
	c := &Conn{server: server, nc: nc, send: sess.send, recv: sess.recv, pending: map[uint64]*call{}, done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// DialError reports a failure to connect or authenticate: the request was
// never sent, so any operation may be retried after one.
type DialError struct {
	Server string
	Err    error
}

func (e *DialError) Error() string { return fmt.Sprintf("%s: connect: %v", e.Server, e.Err) }
func (e *DialError) Unwrap() error { return e.Err }

// ConnError reports a connection that broke while a request was in flight:
// the server may or may not have carried it out.
type ConnError struct {
	Server string
	Err    error
}

func (e *ConnError) Error() string { return fmt.Sprintf("%s: connection lost: %v", e.Server, e.Err) }
func (e *ConnError) Unwrap() error { return e.Err }

// Close closes the connection; calls in flight fail.
func (c *Conn) Close() error {
	c.fail(net.ErrClosed)
	return nil
}

// Broken reports whether the connection can no longer be used.
func (c *Conn) Broken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = &ConnError{Server: c.server, Err: err}
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.nc.Close()
	for _, cl := range pending {
		cl.err = c.err
		close(cl.done)
	}
}

// Call sends a request (op, args and the bulk data, written from the given
// slices as they are) and waits for its answer. The answer's bulk data is
// read straight into the slices of into, in order; n is how many bytes
// arrived. A response with more data than into can hold is an error.
// The returned args are the response's argument section.
func (c *Conn) Call(ctx context.Context, op uint8, args []byte, data [][]byte, into [][]byte) (respArgs []byte, n int, err error) {
	cl := &call{into: into, done: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, 0, c.err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = cl
	c.mu.Unlock()

	dataLen := totalLen(data)
	if len(args) > MaxArgLen || dataLen > MaxDataLen {
		c.forget(id)
		return nil, 0, fmt.Errorf("%s: %w: request of %d+%d bytes", c.server, ErrFrameTooLarge, len(args), dataLen)
	}
	// No payload CRC32C: the records' tags cover every byte (see protect.go).
	h := Header{Op: op, ReqID: id, ArgLen: uint32(len(args)), DataLen: uint32(dataLen)}
	var hb [HeaderSize]byte
	h.Encode(hb[:])
	c.wmu.Lock()
	if err := ctx.Err(); err != nil {
		// Ended before a byte of this request was written (perhaps while
		// it waited for another's frame): writing against a deadline in
		// the past would fail as a half-sent frame does and cut the
		// connection, failing every other request in flight on it.
		c.wmu.Unlock()
		c.forget(id)
		return nil, 0, fmt.Errorf("%s: op %d: %w", c.server, op, err)
	}
	dl, _ := ctx.Deadline() // the zero time when there is none
	_ = c.nc.SetWriteDeadline(dl)
	// Cancellation must interrupt a write blocked on a server that does
	// not read, as a deadline does. The deadline is restored by the next
	// writer, after interrupt has finished (so it cannot undo that).
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetWriteDeadline(time.Now())
		close(interrupted)
	})
	werr := c.send.writeFrame(c.nc, hb[:], args, data)
	if !stop() {
		<-interrupted
	}
	c.wmu.Unlock()
	if werr != nil {
		// A partial frame may be on the wire: the stream is lost.
		c.fail(werr)
		<-cl.done
		if ctx.Err() != nil {
			return nil, 0, fmt.Errorf("%s: op %d: %w", c.server, op, ctx.Err())
		}
		return nil, 0, cl.err
	}

	select {
	case <-cl.done:
		return cl.args, cl.n, cl.err
	case <-ctx.Done():
		if c.forget(id) {
			return nil, 0, fmt.Errorf("%s: op %d: %w", c.server, op, ctx.Err())
		}
		// The reader is filling our buffers right now; they must not be
		// handed back to the caller until it stops, so cut the connection.
		c.fail(ctx.Err())
		<-cl.done
		return nil, 0, fmt.Errorf("%s: op %d: %w", c.server, op, ctx.Err())
	}
}

func totalLen(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

// forget drops a pending call; it reports false if the reader already
// claimed it.
func (c *Conn) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[id]; ok {
		delete(c.pending, id)
		return true
	}
	return false
}

func (c *Conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, readBufSize)
	for {
		h, err := c.recv.readHeader(br)
		if err != nil {
			c.fail(err)
			return
		}
		if h.Op == opGoodbye {
			// The server closes the connection and says why: a frame of
			// ours that did not authenticate, most likely.
			args := make([]byte, h.ArgLen)
			if err := c.recv.readArgs(br, args); err != nil {
				c.fail(err)
				return
			}
			err := decodeError(c.server, args)
			if errors.Is(err, syscall.EBADMSG) {
				err = fmt.Errorf("%w: the server could not authenticate a frame from this client: %w", ErrFrameAuth, err)
			}
			c.fail(fmt.Errorf("the server closed the connection: %w", err))
			return
		}
		if h.Flags&FlagResponse == 0 {
			c.fail(fmt.Errorf("server sent a request frame (op %d)", h.Op))
			return
		}
		c.mu.Lock()
		cl := c.pending[h.ReqID]
		delete(c.pending, h.ReqID)
		c.mu.Unlock()
		if err := c.readBody(br, h, cl); err != nil {
			// Broken before the caller hears of it: one that retries at
			// once must not get this connection again.
			c.fail(err)
			if cl != nil {
				cl.err = &ConnError{Server: c.server, Err: err}
				close(cl.done)
			}
			return
		}
		if cl != nil {
			close(cl.done)
		}
	}
}

// readBody reads one response's sections into cl (or discards them when
// the caller has gone away); the data goes straight into the caller's
// slices, opened there.
func (c *Conn) readBody(br *bufio.Reader, h Header, cl *call) error {
	args := make([]byte, h.ArgLen)
	if err := c.recv.readArgs(br, args); err != nil {
		return err
	}
	var into [][]byte
	if cl != nil && h.Flags&FlagError == 0 {
		into = cl.into
	}
	n, err := c.recv.readData(br, int(h.DataLen), into)
	if err != nil {
		return err
	}
	if cl == nil {
		return nil
	}
	switch overflow := int(h.DataLen) - n; {
	case h.Flags&FlagError != 0:
		cl.err = decodeError(c.server, args)
	case overflow > 0:
		cl.err = fmt.Errorf("%s: response to request %d carries %d bytes more data than asked for", c.server, h.ReqID, overflow)
	default:
		cl.args, cl.n = args, n
	}
	return nil
}

// DialRaw connects to addr and authenticates (with the default wire
// protection), then hands over the connection for protocol tests and
// debugging tools that need to send frames of their own making (see
// AppendFrame, ReadFrame): it seals the plain frames written to it and
// opens the frames read from it, as they stream.
func DialRaw(ctx context.Context, addr string, secret []byte) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return AuthenticateRaw(ctx, nc, secret)
}

// AuthenticateRaw runs the client handshake on a connection the caller
// dialled itself (from a chosen source address, say) and hands it back, as
// DialRaw does; it closes nc on failure.
func AuthenticateRaw(ctx context.Context, nc net.Conn, secret []byte) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	_, sess, err := clientHandshake(nc, nc.RemoteAddr().String(), secret, ProtectAEAD)
	if !stop() {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return newSealedConn(nc, sess), nil
}
