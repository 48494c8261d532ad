package medic

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/pario/pario/wire"
)

// The transfer protocol runs over one TCP connection (optionally TLS) in
// pario's wire frames (wire.AppendFrame / wire.ReadFrame); its ops and
// their messages are in ops.go.

const (
	// protoVersion 2 added the offer's AckEvery (version 1 acknowledged
	// every 32 KiB whatever the container's size). A sender and a
	// receiver of different versions refuse each other at the hello,
	// naming both versions.
	protoVersion = 2
	nonceLen     = 32
	// maxPreAuthFrame bounds frames before authentication.
	maxPreAuthFrame = 4 << 10
	// DefaultWindow is how many bytes the sender keeps in flight beyond
	// the last acknowledgement.
	DefaultWindow = 8 << 20
	maxDataFrame  = 256 << 10
	// ProgressAck is the most bytes a receiver takes in before it
	// acknowledges, and the largest data frame a sender writes: a send
	// --auto measures the link from the acknowledgements of its first
	// bytes (0.6 s at 50 kB/s).
	ProgressAck = 32 << 10
	// MinAck is the fewest bytes a receiver takes in before it
	// acknowledges, whatever the sender asks (AckEvery).
	MinAck = 4 << 10
	// ackFraction: a sender asks for an acknowledgement every
	// 1/ackFraction of its container (AckEvery), so that a send --auto
	// bounds and measures the link from the first few percent of any
	// container, not only of those larger than a few ProgressAck.
	ackFraction = 16
)

// AckEvery is how many bytes of a transfer of n bytes the sender asks the
// receiver to take in between acknowledgements, and the largest data
// frame it writes: n/16, at least MinAck and at most ProgressAck. A
// container of 47 KiB (zstd's of a 0.21 MB BLAST report) is acknowledged
// every 4 KiB, one of 2 MiB every 32 KiB as before.
func AckEvery(n int64) int64 {
	return min(max(n/ackFraction, MinAck), ProgressAck)
}

// Kinds of errors a receiver answers, so that the sender can tell them
// apart (errors.Is on the returned error).
const (
	kindOther     = 0
	kindMissing   = 1
	kindIntegrity = 2
	kindAuth      = 3
	kindDigest    = 4 // the plugin could not reproduce the output
	kindTransit   = 5 // bytes changed between sender and receiver
	kindBusy      = 6 // at a connection limit: try again
)

// ErrBusy is a receiver's refusal of a connection past its connection
// limits (--max-conns, --max-conns-per-peer): a sender dials again for
// a while (Send, Ping and the link's measurement do).
var ErrBusy = errors.New("the receiver is busy")

// ErrAuth is a failed authentication: the two sides' key files differ.
var ErrAuth = errors.New("medic: authentication failed (sender and receiver use different key files?)")

// ErrIntegrity is a container or regenerated output that failed
// verification at the receiver.
var ErrIntegrity = errors.New("integrity check failed")

// ErrTransit is data that changed between sender and receiver: a frame
// that failed its check at the wire layer, or frames that each arrived
// intact but do not add up to the container the sender offered. It is an
// ErrIntegrity; the container itself is sound, so sending it again is
// the remedy.
var ErrTransit = errors.New("corrupted in transit")

// corruptFrame reports whether err, from reading a frame, means the frame
// arrived damaged (rather than the connection ending).
func corruptFrame(err error) bool {
	return errors.Is(err, wire.ErrHeaderCRC) || errors.Is(err, wire.ErrPayloadCRC) ||
		errors.Is(err, wire.ErrBadMagic) || errors.Is(err, syscall.EBADMSG)
}

// RemoteError is an error the receiver answered with.
type RemoteError struct {
	Msg  string
	kind uint8
}

func (e *RemoteError) Error() string { return "receiver: " + e.Msg }

// Is lets errors.Is match ErrMissing, ErrIntegrity (which includes
// ErrDigest and ErrTransit), ErrDigest, ErrTransit, ErrAuth and ErrBusy.
func (e *RemoteError) Is(target error) bool {
	switch target {
	case ErrMissing:
		return e.kind == kindMissing
	case ErrIntegrity:
		return e.kind == kindIntegrity || e.kind == kindDigest || e.kind == kindTransit
	case ErrDigest:
		return e.kind == kindDigest
	case ErrTransit:
		return e.kind == kindTransit
	case ErrAuth:
		return e.kind == kindAuth
	case ErrBusy:
		return e.kind == kindBusy
	}
	return false
}

func errKind(err error) uint8 {
	var ce *ChunkError
	switch {
	case errors.Is(err, ErrMissing):
		return kindMissing
	case errors.Is(err, ErrDigest):
		return kindDigest
	case errors.Is(err, ErrTransit):
		return kindTransit
	case errors.As(err, &ce), errors.Is(err, ErrFormat), errors.Is(err, ErrWrongKey), errors.Is(err, ErrNoKey), errors.Is(err, ErrIntegrity):
		return kindIntegrity
	case errors.Is(err, ErrAuth):
		return kindAuth
	case errors.Is(err, ErrBusy):
		return kindBusy
	}
	return kindOther
}

func encodeErr(err error) []byte {
	var e wire.Enc
	e.U8(errKind(err))
	e.String(err.Error())
	return e.Bytes()
}

func decodeErr(args []byte) error {
	d := wire.NewDec(args)
	k := d.U8("kind")
	m := d.String("message")
	if d.Err() != nil {
		return fmt.Errorf("receiver sent a malformed error: %v", d.Err())
	}
	return &RemoteError{Msg: m, kind: k}
}

func authKey(key []byte) []byte { return deriveKey(key, nil, "pario-medic auth v1") }

func authProof(key []byte, role string, sn, cn []byte) []byte {
	m := hmac.New(sha256.New, authKey(key))
	m.Write([]byte("pario-medic-auth-v1 " + role + "\x00"))
	m.Write(sn)
	m.Write(cn)
	return m.Sum(nil)
}

// writeFrame writes one frame of op carrying msg.
func writeFrame(w io.Writer, op wire.OpInfo, flags uint8, msg wire.Encoder) error {
	_, err := w.Write(wire.AppendFrame(nil, op.Code, flags, 0, encode(msg), nil))
	return err
}

// readFrame reads one frame, refusing sections larger than limit before
// reading them.
func readFrame(r io.Reader, limit uint32) (wire.Frame, error) {
	var hb [wire.HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return wire.Frame{}, err
	}
	h, err := wire.DecodeHeader(hb[:])
	if err != nil {
		return wire.Frame{}, err
	}
	if h.ArgLen+h.DataLen > limit {
		return wire.Frame{}, fmt.Errorf("%w: %d+%d bytes", wire.ErrFrameTooLarge, h.ArgLen, h.DataLen)
	}
	return wire.ReadFrame(io.MultiReader(bytes.NewReader(hb[:]), r))
}
