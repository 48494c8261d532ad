package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// flakyListener fails its first Accepts with EMFILE, as a process out of
// descriptors does.
type flakyListener struct {
	net.Listener
	failures atomic.Int64
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// Running out of descriptors does not stop a server for good: it backs off
// and accepts again once they free up.
func TestServeBacksOffOnEMFILE(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: ln}
	fl.failures.Store(4)
	s := startServerOn(t, fl, newTestHandler(), ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.Addr, "test server", testSecret)
	if err != nil {
		t.Fatalf("server stopped accepting after EMFILE: %v", err)
	}
	defer c.Close()
	if _, _, err := c.Call(ctx, opEcho, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		t.Fatalf("Serve returned: %v", err)
	default:
	}
}

// A listener that fails for good still ends Serve with the error, so that
// whoever runs the server can stop with it.
func TestServeReturnsPermanentAcceptError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := NewServer(newTestHandler(), ServerOptions{Secret: testSecret, Logger: quietLogger()})
	defer s.Close()
	err = s.Serve(context.Background(), brokenListener{ln})
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Serve: %v, want EINVAL", err)
	}
}

type brokenListener struct{ net.Listener }

func (brokenListener) Accept() (net.Conn, error) {
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EINVAL}
}

// Connections beyond the per-peer cap are refused with a reason while
// another host still gets in; beyond the server's cap, everyone is.
func TestConnectionCaps(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{MaxConnsPerPeer: 3, MaxConns: 5})
	var held []*Conn
	for range 3 {
		held = append(held, dialTest(t, s.Addr))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, s.Addr, "test server", testSecret)
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "per host") || !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("4th connection from one host: %v, want a refusal naming the per-host limit", err)
	}
	// Another host is not held back by the first one's connections.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	other, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		t.Fatalf("dial from 127.0.0.2: %v", err)
	}
	defer other.Close()
	if _, _, err := clientHandshake(other, "test server", testSecret, ProtectAEAD); err != nil {
		t.Fatalf("another host refused: %v", err)
	}
	other2, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other2.Close()
	if _, _, err := clientHandshake(other2, "test server", testSecret, ProtectAEAD); err != nil {
		t.Fatalf("another host refused: %v", err)
	}
	// 5 connections: the server's cap.
	other3, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other3.Close()
	if _, _, err := clientHandshake(other3, "test server", testSecret, ProtectAEAD); err == nil || !strings.Contains(err.Error(), "its limit") {
		t.Fatalf("6th connection: %v, want the server's limit", err)
	}
	// A connection that ends frees its place.
	held[0].Close()
	waitFor(t, "a free place", func() bool {
		c, err := Dial(ctx, s.Addr, "test server", testSecret)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// A connection that never completes the handshake is closed when the
// handshake deadline ends, and its place under the caps is free again.
func TestHalfOpenClosedAfterHandshakeTimeout(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{MaxConnsPerPeer: 1, HandshakeTimeout: 300 * time.Millisecond})
	half, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	start := time.Now()
	half.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, half); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("half-open connection not closed: %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("half-open connection closed after %v, want about 300ms", d)
	}
	waitFor(t, "the place to be free", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := Dial(ctx, s.Addr, "test server", testSecret)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// A flood of bad connections is logged a few times per interval, not once
// per connection.
func TestBadConnectionWarningsRateLimited(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	s := startServer(t, newTestHandler(), ServerOptions{Logger: logger})
	for range 40 {
		nc, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(AppendFrame(nil, opEcho, 0, 1, nil, nil)) // not the auth frame
		io.Copy(io.Discard, nc)
		nc.Close()
	}
	waitFor(t, "warnings", func() bool { return strings.Count(buf.String(), "handshake failed") >= 5 })
	time.Sleep(50 * time.Millisecond)
	if n := strings.Count(buf.String(), "handshake failed"); n > 5 {
		t.Fatalf("%d warnings for 40 bad connections, want at most 5 per interval", n)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// sizedHandler is the test service, announcing opData's answer size.
type sizedHandler struct{ *testHandler }

func (sizedHandler) AnswerSize(op uint8, args []byte) int64 {
	if op != opData {
		return 0
	}
	return int64(NewDec(args).U64("n"))
}

func (s *testServer) connCount() int { return s.gate.Stats().Conns }

// Answers that a client asks for and never reads count against the memory
// budget: two such clients pipelining 16 MiB reads get one answer each
// built at a time, not 32, while another client is still served; once an
// answer has waited longer than the frame deadline the connection is
// dropped and its memory given back.
func TestUnreadAnswersCountAgainstBudget(t *testing.T) {
	h := sizedHandler{newTestHandler()}
	s := startServer(t, h, ServerOptions{MemoryBudget: 64 << 20, FrameTimeout: 2 * time.Second, MinFrameRate: 1 << 40})
	for range 2 {
		nc := rawConn(t, s.Addr)
		var b []byte
		for i := range 32 {
			b = AppendFrame(b, opData, 0, uint64(i+1), u64(16<<20), nil)
		}
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the first answers", func() bool { return h.calls.Load() >= 2 })
	time.Sleep(300 * time.Millisecond)
	if n := h.calls.Load(); n > 4 {
		t.Fatalf("%d answers of 16 MiB built for clients that read none, budget 64 MiB", n)
	}
	c := dialTest(t, s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, _, err := c.Call(ctx, opEcho, []byte("x"), [][]byte{make([]byte, 1<<20)}, [][]byte{make([]byte, 1<<20)}); err != nil {
		t.Fatalf("another client is not served while two stall: %v", err)
	}
	waitFor(t, "the stalled connections to be dropped", func() bool { return s.connCount() == 1 })
	// Only the connection left holds anything: what every connection holds.
	if total, used := s.memoryUsage(); used != connMemory {
		t.Fatalf("%d of %d budget bytes still taken, want %d (one connection)", used, total, connMemory)
	}
}

// A client that announces a large write and stalls in the middle of it
// does not hold up other clients' writes, and is dropped when the frame's
// deadline passes.
func TestStalledWriteDoesNotBlockOthers(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{FrameTimeout: 3 * time.Second, MinFrameRate: 1 << 40})
	nc := rawConn(t, s.Addr)
	hdr := Header{Op: opEcho, ReqID: 1, DataLen: MaxDataLen}
	var hb [HeaderSize]byte
	hdr.Encode(hb[:])
	nc.Write(hb[:])
	nc.Write(make([]byte, 1<<20)) // and then nothing

	start := time.Now()
	c := dialTest(t, s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, _, err := c.Call(ctx, opEcho, nil, [][]byte{make([]byte, 1<<20)}, [][]byte{make([]byte, 1<<20)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("writes of another client waited %v behind a stalled frame", d)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, nc); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("stalled connection not dropped: %v", err)
	}
	if d := time.Since(start); d < 2500*time.Millisecond {
		t.Fatalf("stalled connection dropped after %v, before its deadline", d)
	}
}

// A server that accepts and never answers (stopped with SIGSTOP, say)
// fails a call within the endpoint's Timeout, retries included, not after
// Timeout for every attempt.
func TestEndpointTimeoutBoundsRetries(t *testing.T) {
	addr := fakeServer(t, func(nc net.Conn) { io.Copy(io.Discard, nc) })
	e := newTestEndpoint(t, addr, EndpointOptions{Retries: 5, RetryDelay: 50 * time.Millisecond, Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, _, err := e.Call(context.Background(), opEcho, true, nil, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want a deadline error", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("call against a hung server failed after %v, want about its 300ms timeout", d)
	}
}

// sampler records the most pooled memory out at any Read or Write through
// it (above base): while a frame is written or read, what the code holds
// is held across those calls.
type sampler struct {
	r    io.Reader
	w    io.Writer
	base int64
	peak int64
}

func (s *sampler) sample() { s.peak = max(s.peak, pooledOut.Load()-s.base) }
func (s *sampler) Read(p []byte) (int, error) {
	s.sample()
	return s.r.Read(p)
}
func (s *sampler) Write(p []byte) (int, error) {
	s.sample()
	return s.w.Write(p)
}

// What a server counts in its memory budget for the buffers a frame is
// sealed and opened through (writeMemory, readMemory) covers what writing
// and reading the frame take from the pools, for every mode, size and
// cut of the data into slices.
func TestSessionBufferAccounting(t *testing.T) {
	cuts := map[string]func(n int) [][]byte{
		"one slice": func(n int) [][]byte { return [][]byte{make([]byte, n)} },
		"strips": func(n int) [][]byte { // 64 KiB pieces, as a striped read
			var out [][]byte
			for b := make([]byte, n); len(b) > 0; b = b[min(len(b), 64<<10):] {
				out = append(out, b[:min(len(b), 64<<10)])
			}
			return out
		},
		"odd": func(n int) [][]byte {
			b := make([]byte, n)
			return [][]byte{b[:n/3], nil, b[n/3 : n/2], b[n/2:]}
		},
	}
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		for _, argLen := range []int{0, 17, 4 << 10, MaxArgLen} {
			for _, n := range []int{0, 1, recordSize + 1, 1<<20 + 5} {
				for cn, cut := range cuts {
					c, s := sessionPair(t, mode)
					args, data := make([]byte, argLen), cut(n)
					var hb [HeaderSize]byte
					(&Header{Op: 1, ArgLen: uint32(argLen), DataLen: uint32(n)}).Encode(hb[:])
					var buf bytes.Buffer
					ws := &sampler{w: &buf, base: pooledOut.Load()}
					if err := c.send.writeFrame(ws, hb[:], args, data); err != nil {
						t.Fatal(err)
					}
					if want := c.send.writeMemory(argLen, data); ws.peak > want {
						t.Errorf("%s: writing %d+%d bytes (%s) took %d bytes of buffers, counted %d", mode, argLen, n, cn, ws.peak, want)
					}
					rs := &sampler{r: &buf, base: pooledOut.Load()}
					h, err := s.recv.readHeader(rs)
					if err != nil {
						t.Fatal(err)
					}
					if err := s.recv.readArgs(rs, make([]byte, h.ArgLen)); err != nil {
						t.Fatal(err)
					}
					// The server reads a data section into one buffer.
					if _, err := s.recv.readData(rs, n, [][]byte{make([]byte, n)}); err != nil {
						t.Fatal(err)
					}
					if want := s.recv.readMemory(argLen, n); rs.peak > want {
						t.Errorf("%s: reading %d+%d bytes took %d bytes of buffers, counted %d", mode, argLen, n, rs.peak, want)
					}
				}
			}
		}
	}
}

// While a server holds a request, the budget counts its data, the
// buffers it was opened through, and the connection; while an answer waits
// for a client that does not read it, the answer and its sealing buffer.
// Once all is done only the connections are counted, and the total never
// exceeds the budget's size.
func TestBudgetCountsRequestsAnswersAndSessions(t *testing.T) {
	h := sizedHandler{newTestHandler()}
	const budget = 64 << 20
	s := startServer(t, h, ServerOptions{MemoryBudget: budget, FrameTimeout: 2 * time.Second, MinFrameRate: 1 << 40})
	if total, used := s.memoryUsage(); total != budget || used != 0 {
		t.Fatalf("budget %d, %d used before any connection", total, used)
	}
	c := dialTest(t, s.Addr)
	waitFor(t, "the connection to be counted", func() bool { _, used := s.memoryUsage(); return used == connMemory })

	// A 1 MiB write held in its handler.
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Call(context.Background(), opBlock, nil, [][]byte{make([]byte, 1<<20)}, nil)
		done <- err
	}()
	waitFor(t, "the handler", func() bool { return h.running.Load() == 1 })
	if _, used := s.memoryUsage(); used < connMemory+1<<20+recordSize {
		t.Fatalf("a 1 MiB request held: %d bytes counted, want at least the data, a record buffer and the connection", used)
	}
	close(h.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request's memory to come back", func() bool { _, used := s.memoryUsage(); return used == connMemory })

	// A client that asks for 16 MiB answers and never reads them: the
	// answer being written holds its sealing buffer too.
	nc := rawConn(t, s.Addr)
	var b []byte
	for i := range 8 {
		b = AppendFrame(b, opData, 0, uint64(i+1), u64(16<<20), nil)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an answer stuck in writing", func() bool { _, used := s.sealing.usage(); return used > 0 })
	_, sealing := s.sealing.usage()
	if sealing < sealBufSize {
		t.Fatalf("an answer stuck in writing holds %d bytes of the sealing budget, want its sealing buffer (%d)", sealing, sealBufSize)
	}
	if total, used := s.memoryUsage(); used > total || used < 2*connMemory+16<<20+sealing {
		t.Fatalf("%d of %d bytes counted with a 16 MiB answer unread", used, total)
	}
	waitFor(t, "the stalled connection to be dropped", func() bool { return s.connCount() == 1 })
	waitFor(t, "its memory to come back", func() bool { _, used := s.memoryUsage(); return used == connMemory })
}
