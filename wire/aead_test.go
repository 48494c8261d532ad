package wire

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// lowerRekey makes connections made from now on update their keys every n
// records, until the test ends.
func lowerRekey(t testing.TB, n uint64) {
	old := rekeyRecords
	rekeyRecords = n
	t.Cleanup(func() { rekeyRecords = old })
}

// Each direction's traffic secret is HKDF-SHA256 of the secret, salted
// with both nonces; its keys are 16 bytes (AES-128-GCM) expanded from it,
// and every RekeyRecords records the next traffic secret is expanded from
// the last (protocol version 5). A record sealed by a session is the one
// AES-128-GCM seals under the key of its epoch, with the record count as
// nonce, and no other.
func TestSessionKeys(t *testing.T) {
	const every = 2
	lowerRekey(t, every)
	sn, cn := bytes.Repeat([]byte{1}, nonceSize), bytes.Repeat([]byte{2}, nonceSize)
	expand := func(secret []byte, info string, n int) []byte {
		k, err := hkdf.Expand(sha256.New, secret, info, n)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		for _, client := range []bool{true, false} {
			s, err := newSession(testSecret, sn, cn, mode, client)
			if err != nil {
				t.Fatal(err)
			}
			dir := map[bool]string{true: "client to server", false: "server to client"}[client]
			ts, err := hkdf.Key(sha256.New, testSecret, append(append([]byte(nil), sn...), cn...), fmt.Sprintf("pario-wire-v%d %s %s", protocolVersion, mode, dir), 32)
			if err != nil {
				t.Fatal(err)
			}
			p := []byte("CONFIDENTIAL")
			for seq := range 3 * every {
				if seq > 0 && seq%every == 0 {
					ts = expand(ts, "pario-wire traffic upd", 32)
				}
				b, err := aes.NewCipher(expand(ts, "pario-wire key", 16))
				if err != nil {
					t.Fatal(err)
				}
				g, err := cipher.NewGCM(b)
				if err != nil {
					t.Fatal(err)
				}
				var nonce [12]byte
				nonce[4] = byte(seq)
				var want []byte
				if mode == ProtectAEAD {
					want = g.Seal(nil, nonce[:], p, nil)
				} else {
					want = g.Seal(append([]byte(nil), p...), nonce[:], nil, p)
				}
				got, err := s.send.seal(nil, p)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s, client %v, record %d: sealed %x, want %x (AES-128-GCM under key %d)", mode, client, seq, got, want, seq/every)
				}
			}
		}
	}
	if protocolVersion < 5 {
		t.Errorf("protocol version %d: key updates came with version 5", protocolVersion)
	}
}

// A connection whose keys change every few records, in both directions
// (requests and answers of many records, some split over several key
// changes), moves every byte as sent, in both modes.
func TestConnectionCrossesKeyUpdates(t *testing.T) {
	lowerRekey(t, 3)
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		s := startServer(t, &testHandler{}, ServerOptions{Protection: mode})
		e := NewEndpoint("rekey", s.Addr, testSecret, EndpointOptions{Protection: mode})
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range 40 {
			n := []int{0, 1, 100, recordSize, 3*recordSize + 17, 1 << 20}[rng.IntN(6)]
			args := []byte(fmt.Sprintf("call %d", i))
			data := pattern(n, byte(i))
			into := make([]byte, n)
			gotArgs, got, err := e.Call(ctx, opEcho, true, args, [][]byte{data}, [][]byte{into})
			if err != nil {
				t.Fatalf("%s, call %d of %d bytes: %v", mode, i, n, err)
			}
			if !bytes.Equal(gotArgs, args) || got != n || !bytes.Equal(into, data) {
				t.Fatalf("%s, call %d of %d bytes: echoed %q and %d bytes (equal: %v)", mode, i, n, gotArgs, got, bytes.Equal(into, data))
			}
		}
		e.Close()
	}
}

// A record sealed under a direction's old key after its switch point, with
// the right record number, is refused; the one sealed under the new key
// opens.
func TestOldKeyRefusedAfterUpdate(t *testing.T) {
	const every = 4
	lowerRekey(t, every)
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		c, s := sessionPair(t, mode)
		stale := *c.send
		stale.rekeyAt = math.MaxUint64 // keeps the first key
		for i := range every {
			rec, err := c.send.seal(nil, []byte("before"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.recv.open(make([]byte, len("before")), rec); err != nil {
				t.Fatalf("%s: record %d under the first key: %v", mode, i, err)
			}
		}
		stale.seq = every
		old, err := stale.seal(nil, []byte("after!"))
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := c.send.seal(nil, []byte("after!"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(old, fresh) {
			t.Fatalf("%s: record %d sealed alike under the old and the new key", mode, every)
		}
		recv := *s.recv
		if err := recv.open(make([]byte, len("after!")), old); !errors.Is(err, ErrFrameAuth) {
			t.Fatalf("%s: record %d under the old key: %v, want ErrFrameAuth", mode, every, err)
		}
		if err := s.recv.open(make([]byte, len("after!")), fresh); err != nil {
			t.Fatalf("%s: record %d under the new key: %v", mode, every, err)
		}
	}
}

// countWriter counts the writes a frame takes: each is a system call on a
// socket.
type countWriter struct {
	bytes.Buffer
	writes int
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// A sealed frame of up to 1 MiB leaves in one write, as the 256 KiB
// requests of a striped 1 MiB write do in the clear; larger ones in 1 MiB
// pieces. Each piece still opens to the frame sent.
func TestSealedFrameWrites(t *testing.T) {
	for _, tc := range []struct {
		data   int
		slices int
		writes int
	}{
		{0, 0, 1},
		{100, 1, 1},
		{256 << 10, 4, 1}, // 4 strips of 64 KiB: a striped request
		{1<<20 - 64<<10, 1, 1},
		{1 << 20, 1, 2},
		{4 << 20, 3, 5},
	} {
		c, s := sessionPair(t, ProtectAEAD)
		data := pattern(tc.data, 7)
		var slices [][]byte
		for i := range tc.slices {
			slices = append(slices, data[i*tc.data/tc.slices:(i+1)*tc.data/tc.slices])
		}
		args := []byte("args")
		var hb [HeaderSize]byte
		(&Header{Op: 1, ArgLen: uint32(len(args)), DataLen: uint32(tc.data)}).Encode(hb[:])
		var w countWriter
		if err := c.send.writeFrame(&w, hb[:], args, slices); err != nil {
			t.Fatal(err)
		}
		if w.writes != tc.writes {
			t.Errorf("%d bytes in %d slices: %d writes, want %d", tc.data, tc.slices, w.writes, tc.writes)
		}
		h, err := s.recv.readHeader(&w)
		if err != nil {
			t.Fatal(err)
		}
		gotArgs := make([]byte, h.ArgLen)
		if err := s.recv.readArgs(&w, gotArgs); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, h.DataLen)
		if _, err := s.recv.readData(&w, len(got), [][]byte{got}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotArgs, args) || !bytes.Equal(got, data) || w.Len() != 0 {
			t.Errorf("%d bytes: the frame did not open to what was sent", tc.data)
		}
	}
}

// BenchmarkProtectionStriped moves what one I/O server gets of a 1 MiB
// write or read striped over four servers at 64 KiB: frames of 256 KiB
// from (or into) four 64 KiB slices of the caller's buffer, one in four.
func BenchmarkProtectionStriped(b *testing.B) {
	const strip, servers = 64 << 10, 4
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		for _, dir := range []string{"write", "read"} {
			b.Run(mode.String()+"/"+dir, func(b *testing.B) {
				answer := pattern(servers*strip, 3)
				s := startServer(b, handlerFunc(func(_ context.Context, req *Request) (Response, error) {
					if req.Op == opData {
						return Response{Data: [][]byte{answer}}, nil
					}
					return Response{}, nil
				}), ServerOptions{Protection: mode})
				e := NewEndpoint("bench", s.Addr, testSecret, EndpointOptions{Protection: mode})
				defer e.Close()
				buf := pattern(servers*servers*strip, 4)
				var slices [][]byte
				for i := 0; i < len(buf); i += servers * strip {
					slices = append(slices, buf[i:i+strip])
				}
				ctx := context.Background()
				b.SetBytes(servers * strip)
				for b.Loop() {
					var err error
					if dir == "write" {
						_, _, err = e.Call(ctx, opEcho, true, nil, slices, nil)
					} else {
						_, _, err = e.Call(ctx, opData, true, nil, nil, slices)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkProtectionStore is the wire's share of a storebench run in one
// process: four ranks, each with its own connections to four I/O servers,
// write or read 1 MiB transfers striped at 64 KiB (a 256 KiB frame to each
// server at once). The servers copy what they get into a 64 MiB "file" of
// their own, and answer reads from it through a buffer, as a page cache
// would: unlike BenchmarkProtectionStriped, the frames in flight and the
// copies around them compete for the caches.
func BenchmarkProtectionStore(b *testing.B) {
	const strip, servers, ranks, fileSize = 64 << 10, 4, 4, 64 << 20
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		for _, dir := range []string{"write", "read"} {
			b.Run(mode.String()+"/"+dir, func(b *testing.B) {
				var eps [ranks][servers]*Endpoint
				for s := range servers {
					file := make([]byte, fileSize)
					var mu sync.Mutex
					at := 0
					ts := startServer(b, handlerFunc(func(_ context.Context, req *Request) (Response, error) {
						mu.Lock()
						off := at
						at = (at + servers*strip) % fileSize
						mu.Unlock()
						if req.Op == opData {
							buf := GetBuffer(servers * strip)
							copy(buf, file[off:])
							return Response{Data: [][]byte{buf}, Release: func() { PutBuffer(buf) }}, nil
						}
						copy(file[off:], req.Data)
						return Response{}, nil
					}), ServerOptions{Protection: mode})
					for r := range ranks {
						eps[r][s] = NewEndpoint("bench", ts.Addr, testSecret, EndpointOptions{Protection: mode})
						defer eps[r][s].Close()
					}
				}
				ctx := context.Background()
				var next atomic.Int64
				b.SetBytes(servers * servers * strip)
				b.ResetTimer()
				var rg sync.WaitGroup
				for r := range ranks {
					rg.Go(func() {
						buf := pattern(servers*servers*strip, byte(r))
						for next.Add(1) <= int64(b.N) {
							var wg sync.WaitGroup
							for s := range servers {
								var slices [][]byte
								for i := s * strip; i < len(buf); i += servers * strip {
									slices = append(slices, buf[i:i+strip])
								}
								wg.Go(func() {
									var err error
									if dir == "write" {
										_, _, err = eps[r][s].Call(ctx, opEcho, true, nil, slices, nil)
									} else {
										_, _, err = eps[r][s].Call(ctx, opData, true, nil, nil, slices)
									}
									if err != nil {
										b.Error(err)
									}
								})
							}
							wg.Wait()
						}
					})
				}
				rg.Wait()
			})
		}
	}
}

// A peer of an older protocol version is refused at its hello, both
// versions named, before any sealed frame: version 4 never updated keys,
// version 5 sent metadata requests without what the caller expects the
// path to resolve to.
func TestOlderPeerRefused(t *testing.T) {
	for _, v := range []uint8{4, 5} {
		a, b := net.Pipe()
		go func() {
			var e Enc
			e.U8(v)
			e.String("old")
			e.Blob(bytes.Repeat([]byte{1}, nonceSize))
			e.U8(uint8(ProtectAEAD))
			_ = writeFrame(b, opHello, 0, 0, e.Bytes())
		}()
		_, _, err := clientHandshake(a, "old", testSecret, ProtectAEAD)
		want := fmt.Sprintf("server speaks protocol version %d, this client %d", v, protocolVersion)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("handshake with a version %d server: %v, want a refusal naming both versions (%q)", v, err, want)
		}
		a.Close()
		b.Close()
	}
}
