package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Seeds shared by the frame fuzzers; the committed corpora under
// testdata/fuzz hold more.
func frameSeeds() [][]byte {
	good := AppendFrame(nil, 1, 0, 7, []byte("args"), [][]byte{[]byte("data")})
	two := AppendFrame(append([]byte(nil), good...), 2, FlagResponse|FlagError, 8, encodeError(errors.New("x")), nil)
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	var big [HeaderSize]byte
	(&Header{DataLen: MaxDataLen + 1}).Encode(big[:])
	return [][]byte{nil, good, two, badCRC, good[:HeaderSize], good[:HeaderSize+2], big[:], []byte("PR")}
}

func FuzzReadFrame(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		fr, err := ReadFrame(r)
		consumed := b[:len(b)-r.Len()]
		if err != nil {
			if errors.Is(err, ErrPayloadCRC) && len(consumed) != HeaderSize+int(fr.ArgLen)+int(fr.DataLen) {
				t.Fatalf("payload error without consuming the frame: %d bytes read", len(consumed))
			}
			return
		}
		if fr.ArgLen > MaxArgLen || fr.DataLen > MaxDataLen || len(fr.Args) != int(fr.ArgLen) || len(fr.Data) != int(fr.DataLen) {
			t.Fatalf("inconsistent frame %+v with %d+%d bytes", fr.Header, len(fr.Args), len(fr.Data))
		}
		again := AppendFrame(nil, fr.Op, fr.Flags, fr.ReqID, fr.Args, [][]byte{fr.Data})
		if !bytes.Equal(again, consumed) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", again, consumed)
		}
	})
}

func FuzzDecodeHeader(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			if h != (Header{}) {
				t.Fatalf("error %v with a header %+v", err, h)
			}
			return
		}
		if h.ArgLen > MaxArgLen || h.DataLen > MaxDataLen {
			t.Fatalf("accepted oversized %+v", h)
		}
		var again [HeaderSize]byte
		h.Encode(again[:])
		if !bytes.Equal(again[:], b[:HeaderSize]) {
			t.Fatalf("re-encoded header differs:\n got %x\nwant %x", again, b[:HeaderSize])
		}
	})
}

// decodeFields reads b as the sequence of fields that prog names, one
// field per byte of prog.
func decodeFields(prog, b []byte) ([]any, *Dec) {
	d := NewDec(b)
	var vals []any
	for i, op := range prog {
		field := "f" + string(rune('a'+i%26))
		switch op % 10 {
		case 0:
			vals = append(vals, d.U8(field))
		case 1:
			vals = append(vals, d.Bool(field))
		case 2:
			vals = append(vals, d.U32(field))
		case 3:
			vals = append(vals, d.U64(field))
		case 4:
			vals = append(vals, d.I64(field))
		case 5:
			vals = append(vals, d.Offset(field))
		case 6:
			vals = append(vals, d.Uvarint(field))
		case 7:
			vals = append(vals, d.Int(field, int(op)*1000))
		case 8:
			vals = append(vals, d.String(field))
		case 9:
			vals = append(vals, append([]byte{}, d.Blob(field)...))
		}
	}
	return vals, d
}

func encodeFields(prog []byte, vals []any) []byte {
	var e Enc
	for i, op := range prog {
		switch v := vals[i]; op % 10 {
		case 0:
			e.U8(v.(uint8))
		case 1:
			e.Bool(v.(bool))
		case 2:
			e.U32(v.(uint32))
		case 3:
			e.U64(v.(uint64))
		case 4, 5:
			e.I64(v.(int64))
		case 6:
			e.Uvarint(v.(uint64))
		case 7:
			e.Uvarint(uint64(v.(int)))
		case 8:
			e.String(v.(string))
		case 9:
			e.Blob(v.([]byte))
		}
	}
	return e.Bytes()
}

func FuzzDec(f *testing.F) {
	var e Enc
	e.U8(1)
	e.Bool(true)
	e.U32(3)
	e.U64(4)
	e.I64(-5)
	e.I64(6)
	e.Uvarint(1 << 50)
	e.Uvarint(7)
	e.String("eight")
	e.Blob([]byte("nine"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, e.Bytes())
	f.Add([]byte{9, 9, 8}, []byte{2, 'a', 'b', 0x80, 0x00, 1, 'c'})
	f.Add([]byte{6}, bytes.Repeat([]byte{0xff}, 11))
	f.Add([]byte{1, 5, 7}, []byte{2, 0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, prog, b []byte) {
		vals, d := decodeFields(prog, b)
		err := d.Done()
		if err != nil {
			if !strings.HasPrefix(err.Error(), "wire: ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		// What decoded cleanly re-encodes to something that decodes to the
		// same values (not necessarily the same bytes: varints may be
		// written longer than needed).
		again := encodeFields(prog, vals)
		if len(again) > len(b) {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(b), len(again))
		}
		vals2, d2 := decodeFields(prog, again)
		if err := d2.Done(); err != nil {
			t.Fatalf("re-encoded fields do not decode: %v", err)
		}
		if !reflect.DeepEqual(vals, vals2) {
			t.Fatalf("values changed: %v != %v", vals, vals2)
		}
	})
}

// fuzzHandler is a quick service for FuzzServerConn: nothing blocks.
func fuzzHandler(ctx context.Context, req *Request) (Response, error) {
	switch req.Op {
	case opEcho:
		return Response{Args: append([]byte(nil), req.Args...), Data: [][]byte{append([]byte(nil), req.Data...)}}, nil
	case opErrno:
		return Response{}, io.ErrUnexpectedEOF
	case opPanic:
		panic("fuzz panic")
	case opData:
		d := NewDec(req.Args)
		n := d.Int("n", 1<<16)
		if err := d.Done(); err != nil {
			return Response{}, err
		}
		return Response{Data: [][]byte{make([]byte, n)}}, nil
	case opSlow:
		time.Sleep(time.Millisecond)
		return Response{}, nil
	}
	return Response{Args: []byte{req.Op}}, nil
}

// fixFrames makes the fuzzer's bytes into a run of frames with valid
// headers (lengths cut to what follows) and, if payload is set, valid
// payload checksums, so that it explores what lies past the checks.
func fixFrames(b []byte, payload bool) {
	for len(b) >= HeaderSize {
		binary.LittleEndian.PutUint16(b, magic)
		rest := uint32(len(b) - HeaderSize)
		al := binary.LittleEndian.Uint32(b[12:]) % (rest + 1)
		dl := binary.LittleEndian.Uint32(b[16:]) % (rest - al + 1)
		binary.LittleEndian.PutUint32(b[12:], al)
		binary.LittleEndian.PutUint32(b[16:], dl)
		body := b[HeaderSize : HeaderSize+al+dl]
		if payload {
			binary.LittleEndian.PutUint32(b[20:], Checksum(body, nil))
		}
		reseal(b)
		b = b[HeaderSize+len(body):]
	}
}

// FuzzServerConn feeds arbitrary bytes to a server connection after a
// valid handshake. The server must not panic or hang, and whatever it
// answers must be well-formed response frames. The first byte picks a
// mode: bit 0 repairs frame headers, bit 1 also payload checksums.
func FuzzServerConn(f *testing.F) {
	var e Enc
	e.Uvarint(100)
	stream := AppendFrame(nil, opEcho, 0, 1, []byte("args"), [][]byte{[]byte("data")})
	stream = AppendFrame(stream, opData, 0, 2, e.Bytes(), nil)
	stream = AppendFrame(stream, opPanic, 0, 3, nil, nil)
	stream = AppendFrame(stream, opErrno, 0, 4, nil, nil)
	stream = AppendFrame(stream, opSlow, 0, 5, nil, nil)
	stream = AppendFrame(stream, 0xf1, FlagResponse, 6, nil, nil)
	f.Add(append([]byte{0}, stream...))
	f.Add(append([]byte{3}, stream...))
	corrupt := append([]byte{0}, stream...)
	corrupt[HeaderSize+3] ^= 1
	f.Add(corrupt)
	f.Add(append([]byte{1}, stream[:HeaderSize+3]...))
	f.Add([]byte{3, 0, 0, 1})

	s := NewServer(handlerFunc(fuzzHandler), ServerOptions{Name: "fuzz", Secret: testSecret, MaxInFlight: 4, MemoryBudget: 1 << 20, Logger: quietLogger()})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		mode, in := in[0], append([]byte(nil), in[1:]...)
		if mode&1 != 0 {
			fixFrames(in, mode&2 != 0)
		}
		cli, srv := net.Pipe()
		served := make(chan struct{})
		go func() {
			defer close(served)
			pass := s.gate.Admit(srv).Pass
			defer pass.Done()
			s.serveConn(context.Background(), srv, pass)
		}()
		_, sess, err := clientHandshake(cli, "fuzz", testSecret, ProtectAEAD)
		if err != nil {
			t.Fatal(err)
		}
		// The input is plain frames, sealed on their way as the client
		// would: this fuzzes what the server does with authenticated
		// frames (FuzzOpenFrame fuzzes the records themselves).
		sc := newSealedConn(cli, sess)
		answers := make(chan error, 1)
		go func() {
			for {
				fr, err := ReadFrame(sc)
				if err != nil {
					if errors.Is(err, ErrBadMagic) || errors.Is(err, ErrHeaderCRC) || errors.Is(err, ErrPayloadCRC) || errors.Is(err, ErrFrameTooLarge) {
						answers <- err
					} else {
						answers <- nil
					}
					return
				}
				if fr.Flags&FlagResponse == 0 {
					answers <- errors.New("server sent a frame that is not a response")
					return
				}
			}
		}()
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			sc.Write(in) // fails once the server hangs up
			cli.Close()
		}()
		timeout := time.NewTimer(10 * time.Second)
		defer timeout.Stop()
		for _, c := range []chan struct{}{wrote, served} {
			select {
			case <-c:
			case <-timeout.C:
				buf := make([]byte, 1<<20)
				t.Fatalf("server connection stuck:\n%s", buf[:runtime.Stack(buf, true)])
			}
		}
		if err := <-answers; err != nil {
			t.Fatalf("malformed answer: %v", err)
		}
	})
}
