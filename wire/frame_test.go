package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		args []byte
		data [][]byte
	}{
		{"empty", nil, nil},
		{"args only", []byte("some arguments"), nil},
		{"data only", nil, [][]byte{[]byte("bulk")}},
		{"both", []byte{1, 2, 3}, [][]byte{[]byte("hello, "), nil, []byte("world"), {}}},
		{"large", pattern(70000, 3), [][]byte{pattern(300000, 5), pattern(12345, 9)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("prefix")
			b := AppendFrame(append([]byte(nil), prefix...), 0x42, FlagResponse, 0x0102030405060708, tc.args, tc.data)
			if !bytes.HasPrefix(b, prefix) {
				t.Fatal("AppendFrame clobbered dst")
			}
			b = b[len(prefix):]
			want := bytes.Join(tc.data, nil)
			if len(b) != HeaderSize+len(tc.args)+len(want) {
				t.Fatalf("frame of %d bytes, want %d", len(b), HeaderSize+len(tc.args)+len(want))
			}
			r := bytes.NewReader(b)
			f, err := ReadFrame(r)
			if err != nil {
				t.Fatal(err)
			}
			if r.Len() != 0 {
				t.Fatalf("%d bytes left unread", r.Len())
			}
			if f.Op != 0x42 || f.Flags != FlagResponse || f.ReqID != 0x0102030405060708 {
				t.Fatalf("header %+v", f.Header)
			}
			if f.ArgLen != uint32(len(tc.args)) || f.DataLen != uint32(len(want)) {
				t.Fatalf("lengths %d/%d", f.ArgLen, f.DataLen)
			}
			if !bytes.Equal(f.Args, tc.args) || !bytes.Equal(f.Data, want) {
				t.Fatal("payload differs")
			}
			if f.PayloadCRC != Checksum(tc.args, tc.data) {
				t.Fatal("payload CRC differs")
			}
			if f.PayloadCRC != Checksum(nil, [][]byte{tc.args, want}) {
				t.Fatal("Checksum depends on how the payload is split")
			}
		})
	}
}

func TestFrameSequence(t *testing.T) {
	var b []byte
	for i := range 10 {
		b = AppendFrame(b, uint8(i), 0, uint64(i), pattern(i*3, 1), [][]byte{pattern(i*100, 2)})
	}
	r := bytes.NewReader(b)
	for i := range 10 {
		f, err := ReadFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.ReqID != uint64(i) || len(f.Args) != i*3 || len(f.Data) != i*100 {
			t.Fatalf("frame %d: %+v", i, f.Header)
		}
	}
	if _, err := ReadFrame(r); !errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestHeaderEncodeDecode(t *testing.T) {
	h := Header{Op: 7, Flags: FlagResponse | FlagError, ReqID: 1<<64 - 1, ArgLen: MaxArgLen, DataLen: MaxDataLen, PayloadCRC: 0xdeadbeef}
	var b [HeaderSize]byte
	h.Encode(b[:])
	got, err := DecodeHeader(b[:])
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("got %+v, want %+v", got, h)
	}
	if binary.LittleEndian.Uint16(b[:]) != 0x5250 || string(b[:2]) != "PR" {
		t.Fatalf("magic bytes %q", b[:2])
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	good := AppendFrame(nil, 1, 0, 99, []byte("args"), [][]byte{[]byte("data")})[:HeaderSize]
	if _, err := DecodeHeader(good); err != nil {
		t.Fatal(err)
	}
	t.Run("bad magic", func(t *testing.T) {
		b := append([]byte(nil), good...)
		b[0] ^= 0xff
		if _, err := DecodeHeader(b); !errors.Is(err, ErrBadMagic) {
			t.Fatalf("got %v, want ErrBadMagic", err)
		}
	})
	t.Run("every header byte flipped", func(t *testing.T) {
		for i := range HeaderSize {
			for bit := range 8 {
				b := append([]byte(nil), good...)
				b[i] ^= 1 << bit
				_, err := DecodeHeader(b)
				if err == nil {
					t.Fatalf("byte %d bit %d flipped: accepted", i, bit)
				}
				if i >= 2 && !errors.Is(err, ErrHeaderCRC) {
					t.Fatalf("byte %d bit %d flipped: %v, want ErrHeaderCRC", i, bit, err)
				}
			}
		}
	})
	t.Run("truncated", func(t *testing.T) {
		for n := range HeaderSize {
			if _, err := DecodeHeader(good[:n]); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%d bytes: %v, want ErrUnexpectedEOF", n, err)
			}
		}
	})
	t.Run("oversized", func(t *testing.T) {
		for _, h := range []Header{
			{ArgLen: MaxArgLen + 1},
			{DataLen: MaxDataLen + 1},
			{ArgLen: 1<<32 - 1, DataLen: 1<<32 - 1},
		} {
			var b [HeaderSize]byte
			h.Encode(b[:])
			if _, err := DecodeHeader(b[:]); !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("%+v: %v, want ErrFrameTooLarge", h, err)
			}
		}
	})
}

// countingReader fails the test's expectations if anything beyond the
// header is read.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func TestReadFrameOversizedAllocatesNothing(t *testing.T) {
	for _, h := range []Header{{ArgLen: MaxArgLen + 1}, {DataLen: MaxDataLen + 1}, {DataLen: 1<<32 - 1}} {
		var hb [HeaderSize]byte
		h.Encode(hb[:])
		// Only the header is there: a decoder that went on to read the
		// sections would report ErrUnexpectedEOF instead.
		tail := &countingReader{r: bytes.NewReader(make([]byte, 1<<10))}
		r := io.MultiReader(bytes.NewReader(hb[:]), tail)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadFrame(r)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("%+v: %v, want ErrFrameTooLarge", h, err)
		}
		if tail.reads != 0 {
			t.Fatalf("%+v: read %d times past the header", h, tail.reads)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Fatalf("%+v: rejected frame allocated %d bytes", h, d)
		}
	}
}

func TestReadFrameTruncated(t *testing.T) {
	b := AppendFrame(nil, 3, 0, 5, []byte("arguments"), [][]byte{[]byte("bulk data section")})
	argEnd := HeaderSize + len("arguments")
	if _, err := ReadFrame(bytes.NewReader(nil)); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v", err)
	}
	for n := 1; n < len(b); n++ {
		_, err := ReadFrame(bytes.NewReader(b[:n]))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("frame cut at %d of %d bytes: %v, want ErrUnexpectedEOF", n, len(b), err)
		}
		var section string
		switch {
		case n < HeaderSize:
			section = "header"
		case n < argEnd:
			section = "argument"
		default:
			section = "data"
		}
		if !bytes.Contains([]byte(err.Error()), []byte(section)) {
			t.Fatalf("frame cut at %d: %q does not name the %s section", n, err, section)
		}
	}
}

func TestReadFramePayloadCRC(t *testing.T) {
	good := AppendFrame(nil, 3, 0, 5, []byte("arguments"), [][]byte{[]byte("bulk data section")})
	for i := HeaderSize; i < len(good); i++ {
		b := append([]byte(nil), good...)
		b[i] ^= 0x10
		// A second frame behind it must still be readable: the stream
		// stays in step after a payload error.
		b = AppendFrame(b, 4, 0, 6, nil, nil)
		r := bytes.NewReader(b)
		f, err := ReadFrame(r)
		if !errors.Is(err, ErrPayloadCRC) {
			t.Fatalf("payload byte %d flipped: %v, want ErrPayloadCRC", i, err)
		}
		if f.ReqID != 5 || f.Op != 3 {
			t.Fatalf("header not returned with the payload error: %+v", f.Header)
		}
		if f, err := ReadFrame(r); err != nil || f.ReqID != 6 {
			t.Fatalf("next frame: %+v, %v", f.Header, err)
		}
	}
	// A wrong payload CRC in an otherwise valid header.
	h, _ := DecodeHeader(good)
	h.PayloadCRC++
	b := append([]byte(nil), good...)
	h.Encode(b)
	if _, err := ReadFrame(bytes.NewReader(b)); !errors.Is(err, ErrPayloadCRC) {
		t.Fatalf("wrong payload CRC: %v", err)
	}
}

func TestReadFrameBadHeader(t *testing.T) {
	b := AppendFrame(nil, 3, 0, 5, nil, nil)
	b[5] ^= 1
	if _, err := ReadFrame(bytes.NewReader(b)); !errors.Is(err, ErrHeaderCRC) {
		t.Fatalf("%v, want ErrHeaderCRC", err)
	}
	b = []byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n")
	if _, err := ReadFrame(bytes.NewReader(b)); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("%v, want ErrBadMagic", err)
	}
}
