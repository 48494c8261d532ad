package medic

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/pario/pario/wire"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

// Cipher selects how the chunks of a container are sealed.
type Cipher uint8

// Ciphers. CipherNone still protects every chunk with a SHA-256 chain
// (integrity against corruption and truncation, not against an attacker).
const (
	CipherNone              Cipher = 0
	CipherXChaCha20Poly1305 Cipher = 1 // XChaCha20-Poly1305, 24-byte nonces
	CipherAES256GCM         Cipher = 2 // AES-256-GCM, 12-byte nonces
)

func (c Cipher) String() string {
	switch c {
	case CipherNone:
		return "none"
	case CipherXChaCha20Poly1305:
		return "xchacha20poly1305"
	case CipherAES256GCM:
		return "aes-256-gcm"
	}
	return fmt.Sprintf("cipher(%d)", uint8(c))
}

// ParseCipher parses the names String returns.
func ParseCipher(s string) (Cipher, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return CipherNone, nil
	case "xchacha20poly1305", "xchacha20-poly1305", "xchacha":
		return CipherXChaCha20Poly1305, nil
	case "aes-256-gcm", "aes256gcm", "aes-gcm", "aes":
		return CipherAES256GCM, nil
	}
	return 0, fmt.Errorf("unknown cipher %q: want xchacha20poly1305, aes-256-gcm or none", s)
}

// Container format constants.
const (
	containerMagic   = "PMEDIC\x00\x1a"
	ContainerVersion = 1
	// DefaultChunkSize is the plaintext size of a chunk.
	DefaultChunkSize = 64 << 10
	maxChunkSize     = 16 << 20
	maxHeaderLen     = 1 << 20
	maxChunkOverhead = 32 // SHA-256 tag without a cipher; AEAD tags are 16
	lastChunkFlag    = 1 << 31
	saltSize         = 16
	keyIDSize        = 8
	// KeySize is the size of a key file's key, in bytes.
	KeySize = 32
)

// Errors of the container decoder; test with errors.Is.
var (
	ErrFormat   = errors.New("medic: not a valid medic container")
	ErrWrongKey = errors.New("medic: container was sealed with another key (wrong key file?)")
	ErrNoKey    = errors.New("medic: container is encrypted and no key was given")
	ErrDigest   = errors.New("medic: regenerated output does not match the original's digest")
)

// ChunkError reports a chunk that failed authentication or was cut short:
// tampered or corrupted data, or a wrong key.
type ChunkError struct {
	Index uint64
	Err   error
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("medic: container chunk %d: %v", e.Index, e.Err)
}
func (e *ChunkError) Unwrap() error { return e.Err }

var errChunkAuth = errors.New("authentication failed (tampered or corrupted data)")

// Header describes a container: which plugin made the metadata and what
// the original output was.
type Header struct {
	Version   uint8
	Cipher    Cipher
	Plugin    string
	Size      int64    // size of the original output in bytes
	Digest    [32]byte // SHA-256 of the original output
	Params    map[string]string
	ChunkSize uint32
	Salt      [saltSize]byte
	KeyID     []byte // keyIDSize bytes when Cipher != CipherNone
}

func (h *Header) encode() []byte {
	var e wire.Enc
	e.U8(uint8(h.Cipher))
	e.String(h.Plugin)
	e.I64(h.Size)
	e.Blob(h.Digest[:])
	keys := make([]string, 0, len(h.Params))
	for k := range h.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.Uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.String(k)
		e.String(h.Params[k])
	}
	e.U32(h.ChunkSize)
	e.Blob(h.Salt[:])
	e.Blob(h.KeyID)
	return e.Bytes()
}

func decodeHeader(b []byte) (Header, error) {
	d := wire.NewDec(b)
	h := Header{Version: ContainerVersion}
	h.Cipher = Cipher(d.U8("cipher"))
	h.Plugin = d.String("plugin")
	h.Size = d.I64("size")
	dg := d.Blob("digest")
	n := d.Int("params", 4096)
	if n > 0 && d.Err() == nil {
		h.Params = make(map[string]string, n)
		for i := 0; i < n && d.Err() == nil; i++ {
			k := d.String("param key")
			h.Params[k] = d.String("param value")
		}
	}
	h.ChunkSize = d.U32("chunk size")
	salt := d.Blob("salt")
	h.KeyID = bytes.Clone(d.Blob("key id"))
	if err := d.Done(); err != nil {
		return Header{}, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	switch {
	case h.Cipher > CipherAES256GCM:
		return Header{}, fmt.Errorf("%w: unknown cipher %d", ErrFormat, h.Cipher)
	case h.Plugin == "" || len(h.Plugin) > 255:
		return Header{}, fmt.Errorf("%w: bad plugin name", ErrFormat)
	case h.Size < 0:
		return Header{}, fmt.Errorf("%w: negative size", ErrFormat)
	case len(dg) != 32:
		return Header{}, fmt.Errorf("%w: digest of %d bytes", ErrFormat, len(dg))
	case h.ChunkSize == 0 || h.ChunkSize > maxChunkSize:
		return Header{}, fmt.Errorf("%w: chunk size %d", ErrFormat, h.ChunkSize)
	case len(salt) != saltSize:
		return Header{}, fmt.Errorf("%w: salt of %d bytes", ErrFormat, len(salt))
	case (h.Cipher == CipherNone) != (len(h.KeyID) == 0), len(h.KeyID) != 0 && len(h.KeyID) != keyIDSize:
		return Header{}, fmt.Errorf("%w: key id of %d bytes", ErrFormat, len(h.KeyID))
	}
	copy(h.Digest[:], dg)
	copy(h.Salt[:], salt)
	return h, nil
}

// LoadKey reads a key file: 32 bytes as 64 hex digits (surrounding white
// space ignored), as GenerateKey writes it.
func LoadKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	// Stat the open file, not the path: what is checked is what is read.
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file (%s): make one with `pario medic keygen FILE`", path, st.Mode().Type())
	}
	// As the store's secret file (and ssh's private key): whoever reads
	// it can send to the receiver and open sealed metadata.
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s is open to others (mode %04o): whoever reads it can send to the receiver and read sealed metadata; run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) != KeySize {
		return nil, fmt.Errorf("key file %s: want %d bytes as %d hex digits (make one with `pario medic keygen %s`)", path, KeySize, 2*KeySize, path)
	}
	if why := wire.NotRandom(k); why != "" {
		return nil, fmt.Errorf("key file %s: the key is not random (%s): make one with `pario medic keygen FILE`", path, why)
	}
	return k, nil
}

// GenerateKey writes a new random key file (mode 0600); it refuses to
// overwrite an existing file.
func GenerateKey(path string) error {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	if _, err := fmt.Fprintln(f, hex.EncodeToString(k)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// KeyID is a short public fingerprint of a key, recorded in encrypted
// containers so that a wrong key is reported as such.
func KeyID(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("pario-medic key id v1"))
	return m.Sum(nil)[:keyIDSize]
}

func deriveKey(key []byte, salt []byte, info string) []byte {
	out := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, key, salt, []byte(info)), out); err != nil {
		panic(err)
	}
	return out
}

func newAEAD(c Cipher, key []byte, salt []byte) (cipher.AEAD, error) {
	sub := deriveKey(key, salt, "pario-medic container v1 "+c.String())
	switch c {
	case CipherXChaCha20Poly1305:
		return chacha20poly1305.NewX(sub)
	case CipherAES256GCM:
		b, err := aes.NewCipher(sub)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(b)
	}
	return nil, fmt.Errorf("medic: no AEAD for cipher %v", c)
}

// sealer holds the per-container chunk state shared by Writer and Reader.
type sealer struct {
	aead  cipher.AEAD
	salt  []byte
	hh    [32]byte // SHA-256 of the encoded header: associated data / chain start
	chain [32]byte
	index uint64
	nonce []byte
	ad    [32 + 8 + 1]byte
}

func newSealer(h *Header, key []byte, headerBytes []byte) (*sealer, error) {
	s := &sealer{salt: h.Salt[:], hh: sha256.Sum256(headerBytes)}
	s.chain = s.hh
	if h.Cipher != CipherNone {
		a, err := newAEAD(h.Cipher, key, h.Salt[:])
		if err != nil {
			return nil, err
		}
		s.aead = a
		s.nonce = make([]byte, a.NonceSize())
		// nonce = first NonceSize-8 bytes of the salt || chunk counter
		copy(s.nonce, h.Salt[:a.NonceSize()-8])
	}
	return s, nil
}

func (s *sealer) setAD(last bool) {
	copy(s.ad[:32], s.hh[:])
	binary.BigEndian.PutUint64(s.ad[32:], s.index)
	s.ad[40] = 0
	if last {
		s.ad[40] = 1
	}
	if s.aead != nil {
		binary.BigEndian.PutUint64(s.nonce[len(s.nonce)-8:], s.index)
	}
}

func (s *sealer) chainTag(plain []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("pario-medic chunk v1\x00"))
	h.Write(s.chain[:])
	h.Write(s.ad[32:])
	h.Write(plain)
	var t [32]byte
	h.Sum(t[:0])
	return t
}

// seal appends the sealed chunk payload to dst.
func (s *sealer) seal(dst, plain []byte, last bool) []byte {
	s.setAD(last)
	if s.aead != nil {
		dst = s.aead.Seal(dst, s.nonce, plain, s.ad[:])
	} else {
		t := s.chainTag(plain)
		dst = append(append(dst, plain...), t[:]...)
		s.chain = t
	}
	s.index++
	return dst
}

// open authenticates a chunk payload and returns its plaintext (in place).
func (s *sealer) open(payload []byte, last bool) ([]byte, error) {
	s.setAD(last)
	var plain []byte
	if s.aead != nil {
		p, err := s.aead.Open(payload[:0], s.nonce, payload, s.ad[:])
		if err != nil {
			return nil, &ChunkError{s.index, errChunkAuth}
		}
		plain = p
	} else {
		if len(payload) < 32 {
			return nil, &ChunkError{s.index, errChunkAuth}
		}
		plain = payload[:len(payload)-32]
		t := s.chainTag(plain)
		if !hmac.Equal(t[:], payload[len(plain):]) {
			return nil, &ChunkError{s.index, errChunkAuth}
		}
		s.chain = t
	}
	s.index++
	return plain, nil
}

// Writer writes a container: NewWriter writes the header; what is written
// to the Writer is the plugin's metadata, sealed in chunks; Close writes
// the last chunk. A container without Close is detected as truncated.
type Writer struct {
	w      io.Writer
	s      *sealer
	buf    []byte
	out    []byte
	size   int
	closed bool
	err    error
}

// NewWriter writes h's header to w. h.Salt and h.KeyID are filled in; with
// h.Cipher other than CipherNone, key must be KeySize bytes.
func NewWriter(w io.Writer, h *Header, key []byte) (*Writer, error) {
	if h.ChunkSize == 0 {
		h.ChunkSize = DefaultChunkSize
	}
	if h.ChunkSize > maxChunkSize {
		return nil, fmt.Errorf("medic: chunk size %d exceeds %d", h.ChunkSize, maxChunkSize)
	}
	h.Version = ContainerVersion
	if _, err := rand.Read(h.Salt[:]); err != nil {
		return nil, err
	}
	h.KeyID = nil
	if h.Cipher != CipherNone {
		if len(key) != KeySize {
			return nil, fmt.Errorf("medic: cipher %v needs a %d-byte key", h.Cipher, KeySize)
		}
		h.KeyID = KeyID(key)
	}
	hb := h.encode()
	s, err := newSealer(h, key, hb)
	if err != nil {
		return nil, err
	}
	pre := make([]byte, 0, len(containerMagic)+5+len(hb))
	pre = append(pre, containerMagic...)
	pre = append(pre, ContainerVersion)
	pre = binary.LittleEndian.AppendUint32(pre, uint32(len(hb)))
	pre = append(pre, hb...)
	if _, err := w.Write(pre); err != nil {
		return nil, err
	}
	return &Writer{w: w, s: s, size: int(h.ChunkSize), buf: make([]byte, 0, h.ChunkSize)}, nil
}

func (cw *Writer) flush(last bool) error {
	cw.out = cw.out[:0]
	cw.out = binary.LittleEndian.AppendUint32(cw.out, 0) // length, patched below
	cw.out = cw.s.seal(cw.out, cw.buf, last)
	n := uint32(len(cw.out) - 4)
	if last {
		n |= lastChunkFlag
	}
	binary.LittleEndian.PutUint32(cw.out, n)
	cw.buf = cw.buf[:0]
	_, err := cw.w.Write(cw.out)
	return err
}

// Write buffers p and writes full chunks.
func (cw *Writer) Write(p []byte) (int, error) {
	if cw.err != nil {
		return 0, cw.err
	}
	if cw.closed {
		return 0, errors.New("medic: write to closed container")
	}
	n := 0
	for len(p) > 0 {
		k := copy(cw.buf[len(cw.buf):cw.size], p)
		cw.buf = cw.buf[:len(cw.buf)+k]
		p = p[k:]
		n += k
		// A full chunk is flushed only when more follows, so that the
		// last chunk (written by Close) is never empty unless the
		// whole stream is.
		if len(cw.buf) == cw.size && len(p) > 0 {
			if cw.err = cw.flush(false); cw.err != nil {
				return n, cw.err
			}
		}
	}
	return n, nil
}

// Close writes the last chunk. It does not close the underlying writer.
func (cw *Writer) Close() error {
	if cw.err != nil || cw.closed {
		return cw.err
	}
	cw.closed = true
	cw.err = cw.flush(true)
	return cw.err
}

// Reader reads a container, returning the authenticated metadata stream.
// It returns io.EOF only after the last chunk has been authenticated and
// nothing follows it.
type Reader struct {
	r      io.Reader
	h      Header
	s      *sealer
	buf    []byte
	plain  []byte
	done   bool
	err    error
	nread  int64
	hdrLen int64
}

// NewReader reads and checks the container header. key may be nil for
// containers without a cipher (a key given for those is not needed).
func NewReader(r io.Reader, key []byte) (*Reader, error) {
	var pre [len(containerMagic) + 5]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("%w: short header: %v", ErrFormat, err)
	}
	if string(pre[:len(containerMagic)]) != containerMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrFormat)
	}
	if v := pre[len(containerMagic)]; v != ContainerVersion {
		return nil, fmt.Errorf("%w: version %d, this pario reads version %d", ErrFormat, v, ContainerVersion)
	}
	n := binary.LittleEndian.Uint32(pre[len(containerMagic)+1:])
	if n > maxHeaderLen {
		return nil, fmt.Errorf("%w: header of %d bytes", ErrFormat, n)
	}
	hb := make([]byte, n)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, fmt.Errorf("%w: short header: %v", ErrFormat, err)
	}
	h, err := decodeHeader(hb)
	if err != nil {
		return nil, err
	}
	if h.Cipher != CipherNone {
		if key == nil {
			return nil, fmt.Errorf("%w (%v)", ErrNoKey, h.Cipher)
		}
		if !hmac.Equal(KeyID(key), h.KeyID) {
			return nil, fmt.Errorf("%w: container key id %x, key file's %x", ErrWrongKey, h.KeyID, KeyID(key))
		}
	}
	s, err := newSealer(&h, key, hb)
	if err != nil {
		return nil, err
	}
	return &Reader{r: r, h: h, s: s, hdrLen: int64(len(pre) + len(hb))}, nil
}

// Header returns the container's header.
func (cr *Reader) Header() Header { return cr.h }

// Chunks returns how many chunks have been authenticated so far.
func (cr *Reader) Chunks() uint64 { return cr.s.index }

func (cr *Reader) next() error {
	var lb [4]byte
	if _, err := io.ReadFull(cr.r, lb[:]); err != nil {
		return &ChunkError{cr.s.index, fmt.Errorf("container truncated before its last chunk: %w", io.ErrUnexpectedEOF)}
	}
	w := binary.LittleEndian.Uint32(lb[:])
	last := w&lastChunkFlag != 0
	n := w &^ lastChunkFlag
	if n > cr.h.ChunkSize+maxChunkOverhead {
		return &ChunkError{cr.s.index, fmt.Errorf("length %d exceeds chunk size %d (corrupted)", n, cr.h.ChunkSize)}
	}
	if cap(cr.buf) < int(n) {
		cr.buf = make([]byte, n)
	}
	cr.buf = cr.buf[:n]
	if _, err := io.ReadFull(cr.r, cr.buf); err != nil {
		return &ChunkError{cr.s.index, fmt.Errorf("container truncated inside the chunk: %w", io.ErrUnexpectedEOF)}
	}
	p, err := cr.s.open(cr.buf, last)
	if err != nil {
		return err
	}
	cr.plain = p
	if last {
		var one [1]byte
		if k, _ := io.ReadFull(cr.r, one[:]); k != 0 {
			return &ChunkError{cr.s.index - 1, errors.New("trailing bytes after the last chunk")}
		}
		cr.done = true
	}
	return nil
}

// Read returns authenticated metadata.
func (cr *Reader) Read(p []byte) (int, error) {
	for len(cr.plain) == 0 {
		if cr.err != nil {
			return 0, cr.err
		}
		if cr.done {
			return 0, io.EOF
		}
		if err := cr.next(); err != nil {
			cr.err = err
			return 0, err
		}
	}
	n := copy(p, cr.plain)
	cr.plain = cr.plain[n:]
	cr.nread += int64(n)
	return n, nil
}

// Verify reads a whole container and checks every chunk, returning its
// header and the metadata size.
func Verify(r io.Reader, key []byte) (Header, int64, error) {
	cr, err := NewReader(r, key)
	if err != nil {
		return Header{}, 0, err
	}
	n, err := io.Copy(io.Discard, cr)
	return cr.h, n, err
}
