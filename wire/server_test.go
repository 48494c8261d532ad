package wire

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestCallRoundTrip(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	c := dialTest(t, s.Addr)
	ctx := context.Background()
	for _, tc := range []struct {
		args []byte
		data []byte
	}{
		{nil, nil},
		{[]byte("args"), nil},
		{[]byte("args"), []byte("data")},
		{pattern(MaxArgLen, 1), pattern(3<<20, 2)},
	} {
		into := make([]byte, len(tc.data)+10)
		args, n, err := c.Call(ctx, opEcho, tc.args, [][]byte{tc.data}, [][]byte{into})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(args, tc.args) || n != len(tc.data) || !bytes.Equal(into[:n], tc.data) {
			t.Fatalf("echo of %d+%d bytes: got %d+%d", len(tc.args), len(tc.data), len(args), n)
		}
	}
	if c.Broken() {
		t.Fatal("connection broken after good calls")
	}
}

func TestCallTooLarge(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)
	ctx := context.Background()
	_, _, err := c.Call(ctx, opEcho, make([]byte, MaxArgLen+1), nil, nil)
	if !errors.Is(err, ErrFrameTooLarge) || !strings.Contains(err.Error(), "test server") {
		t.Fatalf("oversized args: %v", err)
	}
	chunk := make([]byte, 1<<20)
	big := make([][]byte, MaxDataLen>>20+1)
	for i := range big {
		big[i] = chunk
	}
	if _, _, err := c.Call(ctx, opEcho, nil, big, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized data: %v", err)
	}
	if h.calls.Load() != 0 || c.Broken() {
		t.Fatal("oversized request was sent or broke the connection")
	}
	if _, _, err := c.Call(ctx, opEcho, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// 64 calls in flight on one connection, answered in the reverse of the
// order they arrived in, each get their own answer.
func TestPipelining(t *testing.T) {
	const n = 64
	var (
		mu       sync.Mutex
		arrived  []int
		finished []int
		all      = make(chan struct{})
	)
	h := handlerFunc(func(ctx context.Context, req *Request) (Response, error) {
		i := int(binary.LittleEndian.Uint64(req.Args))
		mu.Lock()
		arrived = append(arrived, i)
		if len(arrived) == n {
			close(all)
		}
		mu.Unlock()
		<-all // every request is in flight at once
		time.Sleep(time.Duration(n-i) * time.Millisecond)
		mu.Lock()
		finished = append(finished, i)
		mu.Unlock()
		return Response{Args: req.Args, Data: [][]byte{pattern(i*100, byte(i))}}, nil
	})
	s := startServer(t, h, ServerOptions{MaxInFlight: n})
	c := dialTest(t, s.Addr)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			into := make([]byte, n*100)
			args, got, err := c.Call(context.Background(), opEcho, u64(uint64(i)), nil, [][]byte{into})
			switch {
			case err != nil:
				errs <- err
			case binary.LittleEndian.Uint64(args) != uint64(i) || got != i*100 || !bytes.Equal(into[:got], pattern(i*100, byte(i))):
				errs <- errors.New("a call got another call's answer")
			}
		})
	}
	within(t, 10*time.Second, "64 pipelined calls", wg.Wait)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mu.Lock() // the race detector does not see the order TCP gives
	defer mu.Unlock()
	if len(finished) != n {
		t.Fatalf("%d handlers finished", len(finished))
	}
	same := true
	for i := range arrived {
		same = same && arrived[i] == finished[i]
	}
	if same {
		t.Fatal("answers came in request order; the test did not exercise reordering")
	}
}

func TestCallScatter(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	c := dialTest(t, s.Addr)
	ctx := context.Background()
	want := pattern(150000, 1)
	into := [][]byte{make([]byte, 10), nil, make([]byte, 0), make([]byte, 5000), make([]byte, 200000), make([]byte, 7)}
	args, n, err := c.Call(ctx, opData, u64(uint64(len(want))), nil, into)
	if err != nil {
		t.Fatal(err)
	}
	if string(args) != "data" || n != len(want) {
		t.Fatalf("args %q, n %d", args, n)
	}
	got := append(append(append([]byte(nil), into[0]...), into[3]...), into[4][:n-5010]...)
	if !bytes.Equal(got, want) {
		t.Fatal("scattered data differs")
	}
	for i, b := range into[4][n-5010:] {
		if b != 0 {
			t.Fatalf("byte %d past the answer written", i)
		}
	}
	if !bytes.Equal(into[5], make([]byte, 7)) {
		t.Fatal("slice past the answer written")
	}
	// Exactly full.
	into = [][]byte{make([]byte, 100), make([]byte, 50)}
	if _, n, err := c.Call(ctx, opData, u64(150), nil, into); err != nil || n != 150 || !bytes.Equal(append(into[0], into[1]...), pattern(150, 1)) {
		t.Fatalf("exact fit: n %d, %v", n, err)
	}
}

func TestCallResponseTooLarge(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	c := dialTest(t, s.Addr)
	ctx := context.Background()
	into := [][]byte{make([]byte, 100), make([]byte, 100)}
	_, _, err := c.Call(ctx, opData, u64(300000), nil, into)
	if err == nil || !strings.Contains(err.Error(), "more data than asked for") || !strings.Contains(err.Error(), "test server") {
		t.Fatalf("oversized answer: %v", err)
	}
	if _, _, err := c.Call(ctx, opData, u64(1), nil, nil); err == nil {
		t.Fatal("data answer to a call with no buffers accepted")
	}
	if c.Broken() {
		t.Fatal("connection broken by an oversized answer")
	}
	if _, n, err := c.Call(ctx, opData, u64(200), nil, into); err != nil || n != 200 {
		t.Fatalf("call after an oversized answer: %d, %v", n, err)
	}
}

func TestRemoteError(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{Name: "data server 7"})
	c := dialTest(t, s.Addr)
	ctx := context.Background()
	into := make([]byte, 10)
	_, _, err := c.Call(ctx, opErrno, []byte("x"), [][]byte{[]byte("ignored")}, [][]byte{into})
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("%v: not ENOENT", err)
	}
	var re *RemoteError
	if !errors.As(err, &re) || re.Errno != syscall.ENOENT || re.Server != "test server ("+s.Addr+")" {
		t.Fatalf("%#v", err)
	}
	if !strings.Contains(err.Error(), "test server") || !strings.Contains(err.Error(), `no such thing "x"`) {
		t.Fatalf("message %q", err)
	}
	if _, _, err := c.Call(ctx, 99, nil, nil, nil); !errors.Is(err, syscall.EIO) {
		t.Fatalf("unknown op: %v, want EIO", err)
	}
	if c.Broken() {
		t.Fatal("error answers broke the connection")
	}
}

func TestHandlerPanic(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)
	ctx := context.Background()
	for range 3 {
		_, _, err := c.Call(ctx, opPanic, nil, [][]byte{[]byte("data")}, nil)
		if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "panics on purpose") {
			t.Fatalf("panic: %v, want EIO", err)
		}
	}
	if _, _, err := c.Call(ctx, opEcho, []byte("still here"), nil, nil); err != nil {
		t.Fatal(err)
	}
	c2 := dialTest(t, s.Addr)
	if _, _, err := c2.Call(ctx, opEcho, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A call whose context ends while the server is still working returns at
// once; the connection stays usable and the late answer is dropped.
func TestCallCancelWaiting(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The server works 3 s; returning well before says the call did not
	// wait for it (with a margin for a loaded machine: 250 ms against
	// 300 once failed on CI's).
	_, _, err := c.Call(ctx, opSlow, u64(3000), nil, [][]byte{make([]byte, 10)})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "test server") {
		t.Fatalf("timed out call: %v", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("timed out call returned after %v", d)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel2)
	if _, _, err := c.Call(ctx2, opBlock, nil, nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if c.Broken() {
		t.Fatal("a call abandoned while waiting broke the connection")
	}
	// Later calls work, also once the abandoned answer has come in.
	if _, _, err := c.Call(context.Background(), opEcho, []byte("a"), nil, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(350 * time.Millisecond)
	args, _, err := c.Call(context.Background(), opEcho, []byte("b"), nil, nil)
	if err != nil || string(args) != "b" {
		t.Fatalf("%q, %v", args, err)
	}
	close(h.gate)
}

// A call whose answer is being read into its buffers when its context ends
// cannot leave the reader writing into them: the connection is cut.
func TestCallCancelWhileReceiving(t *testing.T) {
	sent := make(chan struct{})
	addr := fakeServer(t, func(nc net.Conn) {
		f, err := ReadFrame(nc)
		if err != nil {
			return
		}
		// Announce 1 MiB, send only part of it, then stall.
		h := Header{Op: f.Op, Flags: FlagResponse, ReqID: f.ReqID, DataLen: 1 << 20}
		var hb [HeaderSize]byte
		h.Encode(hb[:])
		nc.Write(hb[:])
		nc.Write(make([]byte, 1000))
		close(sent)
		io.Copy(io.Discard, nc)
	})
	c := dialTest(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-sent
		time.Sleep(50 * time.Millisecond) // for the reader to take up the answer
		cancel()
	}()
	within(t, 5*time.Second, "a call cancelled while its answer arrives", func() {
		if _, _, err := c.Call(ctx, opData, nil, nil, [][]byte{make([]byte, 1<<20)}); !errors.Is(err, context.Canceled) {
			t.Errorf("%v", err)
		}
	})
	if !c.Broken() {
		t.Fatal("connection still in use by a reader filling a returned call's buffers")
	}
	if _, _, err := c.Call(context.Background(), opEcho, nil, nil, nil); !errors.As(err, new(*ConnError)) {
		t.Fatalf("call on a broken connection: %v, want ConnError", err)
	}
}

// A call stuck writing to a server that does not read returns when its
// context is cancelled, even without a deadline.
func TestCallCancelWhileSending(t *testing.T) {
	stall := make(chan struct{})
	addr := fakeServer(t, func(nc net.Conn) { <-stall })
	defer close(stall)
	c := dialTest(t, addr)
	chunk := make([]byte, 1<<20)
	data := make([][]byte, 48)
	for i := range data {
		data[i] = chunk
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	within(t, 5*time.Second, "a cancelled call blocked in write", func() {
		if _, _, err := c.Call(ctx, opEcho, nil, data, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("call to a server that never reads: %v, want Canceled", err)
		}
	})
	if !c.Broken() {
		t.Fatal("connection with a partly written frame still in use")
	}
}

// Client-side checks of what a server answers.
func TestConnRejectsBadAnswers(t *testing.T) {
	answer := func(reply func(nc net.Conn, f Frame)) *Conn {
		addr := fakeServer(t, func(nc net.Conn) {
			for {
				f, err := ReadFrame(nc)
				if err != nil {
					return
				}
				reply(nc, f)
			}
		})
		return dialTest(t, addr)
	}
	ctx := context.Background()

	// Sealed frames carry no payload CRC32C (protocol version 3): the
	// records' tags cover the payload (TestTamperedAnswerRefused), and the
	// header field is not looked at.
	t.Run("payload CRC field unused", func(t *testing.T) {
		c := answer(func(nc net.Conn, f Frame) {
			b := AppendFrame(nil, f.Op, FlagResponse, f.ReqID, f.Args, [][]byte{f.Data})
			h, _ := DecodeHeader(b)
			h.PayloadCRC = 0xdeadbeef
			h.Encode(b)
			nc.Write(b)
		})
		into := [][]byte{make([]byte, 10)}
		args, n, err := c.Call(ctx, opEcho, []byte("args"), [][]byte{[]byte("data")}, into)
		if err != nil || string(args) != "args" || string(into[0][:n]) != "data" {
			t.Fatalf("answer with any payload CRC field: %q %q, %v", args, into[0][:n], err)
		}
	})
	t.Run("undecodable error", func(t *testing.T) {
		c := answer(func(nc net.Conn, f Frame) {
			nc.Write(AppendFrame(nil, f.Op, FlagResponse|FlagError, f.ReqID, []byte{1, 2}, nil))
		})
		_, _, err := c.Call(ctx, opEcho, nil, nil, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Errno != syscall.EIO || !strings.Contains(err.Error(), "undecodable") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("unknown request id", func(t *testing.T) {
		c := answer(func(nc net.Conn, f Frame) {
			nc.Write(AppendFrame(nil, f.Op, FlagResponse, f.ReqID+1000, []byte("stray"), [][]byte{[]byte("data")}))
			nc.Write(AppendFrame(nil, f.Op, FlagResponse, f.ReqID, f.Args, nil))
		})
		if args, _, err := c.Call(ctx, opEcho, []byte("x"), nil, nil); err != nil || string(args) != "x" {
			t.Fatalf("%q, %v", args, err)
		}
	})
	t.Run("request frame", func(t *testing.T) {
		c := answer(func(nc net.Conn, f Frame) {
			nc.Write(AppendFrame(nil, f.Op, 0, f.ReqID, nil, nil))
		})
		if _, _, err := c.Call(ctx, opEcho, nil, nil, nil); !errors.As(err, new(*ConnError)) {
			t.Fatalf("%v, want ConnError", err)
		}
		waitFor(t, "connection marked broken", c.Broken)
	})
	t.Run("bad header", func(t *testing.T) {
		c := answer(func(nc net.Conn, f Frame) {
			b := AppendFrame(nil, f.Op, FlagResponse, f.ReqID, nil, nil)
			b[10] ^= 1
			nc.Write(b)
		})
		_, _, err := c.Call(ctx, opEcho, nil, nil, nil)
		if !errors.Is(err, ErrHeaderCRC) || !strings.Contains(err.Error(), "connection lost") {
			t.Fatalf("%v, want ErrHeaderCRC", err)
		}
	})
	t.Run("server hangs up", func(t *testing.T) {
		c := answer(func(nc net.Conn, f Frame) { nc.Close() })
		_, _, err := c.Call(ctx, opEcho, nil, nil, nil)
		var ce *ConnError
		if !errors.As(err, &ce) || !strings.Contains(ce.Server, "test server") {
			t.Fatalf("%v, want ConnError", err)
		}
	})
}

func TestConnClose(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.Call(context.Background(), opBlock, nil, nil, nil)
		errc <- err
	}()
	waitFor(t, "handler to start", func() bool { return h.running.Load() == 1 })
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("call in flight on Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call in flight not failed by Close")
	}
	if !c.Broken() {
		t.Fatal("closed connection not Broken")
	}
	if _, _, err := c.Call(context.Background(), opEcho, nil, nil, nil); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	c.Close()
	// The server notices and cancels the handler's context.
	waitFor(t, "handler to end", func() bool { return h.running.Load() == 0 })
}

// A client that goes away cancels the context of its handlers, and
// Server.Close does not wait forever for handlers that wait for that.
func TestServerCancelsHandlers(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)
	go c.Call(context.Background(), opCtxWait, nil, nil, nil)
	waitFor(t, "handler to start", func() bool { return h.running.Load() == 1 })
	c.Close()
	select {
	case <-h.ctxDone:
	case <-time.After(5 * time.Second):
		t.Fatal("handler context not cancelled when its client went away")
	}

	c2 := dialTest(t, s.Addr)
	go c2.Call(context.Background(), opCtxWait, nil, nil, nil)
	waitFor(t, "handler to start", func() bool { return h.running.Load() == 1 })
	s.stop(t)
	select {
	case <-h.ctxDone:
	default:
		t.Fatal("Server.Close returned with a handler still running")
	}
}

func TestServeAfterClose(t *testing.T) {
	s := NewServer(newTestHandler(), ServerOptions{Secret: testSecret, Logger: quietLogger()})
	s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	within(t, 5*time.Second, "Serve on a closed server", func() {
		if err := s.Serve(context.Background(), ln); err != nil {
			t.Error(err)
		}
	})
}

func TestServeContext(t *testing.T) {
	h := newTestHandler()
	s := NewServer(h, ServerOptions{Secret: testSecret, Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	c := dialTest(t, ln.Addr().String())
	if _, _, err := c.Call(context.Background(), opEcho, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return when its context ended")
	}
	waitFor(t, "connection dropped", c.Broken)
	within(t, 5*time.Second, "Close", func() { s.Close() })
}

func TestServeNoSecret(t *testing.T) {
	s := NewServer(newTestHandler(), ServerOptions{Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := s.Serve(context.Background(), ln); err == nil {
		t.Fatal("served without a secret")
	}
}

func TestWrongSecret(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, s.Addr, "server A", []byte("not the secret at all"))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong secret: %v, want ErrAuth", err)
	}
	var de *DialError
	if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), "server A: ") {
		t.Fatalf("%v: not a DialError naming the server", err)
	}
	// The server keeps serving others.
	c := dialTest(t, s.Addr)
	if _, _, err := c.Call(ctx, opEcho, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A server that does not know the secret cannot pass itself off as ours.
func TestImpostorServer(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{Secret: []byte("another secret, a different one")})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Dial(ctx, s.Addr, "server A", testSecret); !errors.Is(err, ErrAuth) {
		t.Fatalf("%v, want ErrAuth", err)
	}
}

func setHandshakeTimeout(t *testing.T, d time.Duration) {
	old := HandshakeTimeout
	HandshakeTimeout = d
	t.Cleanup(func() { HandshakeTimeout = old })
}

// Peers that send garbage, or nothing, before authenticating do not wedge
// the server, and get nothing but the hello.
func TestHandshakeGarbage(t *testing.T) {
	setHandshakeTimeout(t, 500*time.Millisecond)
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})

	expectClosed := func(nc net.Conn, within time.Duration) {
		t.Helper()
		nc.SetReadDeadline(time.Now().Add(within))
		f, err := ReadFrame(nc) // the hello
		if err != nil || f.Op != opHello {
			t.Fatalf("hello: %+v, %v", f.Header, err)
		}
		// The server may hang up with our bytes unread: a reset.
		if _, err := io.Copy(io.Discard, nc); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("connection not closed by the server: %v", err)
		}
	}

	silent, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	garbage, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	junk := make([]byte, 4096)
	rand.Read(junk)
	junk[0] = 0 // not the magic
	garbage.Write(junk)

	// Meanwhile the server answers others.
	c := dialTest(t, s.Addr)
	if _, _, err := c.Call(context.Background(), opEcho, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	expectClosed(garbage, 2*time.Second)
	start := time.Now()
	expectClosed(silent, 5*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("silent client kept for %v", d)
	}

	// A well-formed frame that is not the auth frame, and requests sent
	// before authenticating, are refused.
	for _, op := range []uint8{opEcho, opHello} {
		nc, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(AppendFrame(nil, op, 0, 1, nil, nil))
		expectClosed(nc, 2*time.Second)
		nc.Close()
	}
	if n := h.calls.Load(); n != 1 {
		t.Fatalf("handler called %d times", n)
	}
}

// Before authenticating, a peer cannot make the server allocate a large
// frame (or wait for one).
func TestHandshakeHugeFrame(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	for _, h := range []Header{{Op: opAuth, DataLen: MaxDataLen}, {Op: opAuth, ArgLen: MaxArgLen}} {
		nc, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := ReadFrame(nc); err != nil || f.Op != opHello {
			t.Fatalf("hello: %v", err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var hb [HeaderSize]byte
		h.Encode(hb[:])
		nc.Write(hb[:])
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%+v: server waits for the frame: %v", h, err)
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 512<<10 {
			t.Fatalf("%+v: server allocated %d bytes for an unauthenticated frame", h, d)
		}
		nc.Close()
	}
}

// A sealed request carries no payload CRC32C (protocol version 3): the
// field is not looked at, and the records' tags are what catch a change
// on the way (TestTamperedWriteRefused, TestDataRecordsTamperDetected).
func TestSealedRequestPayloadCRCUnused(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	nc := rawConn(t, s.Addr)
	for _, crc := range []uint32{0, 0xdeadbeef} {
		b := AppendFrame(nil, opEcho, 0, 77, []byte("args"), [][]byte{[]byte("data")})
		binary.LittleEndian.PutUint32(b[20:], crc)
		reseal(b)
		b = AppendFrame(b, opEcho, 0, 78, []byte("next"), nil)
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
		// The handlers run concurrently: the answers may come in any order.
		got := map[uint64]string{}
		for range 2 {
			f, err := ReadFrame(nc)
			if err != nil || f.Flags != FlagResponse {
				t.Fatalf("payload CRC field 0x%08x: answer %+v, %v", crc, f.Header, err)
			}
			got[f.ReqID] = string(f.Args) + "+" + string(f.Data)
		}
		if got[77] != "args+data" || got[78] != "next+" {
			t.Fatalf("payload CRC field 0x%08x: answers %v", crc, got)
		}
	}
}

// reseal recomputes the header CRC of a frame at the start of b.
func reseal(b []byte) {
	binary.LittleEndian.PutUint32(b[24:], crcOf(b[:24]))
}

func TestCorruptedHeaderClosesConnection(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	for i := range HeaderSize {
		nc := rawConn(t, s.Addr)
		b := AppendFrame(nil, opEcho, 0, 1, []byte("args"), nil)
		b[i] ^= 0x20
		nc.Write(b)
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := io.Copy(io.Discard, nc); n != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("header byte %d corrupted: %d bytes answered, %v; want the connection closed", i, n, err)
		}
		nc.Close()
	}
	if n := h.calls.Load(); n != 0 {
		t.Fatalf("handler called %d times", n)
	}
}

func TestOversizedHeaderClosesConnection(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	for _, hd := range []Header{{Op: opEcho, DataLen: MaxDataLen + 1}, {Op: opEcho, ArgLen: MaxArgLen + 1}, {Op: opEcho, DataLen: 1<<32 - 1}} {
		nc := rawConn(t, s.Addr)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var hb [HeaderSize]byte
		hd.Encode(hb[:])
		nc.Write(hb[:])
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := io.Copy(io.Discard, nc); n != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%+v: %d bytes answered, %v; want the connection closed", hd, n, err)
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 512<<10 {
			t.Fatalf("%+v: server allocated %d bytes", hd, d)
		}
		nc.Close()
	}
	if n := h.calls.Load(); n != 0 {
		t.Fatalf("handler called %d times", n)
	}
	// Frames of exactly the limits are fine.
	c := dialTest(t, s.Addr)
	chunk := make([]byte, 1<<20)
	data := make([][]byte, MaxDataLen>>20)
	for i := range data {
		data[i] = chunk
	}
	if _, _, err := c.Call(context.Background(), opEcho, make([]byte, MaxArgLen), data, nil); err == nil || !strings.Contains(err.Error(), "more data than asked for") {
		t.Fatalf("frame of the maximum size: %v", err)
	}
}

// A handler answering more than a frame can carry fails that call only.
func TestServerOversizedAnswer(t *testing.T) {
	chunk := make([]byte, 1<<20)
	h := handlerFunc(func(ctx context.Context, req *Request) (Response, error) {
		switch req.Op {
		case 1:
			data := make([][]byte, MaxDataLen>>20+1)
			for i := range data {
				data[i] = chunk
			}
			return Response{Data: data}, nil
		case 2:
			return Response{Args: make([]byte, MaxArgLen+1)}, nil
		}
		return Response{Args: []byte("ok")}, nil
	})
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)
	ctx := context.Background()
	for _, op := range []uint8{1, 2} {
		_, _, err := c.Call(ctx, op, nil, nil, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Errno != syscall.EIO || !strings.Contains(err.Error(), "too large") {
			t.Fatalf("op %d: %v, want an EIO answer", op, err)
		}
		if c.Broken() {
			t.Fatalf("op %d: an oversized answer broke the connection", op)
		}
	}
	if args, _, err := c.Call(ctx, 3, nil, nil, nil); err != nil || string(args) != "ok" {
		t.Fatalf("%q, %v", args, err)
	}
}

// Response.Release runs once the answer is written, also for error answers.
func TestResponseRelease(t *testing.T) {
	var released atomic.Int64
	h := handlerFunc(func(ctx context.Context, req *Request) (Response, error) {
		r := Response{Args: []byte("a"), Release: func() { released.Add(1) }}
		if req.Op == 2 {
			return r, errors.New("failed")
		}
		return r, nil
	})
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)
	for _, op := range []uint8{1, 2, 1} {
		c.Call(context.Background(), op, nil, nil, nil)
	}
	waitFor(t, "releases", func() bool { return released.Load() == 3 })
}

// budgetFor is the smallest MemoryBudget whose part for requests (less
// the part kept for sealing answers) is n bytes or more.
func budgetFor(n int64) int64 {
	b := n
	for b-sealingShare(b) < n {
		b += max((n-(b-sealingShare(b)))/2, 1)
	}
	return b
}

// The memory budget bounds the memory held by handlers: their request
// data (1 MiB each here), the buffer a record is opened in, and what every
// connection holds. With room for 8 and a half such requests, at most 8
// run at once, across connections.
func TestServerMemoryBound(t *testing.T) {
	h := newTestHandler()
	need := int64(1<<20) + recordSize + tagSize
	s := startServer(t, h, ServerOptions{MemoryBudget: budgetFor(4*connMemory + 8*need + need/2)})
	conns := []*Conn{dialTest(t, s.Addr), dialTest(t, s.Addr), dialTest(t, s.Addr), dialTest(t, s.Addr)}
	data := [][]byte{make([]byte, 1<<20)}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 16 {
		wg.Go(func() {
			if _, _, err := conns[i%4].Call(context.Background(), opBlock, nil, data, nil); err != nil {
				t.Error(err)
				failed.Add(1)
			}
		})
	}
	waitFor(t, "8 handlers", func() bool { return h.running.Load() == 8 })
	time.Sleep(100 * time.Millisecond)
	if n := h.running.Load(); n != 8 {
		t.Fatalf("%d handlers hold 1 MiB each under an 8 MiB budget", n)
	}
	close(h.gate)
	within(t, 10*time.Second, "the 16 writes", wg.Wait)
	if h.maxRun.Load() > 8 || h.calls.Load() != 16 || failed.Load() != 0 {
		t.Fatalf("max %d at once, %d calls, %d failed", h.maxRun.Load(), h.calls.Load(), failed.Load())
	}
}

// Server.Close returns even while a connection waits for memory that its
// handlers, waiting for their context, will not give back on their own.
func TestServerCloseWithBudgetExhausted(t *testing.T) {
	h := newTestHandler()
	need := int64(512<<10) + recordSize + tagSize
	s := startServer(t, h, ServerOptions{MemoryBudget: budgetFor(5*connMemory + 4*need)})
	// One connection holds at most a quarter of the budget, so four
	// connections take it all and a fifth waits for memory.
	data := [][]byte{make([]byte, 512<<10)}
	for range 5 {
		c := dialTest(t, s.Addr)
		go c.Call(context.Background(), opCtxWait, nil, data, nil)
	}
	waitFor(t, "4 handlers", func() bool { return h.running.Load() == 4 })
	s.stop(t)
}

// The server does not mistake a closed listener for a crash.
func TestServerClose(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	c := dialTest(t, s.Addr)
	s.stop(t)
	waitFor(t, "client to notice", c.Broken)
	if _, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		t.Fatal("closed server still accepts connections")
	}
}
