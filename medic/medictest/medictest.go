// Package medictest has helpers for testing medic plugins: a round trip
// through the whole container pipeline (encode, seal, verify, decode,
// digest check), with and without encryption.
package medictest

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/pario/pario/medic"
)

// Key returns a fresh random key.
func Key(t testing.TB) []byte {
	k := make([]byte, medic.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// RoundTrip encodes the output at path with plugin (params as given) into
// a container, decodes it with env under every cipher, and fails t unless
// the regenerated output is byte-identical. It returns the container
// (without a cipher) for further checks.
func RoundTrip(t testing.TB, plugin, path string, params map[string]string, env medic.Env) []byte {
	t.Helper()
	key := Key(t)
	var plain []byte
	for _, c := range []medic.Cipher{medic.CipherNone, medic.CipherXChaCha20Poly1305, medic.CipherAES256GCM} {
		var buf bytes.Buffer
		h, err := medic.Encode(context.Background(), path, medic.EncodeOptions{Plugin: plugin, Params: params, Cipher: c, Key: key}, &buf)
		if err != nil {
			t.Fatalf("%s encode (%v): %v", plugin, c, err)
		}
		if c == medic.CipherNone {
			plain = buf.Bytes()
		}
		var out bytes.Buffer
		h2, err := medic.Decode(context.Background(), bytes.NewReader(buf.Bytes()), key, env, &out)
		if err != nil {
			t.Fatalf("%s decode (%v): %v", plugin, c, err)
		}
		if h2.Digest != h.Digest || int64(out.Len()) != h.Size {
			t.Fatalf("%s (%v): regenerated %d bytes, want %d", plugin, c, out.Len(), h.Size)
		}
	}
	return plain
}
