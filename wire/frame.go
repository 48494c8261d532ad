// Package wire is pario's framed protocol between clients and servers:
// length-prefixed binary frames over TCP carrying a request id (so many
// requests can be in flight on one connection and answered out of order), a
// CRC32C of the header and (in the clear) another of the payload, a small
// argument section and a bulk data section. Bulk data is kept apart from
// the arguments so that it can be written from, and read into, the
// caller's own buffers with no extra copy.
//
// A connection starts with a mutual challenge-response on a shared secret
// (HMAC-SHA256); nothing else is accepted before it succeeds. After it,
// every frame travels sealed in numbered records under keys of that
// connection alone (see Protection and protect.go): the layout below is
// what the records carry.
//
// Frame layout (little endian, 28-byte header):
//
//	0  magic      uint16  0x5250 ("PR")
//	2  op         uint8   operation code, defined by each service
//	3  flags      uint8   FlagResponse, FlagError
//	4  reqID      uint64  chosen by the client, echoed by the server
//	12 argLen     uint32  length of the argument section
//	16 dataLen    uint32  length of the bulk data section
//	20 payloadCRC uint32  CRC32C of args then data
//	24 headerCRC  uint32  CRC32C of bytes 0..24
//
// A bad header CRC or an oversized length desynchronises the stream, so the
// connection is closed; a bad payload CRC fails only that request.
//
// Only the handshake's frames travel in the clear with their payload
// CRC32C. In the sealed frames after it the payloadCRC field is zero and
// not checked: the records' authentication tags cover every byte already.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// HeaderSize is the fixed size of a frame header in bytes.
const HeaderSize = 28

const magic = 0x5250

// Frame flags.
const (
	FlagResponse = 1 << 0 // the frame answers the request with the same id
	FlagError    = 1 << 1 // the response carries an error (errno + message)
)

// Limits on the sections of one frame. They bound what a peer can make us
// allocate: a frame announcing more is rejected before anything is read.
const (
	MaxArgLen  = 1 << 20  // 1 MiB of arguments
	MaxDataLen = 64 << 20 // 64 MiB of bulk data
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors a frame decoder returns. They are wrapped with detail; test with
// errors.Is.
var (
	ErrBadMagic      = errors.New("wire: bad magic (not a pario peer?)")
	ErrHeaderCRC     = errors.New("wire: header checksum mismatch")
	ErrPayloadCRC    = errors.New("wire: payload checksum mismatch")
	ErrFrameTooLarge = errors.New("wire: frame too large")
)

// Header is a decoded frame header.
type Header struct {
	Op         uint8
	Flags      uint8
	ReqID      uint64
	ArgLen     uint32
	DataLen    uint32
	PayloadCRC uint32
}

// Encode writes h into b (len(b) >= HeaderSize), computing the header CRC.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint16(b[0:], magic)
	b[2] = h.Op
	b[3] = h.Flags
	binary.LittleEndian.PutUint64(b[4:], h.ReqID)
	binary.LittleEndian.PutUint32(b[12:], h.ArgLen)
	binary.LittleEndian.PutUint32(b[16:], h.DataLen)
	binary.LittleEndian.PutUint32(b[20:], h.PayloadCRC)
	binary.LittleEndian.PutUint32(b[24:], crc32.Checksum(b[:24], castagnoli))
}

// DecodeHeader parses and checks a header. It validates the magic, the header
// checksum and the section limits, so a caller may trust the lengths.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("wire: header truncated: %d of %d bytes: %w", len(b), HeaderSize, io.ErrUnexpectedEOF)
	}
	if m := binary.LittleEndian.Uint16(b[0:]); m != magic {
		return Header{}, fmt.Errorf("%w: got 0x%04x", ErrBadMagic, m)
	}
	if got, want := binary.LittleEndian.Uint32(b[24:]), crc32.Checksum(b[:24], castagnoli); got != want {
		return Header{}, fmt.Errorf("%w: got 0x%08x, computed 0x%08x", ErrHeaderCRC, got, want)
	}
	h := Header{
		Op:         b[2],
		Flags:      b[3],
		ReqID:      binary.LittleEndian.Uint64(b[4:]),
		ArgLen:     binary.LittleEndian.Uint32(b[12:]),
		DataLen:    binary.LittleEndian.Uint32(b[16:]),
		PayloadCRC: binary.LittleEndian.Uint32(b[20:]),
	}
	if h.ArgLen > MaxArgLen {
		return Header{}, fmt.Errorf("%w: argument section of %d bytes exceeds %d", ErrFrameTooLarge, h.ArgLen, MaxArgLen)
	}
	if h.DataLen > MaxDataLen {
		return Header{}, fmt.Errorf("%w: data section of %d bytes exceeds %d", ErrFrameTooLarge, h.DataLen, MaxDataLen)
	}
	return h, nil
}

// Checksum returns the CRC32C of the args and data sections as one stream.
func Checksum(args []byte, data [][]byte) uint32 {
	c := crc32.Update(0, castagnoli, args)
	for _, d := range data {
		c = crc32.Update(c, castagnoli, d)
	}
	return c
}

// Frame is a whole frame held in memory: what ReadFrame returns.
type Frame struct {
	Header
	Args []byte
	Data []byte
}

// ReadFrame reads one frame from r into freshly allocated buffers, checking
// both checksums. A payload checksum mismatch is reported after the whole
// frame has been consumed, so the stream stays in step (the error wraps
// ErrPayloadCRC and the frame's header is returned with it).
//
// Servers use their own reader with pooled buffers; ReadFrame is for tests,
// tools and the fuzzer.
func ReadFrame(r io.Reader) (Frame, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return Frame{}, fmt.Errorf("wire: read header: %w", err)
	}
	h, err := DecodeHeader(hb[:])
	if err != nil {
		return Frame{}, err
	}
	f := Frame{Header: h, Args: make([]byte, h.ArgLen), Data: make([]byte, h.DataLen)}
	if _, err := io.ReadFull(r, f.Args); err != nil {
		return Frame{}, fmt.Errorf("wire: read %d-byte argument section: %w", h.ArgLen, noEOF(err))
	}
	if _, err := io.ReadFull(r, f.Data); err != nil {
		return Frame{}, fmt.Errorf("wire: read %d-byte data section: %w", h.DataLen, noEOF(err))
	}
	if c := Checksum(f.Args, [][]byte{f.Data}); c != h.PayloadCRC {
		return f, fmt.Errorf("%w: request %d op %d: got 0x%08x, computed 0x%08x", ErrPayloadCRC, h.ReqID, h.Op, h.PayloadCRC, c)
	}
	return f, nil
}

// AppendFrame appends an encoded frame to dst.
func AppendFrame(dst []byte, op, flags uint8, reqID uint64, args []byte, data [][]byte) []byte {
	h := Header{Op: op, Flags: flags, ReqID: reqID, ArgLen: uint32(len(args)), PayloadCRC: Checksum(args, data)}
	for _, d := range data {
		h.DataLen += uint32(len(d))
	}
	var hb [HeaderSize]byte
	h.Encode(hb[:])
	dst = append(dst, hb[:]...)
	dst = append(dst, args...)
	for _, d := range data {
		dst = append(dst, d...)
	}
	return dst
}

// noEOF turns a clean EOF in the middle of a frame into ErrUnexpectedEOF:
// a frame cut short is a truncated frame, not the end of a stream.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
