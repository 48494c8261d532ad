package wire

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// The keys of each direction are HKDF-SHA256 of the secret, salted with
// both nonces, and 16 bytes long (AES-128-GCM, protocol version 4): a
// record sealed by a session is the one AES-128-GCM seals under that key,
// with the record count as nonce, and no other.
func TestSessionKeysAES128(t *testing.T) {
	sn, cn := bytes.Repeat([]byte{1}, nonceSize), bytes.Repeat([]byte{2}, nonceSize)
	for _, mode := range []Protection{ProtectAEAD, ProtectIntegrity} {
		for _, client := range []bool{true, false} {
			s, err := newSession(testSecret, sn, cn, mode, client)
			if err != nil {
				t.Fatal(err)
			}
			dir := map[bool]string{true: "client to server", false: "server to client"}[client]
			key, err := hkdf.Key(sha256.New, testSecret, append(append([]byte(nil), sn...), cn...), fmt.Sprintf("pario-wire-v%d %s %s", protocolVersion, mode, dir), 16)
			if err != nil {
				t.Fatal(err)
			}
			b, err := aes.NewCipher(key)
			if err != nil {
				t.Fatal(err)
			}
			g, err := cipher.NewGCM(b)
			if err != nil {
				t.Fatal(err)
			}
			p := []byte("CONFIDENTIAL")
			var want []byte
			for seq := range 3 {
				var nonce [12]byte
				nonce[4] = byte(seq)
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
					t.Errorf("%s, client %v, record %d: sealed %x, want %x (AES-128-GCM under the HKDF key)", mode, client, seq, got, want)
				}
			}
		}
	}
	if protocolVersion != 4 {
		t.Errorf("protocol version %d: AES-128 keys came with version 4", protocolVersion)
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
