//go:build wirenomac

package wire

import "crypto/cipher"

// This file is compiled only with the build tag wirenomac, for
// scripts/bench-protection.sh: it turns ProtectIntegrity into the same
// records with no authentication at all (tags of zeros, never checked),
// so that a benchmark can compare protection on with protection off in one
// build, the framing and everything else alike. Such a binary must never
// serve real data: its hello and auth carry noMACBit with the mode, so that
// a normal build refuses to talk to it (protection mismatch) and it to a
// normal build.

const noMACBit Protection = 0x80

// benchAEAD is the AEAD a direction uses in place of AES-GCM, or nil.
func benchAEAD(encrypt bool) cipher.AEAD {
	if encrypt {
		return nil
	}
	return nullAEAD{}
}

// nullAEAD seals by appending a tag of zeros and opens without checking.
type nullAEAD struct{}

func (nullAEAD) NonceSize() int { return 12 }
func (nullAEAD) Overhead() int  { return tagSize }

func (nullAEAD) Seal(dst, _, plaintext, _ []byte) []byte {
	dst = append(dst, plaintext...)
	var tag [tagSize]byte
	return append(dst, tag[:]...)
}

func (nullAEAD) Open(dst, _, ciphertext, _ []byte) ([]byte, error) {
	return append(dst, ciphertext[:len(ciphertext)-tagSize]...), nil
}
