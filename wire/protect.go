package wire

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
)

// Protection is what a connection does to its frames after the handshake.
// Both modes authenticate every frame with a key that belongs to one
// connection and one direction, and number the frames, so that a frame
// changed, replayed, dropped or moved on the way is detected and the
// connection closed. Both ends must use the same mode.
type Protection uint8

const (
	// ProtectAEAD encrypts and authenticates every frame (AES-128-GCM).
	// It is the default: the zero value.
	ProtectAEAD Protection = iota
	// ProtectIntegrity authenticates every frame (GMAC: AES-128-GCM with
	// the frame as additional data) but sends it in the clear, for
	// networks whose eavesdroppers the operator trusts.
	ProtectIntegrity
)

func (p Protection) String() string {
	switch p {
	case ProtectAEAD:
		return "aead"
	case ProtectIntegrity:
		return "integrity"
	}
	if p&0x80 != 0 && p&^0x80 <= ProtectIntegrity {
		// wire/nomac.go: its integrity mode authenticates nothing.
		return (p &^ 0x80).String() + " of a wirenomac benchmark build"
	}
	return fmt.Sprintf("protection(%d)", uint8(p))
}

// ParseProtection parses the name of a mode, as a cluster file gives it.
func ParseProtection(s string) (Protection, error) {
	switch s {
	case "aead":
		return ProtectAEAD, nil
	case "integrity":
		return ProtectIntegrity, nil
	}
	return 0, fmt.Errorf("wire protection %q: want aead or integrity", s)
}

// ErrFrameAuth reports a frame that did not authenticate: changed on the
// way, replayed, dropped, reordered, or sealed with other keys. The
// connection it arrived on is closed.
var ErrFrameAuth = errors.New("wire: frame authentication failed (frame changed, replayed, dropped or reordered on the way)")

// keySize is the AES key length of each direction: AES-128, as in TLS 1.3's
// mandatory suite (TLS_AES_128_GCM_SHA256). Its 10 rounds against
// AES-256's 14 make sealing and opening about a fifth cheaper, and on
// a host whose clients and servers share the CPU every byte pays for both
// (protocol version 4; version 3 used 32-byte keys). The keys are fresh
// per connection and direction; GCM's bound on the data one key may seal
// comes from its 128-bit block, the same for both key sizes.
const keySize = 16

// A protected frame travels as records, each its payload then a 16-byte
// GCM tag (in ProtectAEAD the payload is encrypted): the 28-byte header,
// then the argument section (one record, if not empty), then the data
// section in records of recordSize bytes (the last one shorter). The header
// record comes first and alone so that the receiver learns the lengths, and
// can bound what it reads and allocates, only from an authenticated header;
// the data section is cut into records so that neither side needs a buffer
// of a whole 64 MiB frame. Each record's nonce is the number of records
// sent before it in that direction: a record out of place fails to open.
//
// The header's payload CRC32C field is zero and not checked: the tags
// already authenticate every byte of the payload, and a second pass over
// it cost as much CPU as the cipher (protocol version 3). The header's own
// CRC32C stays, as part of the header record.
//
// A connection holds, besides the request and answer data its server
// counts in the memory budget: its read buffer (readBufSize; small, so
// that records larger than it are read past it, straight into place), one
// record's scratch buffer while it reads a data section whose last record
// has no room for its tag in the destination, and the sealing buffer while
// it writes a frame (larger only for an argument section larger than it).
// The server counts these in its budget too (see writeMemory, readMemory).
//
// The sealing buffer holds a whole frame of up to 1 MiB sealed (the
// 256 KiB requests of a 1 MiB write striped over four servers, say), so
// that it leaves in one write, as it does in the clear; larger frames go
// in 1 MiB pieces. Written in 256 KiB pieces, 1 MiB frames cost about a
// sixth more CPU on loopback, both ends together (docs/BENCHMARKS.md).
const (
	tagSize     = 16
	recordSize  = 64 << 10
	sealBufSize = 1 << 20 // a size class of GetBuffer: no rounding up
	readBufSize = 8 << 10
)

// recordPool holds the scratch buffers of one record and its tag: from
// GetBuffer's size classes, 64 KiB and 16 bytes would take 128 KiB.
var recordPool = sync.Pool{New: func() any { b := make([]byte, recordSize+tagSize); return &b }}

func getRecordBuf() []byte {
	pooledOut.Add(recordSize + tagSize)
	return *recordPool.Get().(*[]byte)
}

func putRecordBuf(b []byte) {
	pooledOut.Add(-(recordSize + tagSize))
	recordPool.Put(&b)
}

// pooledSize is the memory GetBuffer(n) takes from its pools.
func pooledSize(n int) int64 {
	if c := bufClass(n); c < len(bufPools) {
		return 1 << c
	}
	return int64(n)
}

// sealBufLen is the length of the buffer writeFrame seals a frame into in
// ProtectAEAD: the whole frame if it is small, else sealBufSize (or the
// header and argument records, if larger).
func sealBufLen(argLen, dataLen int) int {
	return min(sealedSize(argLen, dataLen), max(sealBufSize, HeaderSize+argLen+2*tagSize))
}

// spans reports whether some record of a data section cut into the
// slices of data would span two of them (and be gathered first): whether
// a slice ends inside a record.
func spans(data [][]byte) bool {
	n, at := totalLen(data), 0
	for _, d := range data {
		at += len(d)
		if len(d) > 0 && at < n && at%recordSize != 0 {
			return true
		}
	}
	return false
}

// writeMemory is the most memory writeFrame takes from the pools to write
// a frame with these sections: a server counts it in its memory budget.
func (h *half) writeMemory(argLen int, data [][]byte) int64 {
	dataLen := totalLen(data)
	records := 2 + (dataLen+recordSize-1)/recordSize
	if !h.encrypt {
		m := int64(records * (tagSize + 24)) // the tags and the net.Buffers entries
		if spans(data) {
			m += pooledSize(dataLen)
		}
		return m
	}
	m := pooledSize(sealBufLen(argLen, dataLen))
	if spans(data) {
		m += pooledSize(recordSize)
	}
	return m
}

// readMemory is the most memory reading a frame's sections of these sizes
// takes besides the buffers they go to: the argument record (sealed) and
// one data record's scratch buffer.
func (h *half) readMemory(argLen, dataLen int) int64 {
	var m int64
	if h.encrypt && argLen > 0 {
		m += pooledSize(argLen + tagSize)
	}
	if dataLen > 0 {
		m += recordSize + tagSize
	}
	return m
}

// sealedSize is the size on the wire of a frame with sections of n1 and
// n2 bytes.
func sealedSize(argLen, dataLen int) int {
	n := HeaderSize + tagSize + dataLen + (dataLen+recordSize-1)/recordSize*tagSize
	if argLen > 0 {
		n += argLen + tagSize
	}
	return n
}

// RekeyRecords is how many records one key seals in each direction
// (protocol version 5). When a direction's record count reaches a
// multiple of it, both ends derive that direction's next key from its
// current traffic secret, as TLS 1.3's KeyUpdate does, but with no
// message: the switch point is the record count, which both ends know.
// 2^22 records of at most 64 KiB are 2^34 AES blocks (256 GiB), under
// the 2^34.5 blocks per key that TLS 1.3 allows AES-GCM (RFC 8446 5.5,
// 2^24.5 records of 16 KiB). A key update costs two HKDF expansions and
// an AES key schedule, a few microseconds per 256 GiB.
const RekeyRecords = 1 << 22

// rekeyRecords is RekeyRecords; tests lower it (before any connection is
// made) to cross key updates with a few frames.
var rekeyRecords uint64 = RekeyRecords

// half is one direction of a protected connection: its key, the traffic
// secret it came from, and the number of the next record.
type half struct {
	aead    cipher.AEAD
	encrypt bool
	seq     uint64
	secret  []byte // traffic secret of the current key
	rekeyAt uint64 // the first record sealed under the next key
	every   uint64 // records per key
}

// newHalf makes a direction whose first key comes from traffic secret ts.
func newHalf(ts []byte, encrypt bool) (*half, error) {
	h := &half{secret: ts, encrypt: encrypt, every: rekeyRecords, rekeyAt: rekeyRecords}
	return h, h.useKey()
}

// useKey makes the AEAD of the key of h.secret.
func (h *half) useKey() error {
	if a := benchAEAD(h.encrypt); a != nil {
		h.aead = a
		return nil
	}
	k, err := hkdf.Expand(sha256.New, h.secret, "pario-wire key", keySize)
	if err != nil {
		return err
	}
	b, err := aes.NewCipher(k)
	if err != nil {
		return err
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return err
	}
	h.aead = g
	return nil
}

// rekey moves to the next key: its traffic secret is expanded from the
// current one, which the connection then forgets (HKDF is one-way: the
// later secrets do not give the earlier keys).
func (h *half) rekey() error {
	next, err := hkdf.Expand(sha256.New, h.secret, "pario-wire traffic upd", sha256.Size)
	if err != nil {
		return err
	}
	h.secret = next
	if err := h.useKey(); err != nil {
		return err
	}
	h.rekeyAt += h.every
	return nil
}

// session holds both directions of a connection.
type session struct {
	mode       Protection
	send, recv *half
}

// newSession derives the traffic secrets of one connection, one per
// direction, from the secret and the nonces of both sides (fresh for every
// connection) and the mode; client says which side we are. Each
// direction's keys come from its traffic secret (see RekeyRecords).
func newSession(secret, serverNonce, clientNonce []byte, mode Protection, client bool) (*session, error) {
	salt := append(append([]byte(nil), serverNonce...), clientNonce...)
	dir := func(name string) (*half, error) {
		ts, err := hkdf.Key(sha256.New, secret, salt, fmt.Sprintf("pario-wire-v%d %s %s", protocolVersion, mode, name), sha256.Size)
		if err != nil {
			return nil, err
		}
		return newHalf(ts, mode == ProtectAEAD)
	}
	c2s, err := dir("client to server")
	if err != nil {
		return nil, fmt.Errorf("derive keys: %w", err)
	}
	s2c, err := dir("server to client")
	if err != nil {
		return nil, fmt.Errorf("derive keys: %w", err)
	}
	if client {
		return &session{mode: mode, send: c2s, recv: s2c}, nil
	}
	return &session{mode: mode, send: s2c, recv: c2s}, nil
}

func (h *half) nonce(n *[12]byte) error {
	// A nonce must never be used twice with one key: the connection ends
	// before its counter could wrap (it would take centuries).
	if h.seq == math.MaxUint64 {
		return errors.New("wire: record counter exhausted, connection must be re-established")
	}
	if h.seq == h.rekeyAt {
		if err := h.rekey(); err != nil {
			return fmt.Errorf("wire: key update at record %d: %w", h.seq, err)
		}
	}
	binary.LittleEndian.PutUint64(n[4:], h.seq)
	h.seq++
	return nil
}

// seal appends the record of p to dst. p must not overlap dst's spare
// capacity.
func (h *half) seal(dst, p []byte) ([]byte, error) {
	var n [12]byte
	if err := h.nonce(&n); err != nil {
		return dst, err
	}
	if h.encrypt {
		return h.aead.Seal(dst, n[:], p, nil), nil
	}
	start := len(dst)
	dst = append(dst, p...)
	return h.aead.Seal(dst, n[:], nil, dst[start:]), nil
}

// open authenticates rec (payload then tag) and puts its plaintext in out
// (len(out) == len(rec)-tagSize), which is either rec[:len(out)] or does
// not overlap rec.
func (h *half) open(out, rec []byte) error {
	var n [12]byte
	if err := h.nonce(&n); err != nil {
		return err
	}
	if len(rec) < tagSize || len(out) != len(rec)-tagSize {
		return ErrFrameAuth
	}
	if h.encrypt {
		if _, err := h.aead.Open(out[:0], n[:], rec, nil); err != nil {
			return ErrFrameAuth
		}
		return nil
	}
	body := rec[:len(out)]
	if _, err := h.aead.Open(nil, n[:], rec[len(out):], body); err != nil {
		return ErrFrameAuth
	}
	if len(out) > 0 && &out[0] != &body[0] {
		copy(out, body)
	}
	return nil
}

// writeFrame seals one frame (its encoded header, args and data, the data
// from the caller's slices) and writes it to w, in pieces of about
// sealBufSize bytes.
func (h *half) writeFrame(w io.Writer, hb, args []byte, data [][]byte) error {
	if !h.encrypt {
		return h.writeFrameClear(w, hb, args, data)
	}
	dataLen := totalLen(data)
	buf := GetBuffer(sealBufLen(len(args), dataLen))
	defer PutBuffer(buf)
	out := buf[:0]
	var err error
	add := func(p []byte) error {
		if len(out)+len(p)+tagSize > cap(buf) {
			if _, err := w.Write(out); err != nil {
				return err
			}
			out = buf[:0]
		}
		out, err = h.seal(out, p)
		return err
	}
	if err := add(hb); err != nil {
		return err
	}
	if len(args) > 0 {
		if err := add(args); err != nil {
			return err
		}
	}
	var gather []byte // a record that spans the caller's slices
	defer func() {
		if gather != nil {
			PutBuffer(gather)
		}
	}()
	i, off := 0, 0 // position in data
	for left := dataLen; left > 0; {
		k := min(left, recordSize)
		left -= k
		for len(data[i]) == off {
			i, off = i+1, 0
		}
		if len(data[i])-off >= k {
			if err := add(data[i][off : off+k]); err != nil {
				return err
			}
			off += k
			continue
		}
		if gather == nil {
			gather = GetBuffer(recordSize)
		}
		g := gather[:0]
		for len(g) < k {
			for len(data[i]) == off {
				i, off = i+1, 0
			}
			c := min(k-len(g), len(data[i])-off)
			g = append(g, data[i][off:off+c]...)
			off += c
		}
		if err := add(g); err != nil {
			return err
		}
	}
	_, err = w.Write(out)
	return err
}

// writeFrameClear is writeFrame for ProtectIntegrity: the payloads go out
// from the caller's slices as they are (one writev, as without
// protection), each followed by its tag; only a record that spans two
// slices is gathered into a buffer first.
func (h *half) writeFrameClear(w io.Writer, hb, args []byte, data [][]byte) error {
	dataLen := totalLen(data)
	n := 2 + (dataLen+recordSize-1)/recordSize
	tags := make([]byte, 0, n*tagSize)
	bufs := make(net.Buffers, 0, 2*n)
	var gather []byte // records that span the caller's slices, one after another
	defer func() {
		if gather != nil {
			PutBuffer(gather)
		}
	}()
	add := func(p []byte) error {
		var nonce [12]byte
		if err := h.nonce(&nonce); err != nil {
			return err
		}
		start := len(tags)
		tags = h.aead.Seal(tags, nonce[:], nil, p)
		bufs = append(bufs, p, tags[start:])
		return nil
	}
	if err := add(hb); err != nil {
		return err
	}
	if len(args) > 0 {
		if err := add(args); err != nil {
			return err
		}
	}
	i, off := 0, 0
	for left := dataLen; left > 0; {
		k := min(left, recordSize)
		left -= k
		for len(data[i]) == off {
			i, off = i+1, 0
		}
		if len(data[i])-off >= k {
			if err := add(data[i][off : off+k]); err != nil {
				return err
			}
			off += k
			continue
		}
		if gather == nil {
			gather = GetBuffer(dataLen)[:0]
		}
		start := len(gather)
		for len(gather)-start < k {
			for len(data[i]) == off {
				i, off = i+1, 0
			}
			c := min(k-(len(gather)-start), len(data[i])-off)
			gather = append(gather, data[i][off:off+c]...)
			off += c
		}
		if err := add(gather[start:]); err != nil {
			return err
		}
	}
	_, err := bufs.WriteTo(w)
	return err
}

// readHeader reads and opens a header record and decodes the header: the
// lengths it returns have been authenticated and checked against the
// limits.
func (h *half) readHeader(r io.Reader) (Header, error) {
	var rec [HeaderSize + tagSize]byte
	if _, err := io.ReadFull(r, rec[:]); err != nil {
		return Header{}, fmt.Errorf("wire: read header: %w", err)
	}
	if err := h.open(rec[:HeaderSize], rec[:]); err != nil {
		return Header{}, fmt.Errorf("header: %w", err)
	}
	return DecodeHeader(rec[:HeaderSize])
}

// readArgs reads the argument section's record into args (its length is
// the header's ArgLen).
func (h *half) readArgs(r io.Reader, args []byte) error {
	if len(args) == 0 {
		return nil
	}
	if !h.encrypt {
		if err := h.readClear(r, args); err != nil {
			return fmt.Errorf("argument section: %w", err)
		}
		return nil
	}
	rec := GetBuffer(len(args) + tagSize)
	defer PutBuffer(rec)
	if _, err := io.ReadFull(r, rec); err != nil {
		return noEOF(err)
	}
	if err := h.open(args, rec); err != nil {
		return fmt.Errorf("argument section: %w", err)
	}
	return nil
}

// readClear reads a record sent in the clear (ProtectIntegrity) straight
// into p, then its tag, and checks it.
func (h *half) readClear(r io.Reader, p []byte) error {
	if _, err := io.ReadFull(r, p); err != nil {
		return noEOF(err)
	}
	var tag [tagSize]byte
	if _, err := io.ReadFull(r, tag[:]); err != nil {
		return noEOF(err)
	}
	var nonce [12]byte
	if err := h.nonce(&nonce); err != nil {
		return err
	}
	if _, err := h.aead.Open(nil, nonce[:], tag[:], p); err != nil {
		return ErrFrameAuth
	}
	return nil
}

// readData reads the records of an n-byte data section, putting the bytes
// into the slices of into in order and dropping what does not fit. It
// returns how many bytes it put. The records' tags are the only check of
// the payload: a frame after the handshake carries no CRC32C of it.
func (h *half) readData(r io.Reader, n int, into [][]byte) (int, error) {
	if n == 0 {
		return 0, nil
	}
	var scratch []byte
	defer func() {
		if scratch != nil {
			putRecordBuf(scratch)
		}
	}()
	i, off, placed := 0, 0, 0
	for left := n; left > 0; {
		k := min(left, recordSize)
		left -= k
		for i < len(into) && len(into[i]) == off {
			i, off = i+1, 0
		}
		fits := i < len(into) && len(into[i])-off >= k
		if fits && !h.encrypt {
			// In the clear, the record is read straight into place.
			if err := h.readClear(r, into[i][off:off+k]); err != nil {
				return placed, fmt.Errorf("data section: %w", err)
			}
			off += k
			placed += k
			continue
		}
		if fits && len(into[i])-off >= k+tagSize && left >= tagSize {
			// Room for the tag behind the record in the caller's slice,
			// where the next record goes (every record but the last of a
			// slice): read it there and open it in place. The tag's bytes
			// are overwritten when the next record arrives.
			rec := into[i][off : off+k+tagSize]
			if _, err := io.ReadFull(r, rec); err != nil {
				return placed, noEOF(err)
			}
			if err := h.open(rec[:k], rec); err != nil {
				return placed, fmt.Errorf("data section: %w", err)
			}
			off += k
			placed += k
			continue
		}
		if scratch == nil {
			scratch = getRecordBuf()
		}
		rec := scratch[:k+tagSize]
		if fits {
			// No room for the tag behind the record (a striped read's
			// 64 KiB slices): the record is read into the slice all the
			// same and copied beside its tag in the scratch buffer, to open
			// back into the slice. Opened from a scratch buffer it was read
			// into instead, the cipher's stores were the first to touch
			// the slice, cold in the cache, and reads cost 0.2 CPU-s/GiB
			// more in the store (docs/BENCHMARKS.md); the copy is of bytes
			// just read, in cache. A record that fails to open leaves
			// zeros in the slice: neither its ciphertext nor what the
			// cipher made of it.
			dst := into[i][off : off+k]
			if _, err := io.ReadFull(r, dst); err != nil {
				return placed, noEOF(err)
			}
			if _, err := io.ReadFull(r, rec[k:]); err != nil {
				return placed, noEOF(err)
			}
			copy(rec, dst)
			if err := h.open(dst, rec); err != nil {
				clear(dst)
				return placed, fmt.Errorf("data section: %w", err)
			}
			off += k
			placed += k
			continue
		}
		if _, err := io.ReadFull(r, rec); err != nil {
			return placed, noEOF(err)
		}
		p := rec[:k]
		if err := h.open(p, rec); err != nil {
			return placed, fmt.Errorf("data section: %w", err)
		}
		for len(p) > 0 && i < len(into) {
			c := copy(into[i][off:], p)
			p, off, placed = p[c:], off+c, placed+c
			if off == len(into[i]) {
				i, off = i+1, 0
			}
		}
	}
	return placed, nil
}
