package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Enc appends the fields of an argument section. The zero value is ready.
type Enc struct{ b []byte }

// Bytes returns the encoded arguments.
func (e *Enc) Bytes() []byte { return e.b }

// U8 appends one byte.
func (e *Enc) U8(v uint8) { e.b = append(e.b, v) }

// Bool appends a boolean as one byte.
func (e *Enc) Bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// U32 appends a fixed 4-byte integer.
func (e *Enc) U32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }

// U64 appends a fixed 8-byte integer.
func (e *Enc) U64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }

// I64 appends a signed 8-byte integer.
func (e *Enc) I64(v int64) { e.U64(uint64(v)) }

// Uvarint appends a variable-length unsigned integer.
func (e *Enc) Uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

// String appends a length-prefixed string.
func (e *Enc) String(s string) {
	e.Uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// Blob appends a length-prefixed byte slice.
func (e *Enc) Blob(p []byte) {
	e.Uvarint(uint64(len(p)))
	e.b = append(e.b, p...)
}

// Dec reads the fields of an argument section. The first failure sticks:
// later reads return zero values and Err reports the first field that was
// missing or malformed, by name, so a decoder can read every field and
// check once.
type Dec struct {
	b   []byte
	off int
	err error
}

// NewDec returns a decoder over b.
func NewDec(b []byte) *Dec { return &Dec{b: b} }

// Err returns the first decoding error, naming the field.
func (d *Dec) Err() error { return d.err }

// Done returns the first decoding error, or an error if bytes are left over:
// a well-formed section is consumed exactly.
func (d *Dec) Done() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("wire: %d unexpected trailing bytes after the last field", len(d.b)-d.off)
	}
	return d.err
}

func (d *Dec) fail(field, what string) {
	if d.err == nil {
		d.err = fmt.Errorf("wire: field %q at byte %d: %s: %w", field, d.off, what, io.ErrUnexpectedEOF)
	}
}

// Fail records err as the failure of field, unless an earlier one is
// recorded: for checks beyond the encoding (a layout that does not parse).
func (d *Dec) Fail(field string, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("wire: field %q at byte %d: %w", field, d.off, err)
	}
}

func (d *Dec) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b)-d.off < n {
		d.fail(field, fmt.Sprintf("need %d bytes, have %d", n, len(d.b)-d.off))
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

// U8 reads one byte.
func (d *Dec) U8(field string) uint8 {
	if p := d.take(field, 1); p != nil {
		return p[0]
	}
	return 0
}

// Bool reads a boolean; any byte other than 0 or 1 is an error.
func (d *Dec) Bool(field string) bool {
	v := d.U8(field)
	if v > 1 && d.err == nil {
		d.err = fmt.Errorf("wire: field %q: boolean byte %d is neither 0 nor 1", field, v)
	}
	return v == 1
}

// U32 reads a fixed 4-byte integer.
func (d *Dec) U32(field string) uint32 {
	if p := d.take(field, 4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// U64 reads a fixed 8-byte integer.
func (d *Dec) U64(field string) uint64 {
	if p := d.take(field, 8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// I64 reads a signed 8-byte integer.
func (d *Dec) I64(field string) int64 { return int64(d.U64(field)) }

// Offset reads a signed 8-byte integer that must not be negative (offsets,
// sizes, lengths), so handlers never see a negative one.
func (d *Dec) Offset(field string) int64 {
	v := d.I64(field)
	if v < 0 && d.err == nil {
		d.err = fmt.Errorf("wire: field %q: negative value %d", field, v)
	}
	return v
}

// Uvarint reads a variable-length unsigned integer.
func (d *Dec) Uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(field, "malformed varint")
		return 0
	}
	d.off += n
	return v
}

// Int reads a varint that must fit in a non-negative int no larger than max.
func (d *Dec) Int(field string, max int) int {
	v := d.Uvarint(field)
	if d.err == nil && v > uint64(max) {
		d.err = fmt.Errorf("wire: field %q: value %d exceeds limit %d", field, v, max)
		return 0
	}
	if v > math.MaxInt {
		return 0
	}
	return int(v)
}

// String reads a length-prefixed string.
func (d *Dec) String(field string) string {
	n := d.Int(field, len(d.b))
	return string(d.take(field, n))
}

// Blob reads a length-prefixed byte slice; the result aliases the section.
func (d *Dec) Blob(field string) []byte {
	n := d.Int(field, len(d.b))
	return d.take(field, n)
}
