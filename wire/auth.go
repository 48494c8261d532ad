package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Operation codes 0xF0 and up belong to the connection itself; services
// number their operations below them.
const (
	opHello uint8 = 0xF0 // server -> client: version, server name, nonce
	opAuth  uint8 = 0xF1 // client -> server: client nonce, proof, mode; answered with the server's proof
	// opGoodbye (server -> client, sealed) says why the server closes the
	// connection: a request frame that did not authenticate.
	opGoodbye uint8 = 0xF2
)

// protocolVersion 2 added frame protection: the hello and auth frames
// carry the mode, and every frame after them is sealed. Version 3 dropped
// the payload CRC32C of sealed frames (the field is zero): the records'
// tags cover the payload. Version 4 derives AES-128 keys in place of
// AES-256 (see keySize) and changed metadata requests' layout
// (credentials end with the mount's watcher ID; remove and rename carry
// keep-data; a scan page lists pooled IDs and pending removals): a peer
// of another version is refused at the hello, naming both versions,
// rather than failing on its first sealed frame or request. Version 5
// derives each direction's keys from a traffic secret and updates them
// every RekeyRecords records. Version 6 changed metadata requests by
// path: they carry what the caller expects the path to resolve to
// (meta.Expect), before the credentials. Version 7 added the cluster
// incarnation to a datafile remove and to the metadata server's answer
// listing the I/O servers. Version 8 added the writer's origin to the I/O
// servers' write requests (data.WriteRequest.Origin). Version 9 added the
// server's name to the claim (data.ClaimRequest.Name).
const protocolVersion = 9

// HandshakeTimeout bounds how long either side waits for the handshake.
// It is a variable so that tests can shorten it.
var HandshakeTimeout = 10 * time.Second

// errEvicted ends the handshake of a connection whose place went to
// another (Gate) before it authenticated.
var errEvicted = errors.New("connection evicted before it authenticated: too many connections were in their handshake")

// ErrAuth reports a failed authentication (wrong or missing secret).
var ErrAuth = errors.New("authentication failed (wrong shared secret?)")

// ErrProtectionMismatch reports a peer configured for another wire
// protection mode: both ends must agree, and neither gives in.
var ErrProtectionMismatch = errors.New("wire protection mismatch")

const nonceSize = 32

// proof binds the mode too, so that a man in the middle cannot make the two
// ends agree on a weaker one.
func proof(secret []byte, role string, mode Protection, serverNonce, clientNonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("pario-auth-v2 " + role + " " + mode.String() + "\x00"))
	m.Write(serverNonce)
	m.Write(clientNonce)
	return m.Sum(nil)
}

// maxHandshakeArgLen bounds the frames of the handshake, which are small:
// before a peer has authenticated it must not make us allocate, or wait
// for, a frame of the sizes authenticated peers may send.
const maxHandshakeArgLen = 4 << 10

// readHandshakeFrame is ReadFrame for the handshake: it refuses a frame
// larger than a handshake frame can be before reading its sections.
func readHandshakeFrame(r io.Reader) (Frame, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return Frame{}, fmt.Errorf("wire: read header: %w", err)
	}
	h, err := DecodeHeader(hb[:])
	if err != nil {
		return Frame{}, err
	}
	if h.ArgLen > maxHandshakeArgLen || h.DataLen != 0 {
		return Frame{}, fmt.Errorf("%w: handshake frame of %d+%d bytes", ErrFrameTooLarge, h.ArgLen, h.DataLen)
	}
	return ReadFrame(io.MultiReader(bytes.NewReader(hb[:]), r))
}

func writeFrame(w io.Writer, op, flags uint8, reqID uint64, args []byte) error {
	_, err := w.Write(AppendFrame(nil, op, flags, reqID, args, nil))
	return err
}

// serverHandshake runs the server side: send a challenge, check the client's
// proof, prove we know the secret too. Both sides prove knowledge of the
// secret without sending it, and the nonces make each proof single-use.
//
// The deadline is absolute: a peer that trickles its bytes, or sends none,
// is dropped when it ends, and its descriptor is free again.
//
// It returns the connection's session: keys derived from the secret and
// both nonces, so that they differ for every connection.
func serverHandshake(nc net.Conn, name string, secret []byte, mode Protection, timeout time.Duration, admitted func() bool) (*session, error) {
	_ = nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	sn := make([]byte, nonceSize)
	if _, err := rand.Read(sn); err != nil {
		return nil, err
	}
	var e Enc
	e.U8(protocolVersion)
	e.String(name)
	e.Blob(sn)
	e.U8(uint8(mode | noMACBit))
	if err := writeFrame(nc, opHello, 0, 0, e.Bytes()); err != nil {
		return nil, fmt.Errorf("send hello: %w", err)
	}
	f, err := readHandshakeFrame(nc)
	if err != nil {
		return nil, fmt.Errorf("read auth: %w", err)
	}
	if f.Op != opAuth {
		return nil, fmt.Errorf("expected auth frame, got op 0x%02x", f.Op)
	}
	d := NewDec(f.Args)
	cn := d.Blob("client nonce")
	p := d.Blob("client proof")
	clientMode := Protection(d.U8("wire protection"))
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("auth frame: %w", err)
	}
	if clientMode != mode|noMACBit {
		err := fmt.Errorf("%w: the client uses wire-protection %s, server %s uses %s (give both the same wire-protection line in the cluster file): %w",
			ErrProtectionMismatch, clientMode, name, mode|noMACBit, syscall.EPROTO)
		_ = writeFrame(nc, opAuth, FlagResponse|FlagError, 0, encodeError(err))
		return nil, err
	}
	if len(cn) != nonceSize || !hmac.Equal(p, proof(secret, "client", mode, sn, cn)) {
		_ = writeFrame(nc, opAuth, FlagResponse|FlagError, 0, encodeError(fmt.Errorf("%w: %w", ErrAuth, syscall.EACCES)))
		return nil, ErrAuth
	}
	sess, err := newSession(secret, sn, cn, mode, false)
	if err != nil {
		return nil, err
	}
	// The connection leaves the unauthenticated pool before the client
	// hears that it is in, so that nothing evicts it after.
	if admitted != nil && !admitted() {
		return nil, errEvicted
	}
	var r Enc
	r.Blob(proof(secret, "server", mode, sn, cn))
	if err := writeFrame(nc, opAuth, FlagResponse, 0, r.Bytes()); err != nil {
		return nil, err
	}
	return sess, nil
}

// clientHandshake runs the client side and returns the server's name and
// the connection's session.
func clientHandshake(nc net.Conn, server string, secret []byte, mode Protection) (string, *session, error) {
	_ = nc.SetDeadline(time.Now().Add(HandshakeTimeout))
	defer nc.SetDeadline(time.Time{})
	f, err := readHandshakeFrame(nc)
	if err != nil {
		return "", nil, fmt.Errorf("read hello: %w", err)
	}
	if f.Op == opHello && f.Flags&FlagError != 0 {
		// The server refused the connection (too many connections, or
		// evicted before the hello was out) and says why in place of its
		// hello.
		return "", nil, fmt.Errorf("server refused the connection: %w", decodeError(server, f.Args))
	}
	if f.Op != opHello {
		return "", nil, fmt.Errorf("expected hello frame, got op 0x%02x", f.Op)
	}
	d := NewDec(f.Args)
	version := d.U8("version")
	if version != protocolVersion {
		return "", nil, fmt.Errorf("server speaks protocol version %d, this client %d", version, protocolVersion)
	}
	name := d.String("server name")
	sn := d.Blob("server nonce")
	serverMode := Protection(d.U8("wire protection"))
	if err := d.Done(); err != nil {
		return "", nil, fmt.Errorf("hello frame: %w", err)
	}
	if len(sn) != nonceSize {
		return "", nil, fmt.Errorf("hello frame: nonce of %d bytes, want %d", len(sn), nonceSize)
	}
	if serverMode != mode|noMACBit {
		return "", nil, fmt.Errorf("%w: server %s uses wire-protection %s, this client %s (give both the same wire-protection line in the cluster file)",
			ErrProtectionMismatch, name, serverMode, mode|noMACBit)
	}
	cn := make([]byte, nonceSize)
	if _, err := rand.Read(cn); err != nil {
		return "", nil, err
	}
	var e Enc
	e.Blob(cn)
	e.Blob(proof(secret, "client", mode, sn, cn))
	e.U8(uint8(mode | noMACBit))
	if err := writeFrame(nc, opAuth, 0, 0, e.Bytes()); err != nil {
		return "", nil, fmt.Errorf("send auth: %w", err)
	}
	f, err = readHandshakeFrame(nc)
	if err != nil {
		return "", nil, fmt.Errorf("read auth reply: %w", err)
	}
	if f.Flags&FlagError != 0 {
		rerr := decodeError(server, f.Args)
		switch {
		case errors.Is(rerr, syscall.EPROTO):
			return "", nil, fmt.Errorf("%w: %w", ErrProtectionMismatch, rerr)
		case errors.Is(rerr, syscall.EAGAIN):
			// Evicted before it authenticated, to admit another (Gate),
			// and told so as a refusal at a cap is: dial again.
			return "", nil, fmt.Errorf("server refused the connection: %w", rerr)
		}
		// The other error a server answers a handshake with is a refused
		// proof; say so in terms the user can act on.
		return "", nil, fmt.Errorf("%w: the server refused this client's proof", ErrAuth)
	}
	d = NewDec(f.Args)
	sp := d.Blob("server proof")
	if err := d.Done(); err != nil {
		return "", nil, fmt.Errorf("auth reply: %w", err)
	}
	if !hmac.Equal(sp, proof(secret, "server", mode, sn, cn)) {
		return "", nil, fmt.Errorf("%w: the server could not prove it knows the secret", ErrAuth)
	}
	sess, err := newSession(secret, sn, cn, mode, true)
	if err != nil {
		return "", nil, err
	}
	return name, sess, nil
}
