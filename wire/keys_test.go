package wire

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
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
