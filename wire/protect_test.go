package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxy forwards connections from a loopback listener to addr, as a
// machine on the network path would. The handshake's frames pass as they
// are (the proxy has no secret); after them, up gets what the client sends
// and down what the server sends, to forward, change, drop or replay.
func proxy(t *testing.T, addr string, up, down func(from io.Reader, to io.Writer)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	copyAll := func(from io.Reader, to io.Writer) { io.Copy(to, from) }
	if up == nil {
		up = copyAll
	}
	if down == nil {
		down = copyAll
	}
	// pipe passes n handshake frames, then hands the stream to edit; when
	// it returns, both connections close.
	pipe := func(from, to net.Conn, n int, edit func(io.Reader, io.Writer)) {
		defer wg.Done()
		defer from.Close()
		defer to.Close()
		for range n {
			f, err := readHandshakeFrame(from)
			if err != nil {
				return
			}
			if _, err := to.Write(AppendFrame(nil, f.Op, f.Flags, f.ReqID, f.Args, nil)); err != nil {
				return
			}
		}
		edit(from, to)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			cli, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", addr)
			if err != nil {
				cli.Close()
				return
			}
			mu.Lock()
			conns = append(conns, cli, srv)
			mu.Unlock()
			wg.Add(2)
			go pipe(cli, srv, 1, up)   // auth
			go pipe(srv, cli, 2, down) // hello, auth reply
		}
	}()
	return ln.Addr().String()
}

// storeHandler keeps the data of every request it is given.
type storeHandler struct {
	mu   sync.Mutex
	data [][]byte
}

func (h *storeHandler) ServeWire(_ context.Context, req *Request) (Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.data = append(h.data, append([]byte(nil), req.Data...))
	return Response{Args: []byte("ok")}, nil
}

func (h *storeHandler) stored() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.data...)
}

// The attack of issue 10: a machine on the path, without the secret,
// rewrites CONFIDENTIAL to TAMPERED!!!! in a write frame and recomputes
// the checksums. The write must fail with an authentication error naming
// the server, and nothing reach the handler.
func TestTamperedWriteRefused(t *testing.T) {
	args := []byte("write /report.txt")
	data := bytes.Repeat([]byte("CONFIDENTIAL"), 100)
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		t.Run(mode.String(), func(t *testing.T) {
			h := &storeHandler{}
			s := startServer(t, h, ServerOptions{Protection: mode})
			tampered := make(chan bool, 1)
			up := func(from io.Reader, to io.Writer) {
				frame := make([]byte, sealedSize(len(args), len(data)))
				if _, err := io.ReadFull(from, frame); err != nil {
					return
				}
				tampered <- tamper(frame, mode, len(args))
				to.Write(frame)
				io.Copy(to, from)
			}
			addr := proxy(t, s.Addr, up, nil)
			e := NewEndpoint("I/O server data0 ("+addr+")", addr, testSecret, EndpointOptions{Protection: mode, Timeout: 5 * time.Second})
			defer e.Close()
			_, _, err := e.Call(context.Background(), opEcho, true, args, [][]byte{data}, nil)
			if !<-tampered {
				t.Fatal("the proxy found nothing to tamper with")
			}
			if err == nil {
				t.Fatalf("a tampered write succeeded; the handler stored %q", h.stored())
			}
			if !errors.Is(err, ErrFrameAuth) || !strings.Contains(err.Error(), "I/O server data0") || !strings.Contains(err.Error(), "frame authentication failed") {
				t.Fatalf("tampered write: %v; want a frame authentication error naming the server", err)
			}
			if got := h.stored(); len(got) != 0 {
				t.Fatalf("the handler was given %d requests of a tampered connection", len(got))
			}
		})
	}
}

// tamper changes the data section of the sealed frame f: in the clear
// (integrity) it rewrites CONFIDENTIAL to TAMPERED!!!! and recomputes both
// checksums of the header, as the attacker of issue 10 did; encrypted, it
// can only flip bits. It reports whether it changed anything.
func tamper(f []byte, mode Protection, argLen int) bool {
	body := HeaderSize + tagSize + argLen + tagSize
	if mode == ProtectAEAD {
		f[body+3] ^= 0x20
		return true
	}
	hb := f[:HeaderSize]
	data := f[body : len(f)-tagSize]
	if !bytes.Contains(data, []byte("CONFIDENTIAL")) {
		return false
	}
	copy(data, bytes.ReplaceAll(data, []byte("CONFIDENTIAL"), []byte("TAMPERED!!!!")))
	args := f[HeaderSize+tagSize : HeaderSize+tagSize+argLen]
	binary.LittleEndian.PutUint32(hb[20:], Checksum(args, [][]byte{data}))
	binary.LittleEndian.PutUint32(hb[24:], crc32.Checksum(hb[:24], castagnoli))
	return true
}

// Answers are protected too: a changed answer fails the call, naming the
// server, and breaks the connection.
func TestTamperedAnswerRefused(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	down := func(from io.Reader, to io.Writer) {
		b := make([]byte, 1)
		for i := 0; ; i++ {
			if _, err := from.Read(b); err != nil {
				return
			}
			if i == HeaderSize+tagSize+2 {
				b[0] ^= 1 // in the answer's argument section
			}
			to.Write(b)
		}
	}
	addr := proxy(t, s.Addr, nil, down)
	c, err := Dial(context.Background(), addr, "meta server ("+addr+")", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = c.Call(context.Background(), opEcho, []byte("some arguments"), nil, nil)
	if !errors.Is(err, ErrFrameAuth) || !strings.Contains(err.Error(), "meta server") {
		t.Fatalf("tampered answer: %v; want a frame authentication error naming the server", err)
	}
	if !c.Broken() {
		t.Fatal("the connection survived a tampered answer")
	}
}

// Replaying, dropping or reordering whole frames is detected: the frames
// are numbered. Each frame here is an echo request with 8 bytes of
// arguments, so the proxy can cut the stream into frames without keys.
func TestReplayDropReorderDetected(t *testing.T) {
	frameSize := sealedSize(8, 0)
	cases := []struct {
		name string
		// edit gets the frames one by one (i counts from 0) and returns
		// what to send on.
		edit func(i int, f []byte, seen [][]byte) [][]byte
	}{
		{"replay", func(i int, f []byte, seen [][]byte) [][]byte {
			if i == 1 {
				return [][]byte{seen[0], f}
			}
			return [][]byte{f}
		}},
		{"drop", func(i int, f []byte, _ [][]byte) [][]byte {
			if i == 1 {
				return nil
			}
			return [][]byte{f}
		}},
		{"reorder", func(i int, f []byte, seen [][]byte) [][]byte {
			switch i {
			case 1:
				return nil
			case 2:
				return [][]byte{f, seen[1]}
			}
			return [][]byte{f}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &storeHandler{}
			s := startServer(t, h, ServerOptions{})
			up := func(from io.Reader, to io.Writer) {
				var seen [][]byte
				for i := 0; ; i++ {
					f := make([]byte, frameSize)
					if _, err := io.ReadFull(from, f); err != nil {
						return
					}
					seen = append(seen, f)
					for _, out := range tc.edit(i, f, seen) {
						if _, err := to.Write(out); err != nil {
							return
						}
					}
				}
			}
			addr := proxy(t, s.Addr, up, nil)
			c, err := Dial(context.Background(), addr, "data server 1 ("+addr+")", testSecret)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The first request passes untouched.
			if _, _, err := c.Call(ctx, opEcho, u64(0), nil, nil); err != nil {
				t.Fatal(err)
			}
			// The next two are sent without waiting for answers (a dropped
			// or held frame has none).
			errs := make(chan error, 2)
			for i := range 2 {
				go func() {
					_, _, err := c.Call(ctx, opEcho, u64(uint64(i+1)), nil, nil)
					errs <- err
				}()
				time.Sleep(20 * time.Millisecond) // in order on the wire
			}
			var failed error
			for range 2 {
				if err := <-errs; err != nil {
					failed = err
				}
			}
			if !errors.Is(failed, ErrFrameAuth) || !strings.Contains(failed.Error(), "data server 1") {
				t.Fatalf("%s: %v; want a frame authentication error naming the server", tc.name, failed)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s went unnoticed until the deadline", tc.name)
			}
			if !c.Broken() {
				t.Fatal("the connection is still in use")
			}
			if n := len(h.stored()); n > 2 {
				t.Fatalf("the handler served %d requests, more than the client sent before the %s", n, tc.name)
			}
		})
	}
}

// Both ends must use the same mode; neither falls back to the other's.
func TestProtectionMismatchRefused(t *testing.T) {
	for _, tc := range []struct{ server, client Protection }{
		{ProtectAEAD, ProtectIntegrity},
		{ProtectIntegrity, ProtectAEAD},
	} {
		s := startServer(t, newTestHandler(), ServerOptions{Protection: tc.server})
		_, err := DialProtected(context.Background(), s.Addr, "I/O server data3", testSecret, tc.client)
		if !errors.Is(err, ErrProtectionMismatch) {
			t.Fatalf("server %s, client %s: %v; want ErrProtectionMismatch", tc.server, tc.client, err)
		}
		for _, want := range []string{"I/O server data3", tc.server.String(), tc.client.String(), "wire-protection"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("server %s, client %s: %q does not say %q", tc.server, tc.client, err, want)
			}
		}
		// A retry would wait at least 2.5 s (RetryDelay/2 plus jitter).
		e := NewEndpoint("I/O server data3", s.Addr, testSecret, EndpointOptions{Protection: tc.client, Retries: 3, RetryDelay: 5 * time.Second})
		start := time.Now()
		if _, _, err := e.Call(context.Background(), opEcho, true, nil, nil, nil); !errors.Is(err, ErrProtectionMismatch) {
			t.Fatalf("endpoint: %v", err)
		}
		if time.Since(start) > 2400*time.Millisecond {
			t.Error("a protection mismatch was retried")
		}
		e.Close()
	}
}

// A client that ignores the server's mode is refused by the server.
func TestServerRefusesOtherMode(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{Protection: ProtectIntegrity})
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	hello, err := readHandshakeFrame(nc)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDec(hello.Args)
	d.U8("version")
	d.String("name")
	sn := d.Blob("nonce")
	cn := make([]byte, nonceSize)
	var e Enc
	e.Blob(cn)
	e.Blob(proof(testSecret, "client", ProtectAEAD, sn, cn))
	e.U8(uint8(ProtectAEAD))
	if err := writeFrame(nc, opAuth, 0, 0, e.Bytes()); err != nil {
		t.Fatal(err)
	}
	f, err := readHandshakeFrame(nc)
	if err != nil {
		t.Fatal(err)
	}
	rerr := decodeError("server", f.Args)
	if f.Flags&FlagError == 0 || !strings.Contains(rerr.Error(), "wire-protection aead") || !strings.Contains(rerr.Error(), "uses integrity") {
		t.Fatalf("auth reply flags %#x: %v; want a refusal naming both modes", f.Flags, rerr)
	}
}

// sessionPair runs a handshake over a pipe and returns both ends' sessions.
func sessionPair(t testing.TB, mode Protection) (client, server *session) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		var err error
		server, err = serverHandshake(b, "pair", testSecret, mode, time.Second, nil)
		done <- err
	}()
	_, client, err := clientHandshake(a, "pair", testSecret, mode)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return client, server
}

// Keys belong to one connection and one direction: the same frame sealed
// on two connections, or in both directions, never looks the same.
func TestKeysDifferPerConnection(t *testing.T) {
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		frame := func(h *half) []byte {
			var buf bytes.Buffer
			var hb [HeaderSize]byte
			(&Header{Op: 1, ReqID: 1, ArgLen: 4, DataLen: 12, PayloadCRC: Checksum([]byte("args"), [][]byte{[]byte("CONFIDENTIAL")})}).Encode(hb[:])
			if err := h.writeFrame(&buf, hb[:], []byte("args"), [][]byte{[]byte("CONFIDENTIAL")}); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		}
		c1, s1 := sessionPair(t, mode)
		c2, _ := sessionPair(t, mode)
		f1, f2, back := frame(c1.send), frame(c2.send), frame(s1.send)
		if bytes.Equal(f1, f2) || bytes.Equal(f1, back) {
			t.Fatalf("%s: the same frame sealed alike on two connections or directions", mode)
		}
		if mode == ProtectAEAD && bytes.Contains(f1, []byte("CONFIDENTIAL")) {
			t.Fatalf("aead: plaintext on the wire")
		}
		if mode == ProtectIntegrity && !bytes.Contains(f1, []byte("CONFIDENTIAL")) {
			t.Fatalf("integrity: the data is not sent in the clear")
		}
		// And the records of one connection do not open on another.
		if _, err := s1.recv.readHeader(bytes.NewReader(f2)); !errors.Is(err, ErrFrameAuth) {
			t.Fatalf("%s: a frame of another connection: %v", mode, err)
		}
	}
}

// Frames of any size survive sealing and opening, however the sender's and
// the receiver's data are cut into slices.
func TestSealedFrameRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cut := func(b []byte) [][]byte {
		var out [][]byte
		for len(b) > 0 {
			n := min(len(b), 1+rng.IntN(3*recordSize/2))
			if rng.IntN(4) == 0 {
				n = min(len(b), 1+rng.IntN(100))
			}
			out = append(out, b[:n])
			b = b[n:]
		}
		if rng.IntN(3) == 0 {
			out = append(out, nil)
		}
		return out
	}
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		c, s := sessionPair(t, mode)
		for _, n := range []int{0, 1, recordSize - 1, recordSize, recordSize + 1, 3*recordSize + 17, 4 << 20} {
			for range 3 {
				data := pattern(n, byte(n))
				args := pattern(rng.IntN(100), 3)
				h := Header{Op: 1, ReqID: uint64(n), ArgLen: uint32(len(args)), DataLen: uint32(n), PayloadCRC: Checksum(args, [][]byte{data})}
				var hb [HeaderSize]byte
				h.Encode(hb[:])
				var wire bytes.Buffer
				if err := c.send.writeFrame(&wire, hb[:], args, cut(data)); err != nil {
					t.Fatal(err)
				}
				if wire.Len() != sealedSize(len(args), n) {
					t.Fatalf("%s: %d-byte frame sealed into %d bytes, want %d", mode, n, wire.Len(), sealedSize(len(args), n))
				}
				got, err := s.recv.readHeader(&wire)
				if err != nil || got != h {
					t.Fatalf("%s: header %+v, %v; want %+v", mode, got, err, h)
				}
				gotArgs := make([]byte, len(args))
				if err := s.recv.readArgs(&wire, gotArgs); err != nil || !bytes.Equal(gotArgs, args) {
					t.Fatalf("%s: args %v", mode, err)
				}
				// The receiver's slices may hold less than was sent.
				short := rng.IntN(3) == 0 && n > 0
				into := make([]byte, n)
				if short {
					into = into[:n-1-rng.IntN(n)]
				}
				placed, err := s.recv.readData(&wire, n, cut(into))
				if err != nil || placed != len(into) || !bytes.Equal(into, data[:len(into)]) {
					t.Fatalf("%s: %d-byte data section into %d bytes: placed %d, %v", mode, n, len(into), placed, err)
				}
				if wire.Len() != 0 {
					t.Fatalf("%s: %d bytes left after the frame", mode, wire.Len())
				}
			}
		}
	}
}

// The raw connections of protocol tests and tools stream: half a frame
// written is sealed and sent as far as whole records go.
func TestSealedConnStreams(t *testing.T) {
	h := &storeHandler{}
	s := startServer(t, h, ServerOptions{})
	nc := rawConn(t, s.Addr)
	data := pattern(recordSize+10, 9)
	frame := AppendFrame(nil, opEcho, 0, 5, []byte("a"), [][]byte{data})
	// In pieces, across record boundaries.
	for _, n := range []int{3, HeaderSize, 1000, recordSize - 2000} {
		nc.Write(frame[:n])
		frame = frame[n:]
	}
	nc.Write(frame)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := ReadFrame(nc)
	if err != nil || resp.ReqID != 5 || string(resp.Args) != "ok" {
		t.Fatalf("answer %+v, %v", resp.Header, err)
	}
	if got := h.stored(); len(got) != 1 || !bytes.Equal(got[0], data) {
		t.Fatal("the handler got other data than was sent")
	}
}

// fuzzSession is a fixed receiving side: the fuzzer plays a peer without
// its keys.
func fuzzSession(f *testing.F, mode Protection) *half {
	s, err := newSession(testSecret, bytes.Repeat([]byte{1}, nonceSize), bytes.Repeat([]byte{2}, nonceSize), mode, false)
	if err != nil {
		f.Fatal(err)
	}
	return s.recv
}

// FuzzOpenFrame feeds bytes from a peer that lacks the keys to the frame
// decoder: they must never panic, and never be accepted. The first byte
// picks the mode. Seeds are frames sealed with other keys.
func FuzzOpenFrame(f *testing.F) {
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		other, err := newSession(testSecret, bytes.Repeat([]byte{3}, nonceSize), bytes.Repeat([]byte{2}, nonceSize), mode, true)
		if err != nil {
			f.Fatal(err)
		}
		for _, fr := range [][2][]byte{{nil, nil}, {[]byte("args"), []byte("CONFIDENTIAL")}, {nil, make([]byte, 300)}} {
			var hb [HeaderSize]byte
			(&Header{Op: 1, ArgLen: uint32(len(fr[0])), DataLen: uint32(len(fr[1])), PayloadCRC: Checksum(fr[0], [][]byte{fr[1]})}).Encode(hb[:])
			var b bytes.Buffer
			b.WriteByte(byte(mode))
			if err := other.send.writeFrame(&b, hb[:], fr[0], [][]byte{fr[1]}); err != nil {
				f.Fatal(err)
			}
			f.Add(b.Bytes())
			f.Add(b.Bytes()[:HeaderSize+tagSize])
			// A plain frame, as a peer of protocol version 1 sends.
			f.Add(append([]byte{byte(mode)}, AppendFrame(nil, 1, 0, 1, fr[0], [][]byte{fr[1]})...))
		}
	}
	f.Add([]byte{0})
	recv := map[Protection]*half{ProtectAEAD: fuzzSession(f, ProtectAEAD), ProtectIntegrity: fuzzSession(f, ProtectIntegrity)}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		h := *recv[Protection(in[0]&1)] // a fresh counter each time
		r := bytes.NewReader(in[1:])
		hdr, err := h.readHeader(r)
		if err != nil {
			return
		}
		t.Fatalf("forged header accepted: %+v", hdr)
	})
}

func BenchmarkProtection(b *testing.B) {
	const size = 1 << 20
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		for _, dir := range []string{"write", "read"} {
			b.Run(mode.String()+"/"+dir, func(b *testing.B) {
				s := startServer(b, handlerFunc(func(_ context.Context, req *Request) (Response, error) {
					if req.Op == opData {
						return Response{Data: [][]byte{benchData}}, nil
					}
					return Response{}, nil
				}), ServerOptions{Protection: mode})
				e := NewEndpoint("bench", s.Addr, testSecret, EndpointOptions{Protection: mode})
				defer e.Close()
				ctx := context.Background()
				into := make([]byte, size)
				b.SetBytes(size)
				for b.Loop() {
					var err error
					if dir == "write" {
						_, _, err = e.Call(ctx, opEcho, true, nil, [][]byte{benchData}, nil)
					} else {
						_, _, err = e.Call(ctx, opData, true, nil, nil, [][]byte{into})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	// The same transfers framed as before protection (header, args and
	// data written as they are, read straight into place, CRC32C): what
	// protection costs is measured against this.
	for _, dir := range []string{"write", "read"} {
		b.Run("plain-framing/"+dir, func(b *testing.B) {
			benchPlain(b, dir == "read", size)
		})
	}
}

var benchData = pattern(1<<20, 4)

// benchPlain moves frames of n bytes one way over loopback with the
// framing of protocol version 1, and a small answer the other way.
func benchPlain(b *testing.B, read bool, n int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, n)
		for {
			f, err := ReadFrame(nc)
			if err != nil {
				return
			}
			var out [][]byte
			if read {
				out = [][]byte{benchData[:n]}
			}
			h := Header{Op: f.Op, Flags: FlagResponse, ReqID: f.ReqID, DataLen: uint32(totalLen(out)), PayloadCRC: Checksum(nil, out)}
			var hb [HeaderSize]byte
			h.Encode(hb[:])
			bufs := net.Buffers(append([][]byte{hb[:]}, out...))
			if _, err := bufs.WriteTo(nc); err != nil {
				return
			}
			_ = buf
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	into := make([]byte, n)
	b.SetBytes(int64(n))
	for b.Loop() {
		var data [][]byte
		if !read {
			data = [][]byte{benchData[:n]}
		}
		h := Header{Op: 1, ReqID: 1, DataLen: uint32(totalLen(data)), PayloadCRC: Checksum(nil, data)}
		var hb [HeaderSize]byte
		h.Encode(hb[:])
		bufs := net.Buffers(append([][]byte{hb[:]}, data...))
		if _, err := bufs.WriteTo(nc); err != nil {
			b.Fatal(err)
		}
		var rh [HeaderSize]byte
		if _, err := io.ReadFull(nc, rh[:]); err != nil {
			b.Fatal(err)
		}
		hh, err := DecodeHeader(rh[:])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, into[:hh.DataLen]); err != nil {
			b.Fatal(err)
		}
		if Checksum(nil, [][]byte{into[:hh.DataLen]}) != hh.PayloadCRC {
			b.Fatal("checksum")
		}
	}
}

// Inside one frame, the data records are numbered as the frames are: one
// changed, dropped, replayed or moved fails to open, whether it opens in
// the caller's slice (in place, its tag over the next record's bytes), in
// a slice with no room for its tag (through the scratch buffer), or across
// slices. In ProtectAEAD the record that fails leaves none of its
// plaintext in the caller's slice.
func TestDataRecordsTamperDetected(t *testing.T) {
	const n = 3*recordSize + 1000
	data := pattern(n, 5)
	recLen := func(i int) int { return min(recordSize, n-i*recordSize) + tagSize }
	edits := map[string]func(recs [][]byte) [][]byte{
		"none": func(r [][]byte) [][]byte { return r },
		"flip": func(r [][]byte) [][]byte {
			r[1] = append([]byte(nil), r[1]...)
			r[1][100] ^= 1
			return r
		},
		"swap":   func(r [][]byte) [][]byte { return [][]byte{r[1], r[0], r[2], r[3]} },
		"replay": func(r [][]byte) [][]byte { return [][]byte{r[0], r[0], r[2], r[3]} },
		"drop":   func(r [][]byte) [][]byte { return [][]byte{r[0], r[2], r[3], r[3]} },
		"tag":    func(r [][]byte) [][]byte { r[3] = append([]byte(nil), r[3]...); r[3][len(r[3])-1] ^= 0x80; return r },
	}
	failsAt := map[string]int{"flip": 1, "swap": 0, "replay": 1, "drop": 1, "tag": 3}
	dests := map[string]func() [][]byte{
		"in place": func() [][]byte { return [][]byte{make([]byte, n+tagSize)[:n:n]} },
		"exact":    func() [][]byte { return [][]byte{make([]byte, n)} },
		"slices": func() [][]byte {
			b := make([]byte, n)
			return [][]byte{b[:recordSize/2], b[recordSize/2 : 2*recordSize+3], b[2*recordSize+3:]}
		},
		// Every record alone in its slice, as a striped read's are.
		"strips": func() [][]byte {
			b := make([]byte, n)
			return [][]byte{b[:recordSize], b[recordSize : 2*recordSize], b[2*recordSize : 3*recordSize], b[3*recordSize:]}
		},
	}
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		for en, edit := range edits {
			for dn, dest := range dests {
				c, s := sessionPair(t, mode)
				var hb [HeaderSize]byte
				(&Header{Op: 1, DataLen: n}).Encode(hb[:])
				var w bytes.Buffer
				if err := c.send.writeFrame(&w, hb[:], nil, [][]byte{data}); err != nil {
					t.Fatal(err)
				}
				b := w.Bytes()
				head, rest := b[:HeaderSize+tagSize], b[HeaderSize+tagSize:]
				var recs [][]byte
				for i := 0; len(rest) > 0; i++ {
					recs = append(recs, rest[:recLen(i)])
					rest = rest[recLen(i):]
				}
				stream := append([]byte(nil), head...)
				for _, r := range edit(recs) {
					stream = append(stream, r...)
				}
				r := bytes.NewReader(stream)
				if _, err := s.recv.readHeader(r); err != nil {
					t.Fatal(err)
				}
				into := dest()
				placed, err := s.recv.readData(r, n, into)
				var got []byte
				for _, p := range into {
					got = append(got, p...)
				}
				if en == "none" {
					if err != nil || placed != n || !bytes.Equal(got, data) {
						t.Fatalf("%s %s: placed %d, %v", mode, dn, placed, err)
					}
					continue
				}
				if !errors.Is(err, ErrFrameAuth) {
					t.Fatalf("%s: %s record opened into %s destination: placed %d, %v", mode, en, dn, placed, err)
				}
				if mode != ProtectAEAD {
					continue // the payload travels in the clear
				}
				lo := failsAt[en] * recordSize
				hi := min(lo+recordSize, n)
				same := 0
				for i := lo; i < hi; i++ {
					if got[i] == data[i] {
						same++
					}
				}
				if same > (hi-lo)/2 {
					t.Errorf("%s record into %s destination: %d of the failed record's %d bytes in the caller's slice are its plaintext", en, dn, same, hi-lo)
				}
			}
		}
	}
}
