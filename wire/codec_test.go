package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func encodeAll() []byte {
	var e Enc
	e.U8(0xab)
	e.Bool(true)
	e.Bool(false)
	e.U32(0xdeadbeef)
	e.U64(1<<64 - 1)
	e.I64(-5)
	e.I64(math.MinInt64)
	e.Uvarint(300)
	e.Uvarint(1<<64 - 1)
	e.String("héllo")
	e.String("")
	e.Blob([]byte{0, 1, 2})
	e.Blob(nil)
	e.I64(1 << 40) // read as Offset
	e.Uvarint(17)  // read as Int
	return e.Bytes()
}

func TestCodecRoundTrip(t *testing.T) {
	d := NewDec(encodeAll())
	if v := d.U8("u8"); v != 0xab {
		t.Fatalf("u8 %x", v)
	}
	if !d.Bool("t") || d.Bool("f") {
		t.Fatal("bools")
	}
	if v := d.U32("u32"); v != 0xdeadbeef {
		t.Fatalf("u32 %x", v)
	}
	if v := d.U64("u64"); v != 1<<64-1 {
		t.Fatalf("u64 %x", v)
	}
	if v := d.I64("i64"); v != -5 {
		t.Fatalf("i64 %d", v)
	}
	if v := d.I64("min"); v != math.MinInt64 {
		t.Fatalf("i64 %d", v)
	}
	if v := d.Uvarint("v1"); v != 300 {
		t.Fatalf("uvarint %d", v)
	}
	if v := d.Uvarint("v2"); v != 1<<64-1 {
		t.Fatalf("uvarint %d", v)
	}
	if v := d.String("s"); v != "héllo" {
		t.Fatalf("string %q", v)
	}
	if v := d.String("empty"); v != "" {
		t.Fatalf("string %q", v)
	}
	if v := d.Blob("b"); !bytes.Equal(v, []byte{0, 1, 2}) {
		t.Fatalf("blob %v", v)
	}
	if v := d.Blob("nil"); len(v) != 0 {
		t.Fatalf("blob %v", v)
	}
	if v := d.Offset("off"); v != 1<<40 {
		t.Fatalf("offset %d", v)
	}
	if v := d.Int("int", 17); v != 17 {
		t.Fatalf("int %d", v)
	}
	if err := d.Done(); err != nil {
		t.Fatal(err)
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestDecEmpty(t *testing.T) {
	if err := NewDec(nil).Done(); err != nil {
		t.Fatal(err)
	}
	var e Enc
	if len(e.Bytes()) != 0 {
		t.Fatal("zero Enc not empty")
	}
}

// Every truncation of a well-formed section fails, naming the first field
// that could not be read, and the error sticks.
func TestDecTruncated(t *testing.T) {
	var e Enc
	e.U8(1)
	e.U32(2)
	e.U64(3)
	e.String("four")
	e.Blob([]byte("five"))
	e.Uvarint(1 << 40)
	b := e.Bytes()
	// field boundaries: u8 [0,1) u32 [1,5) u64 [5,13) string [13,18) blob [18,23) varint [23,29)
	fieldAt := func(n int) string {
		switch {
		case n < 1:
			return "a"
		case n < 5:
			return "b"
		case n < 13:
			return "c"
		case n < 18:
			return "d"
		case n < 23:
			return "e"
		default:
			return "f"
		}
	}
	for n := range len(b) {
		d := NewDec(b[:n])
		d.U8("a")
		d.U32("b")
		d.U64("c")
		d.String("d")
		d.Blob("e")
		d.Uvarint("f")
		err := d.Err()
		if err == nil {
			t.Fatalf("truncated at %d: no error", n)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated at %d: %v, want ErrUnexpectedEOF", n, err)
		}
		if want := `field "` + fieldAt(n) + `"`; !strings.Contains(err.Error(), want) {
			t.Fatalf("truncated at %d: %q does not name %s", n, err, want)
		}
		if d.Done() != err {
			t.Fatalf("truncated at %d: Done returned a different error", n)
		}
		// Later reads return zero values and keep the first error.
		if d.U64("later") != 0 || d.String("later") != "" || d.Blob("later") != nil || d.Err() != err {
			t.Fatalf("truncated at %d: the first error did not stick", n)
		}
	}
}

func TestDecDoneTrailing(t *testing.T) {
	d := NewDec([]byte{1, 2, 3})
	d.U8("x")
	err := d.Done()
	if err == nil || !strings.Contains(err.Error(), "2 unexpected trailing bytes") {
		t.Fatalf("Done: %v", err)
	}
	if d.Err() != err {
		t.Fatal("Done's error did not stick")
	}
}

func TestDecOffset(t *testing.T) {
	for _, v := range []int64{-1, math.MinInt64} {
		var e Enc
		e.I64(v)
		d := NewDec(e.Bytes())
		d.Offset("offset")
		if err := d.Done(); err == nil || !strings.Contains(err.Error(), `"offset"`) || !strings.Contains(err.Error(), "negative") {
			t.Fatalf("%d: %v", v, err)
		}
	}
	var e Enc
	e.I64(0)
	e.I64(math.MaxInt64)
	d := NewDec(e.Bytes())
	if d.Offset("a") != 0 || d.Offset("b") != math.MaxInt64 || d.Done() != nil {
		t.Fatal(d.Err())
	}
}

func TestDecInt(t *testing.T) {
	for _, tc := range []struct {
		v   uint64
		max int
		ok  bool
	}{
		{0, 0, true}, {5, 5, true}, {6, 5, false}, {1 << 63, math.MaxInt, false},
		{1<<64 - 1, math.MaxInt, false}, {math.MaxInt, math.MaxInt, true},
	} {
		var e Enc
		e.Uvarint(tc.v)
		d := NewDec(e.Bytes())
		got := d.Int("count", tc.max)
		err := d.Done()
		if tc.ok {
			if err != nil || got != int(tc.v) {
				t.Fatalf("%d (max %d): %d, %v", tc.v, tc.max, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), `"count"`) || !strings.Contains(err.Error(), "exceeds limit") {
			t.Fatalf("%d (max %d): %v", tc.v, tc.max, err)
		}
		if got != 0 {
			t.Fatalf("%d (max %d): over-limit value returned as %d", tc.v, tc.max, got)
		}
	}
}

func TestDecBool(t *testing.T) {
	for b := range 256 {
		d := NewDec([]byte{byte(b)})
		v := d.Bool("flag")
		err := d.Done()
		switch {
		case b <= 1:
			if err != nil || v != (b == 1) {
				t.Fatalf("byte %d: %v, %v", b, v, err)
			}
		case err == nil || !strings.Contains(err.Error(), `"flag"`):
			t.Fatalf("byte %d accepted as a boolean: %v", b, err)
		}
	}
}

func TestDecMalformedVarint(t *testing.T) {
	// Eleven continuation bytes overflow a uint64.
	b := bytes.Repeat([]byte{0xff}, 11)
	d := NewDec(b)
	d.Uvarint("v")
	if err := d.Err(); err == nil || !strings.Contains(err.Error(), `"v"`) {
		t.Fatalf("overflowing varint: %v", err)
	}
}

// A length prefix larger than what is left never allocates or panics.
func TestDecHugeLength(t *testing.T) {
	var e Enc
	e.Uvarint(1<<64 - 1)
	for _, read := range []func(*Dec){
		func(d *Dec) { d.String("s") },
		func(d *Dec) { d.Blob("b") },
	} {
		d := NewDec(e.Bytes())
		read(d)
		if d.Err() == nil {
			t.Fatal("huge length accepted")
		}
	}
	var e2 Enc
	e2.Uvarint(4)
	e2.U8(1)
	d := NewDec(e2.Bytes())
	if s := d.String("s"); s != "" || d.Err() == nil || !strings.Contains(d.Err().Error(), `"s"`) {
		t.Fatalf("short string: %q, %v", s, d.Err())
	}
}
