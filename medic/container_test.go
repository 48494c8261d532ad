package medic

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testKey(t testing.TB) []byte {
	k := make([]byte, KeySize)
	rand.Read(k)
	return k
}

func seal(t testing.TB, c Cipher, key, data []byte, chunk uint32) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := Header{Cipher: c, Plugin: "raw", Size: int64(len(data)), ChunkSize: chunk, Params: map[string]string{"a": "1"}}
	w, err := NewWriter(&buf, &h, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func open(c []byte, key []byte) ([]byte, error) {
	r, err := NewReader(bytes.NewReader(c), key)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

var ciphers = []Cipher{CipherNone, CipherXChaCha20Poly1305, CipherAES256GCM}

func TestContainerRoundTrip(t *testing.T) {
	key := testKey(t)
	for _, c := range ciphers {
		for _, n := range []int{0, 1, 99, 100, 101, 350} {
			data := make([]byte, n)
			rand.Read(data)
			got, err := open(seal(t, c, key, data, 100), key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%v n=%d: err %v, equal %v", c, n, err, bytes.Equal(got, data))
			}
		}
	}
}

func TestContainerTamperNamesChunk(t *testing.T) {
	key := testKey(t)
	data := make([]byte, 1000)
	rand.Read(data)
	for _, c := range ciphers {
		ct := seal(t, c, key, data, 100)
		// Flip every byte in turn: each must be caught.
		for i := range ct {
			bad := bytes.Clone(ct)
			bad[i] ^= 0x40
			if _, err := open(bad, key); err == nil {
				t.Fatalf("%v: flip at %d of %d not detected", c, i, len(ct))
			}
		}
		// A flip in the payload of the 4th chunk names chunk 3.
		hdr := len(ct) - 10*(4+100) - 10*overhead(c)
		bad := bytes.Clone(ct)
		bad[hdr+3*(104+overhead(c))+10] ^= 1
		_, err := open(bad, key)
		var ce *ChunkError
		if !errors.As(err, &ce) || ce.Index != 3 {
			t.Fatalf("%v: %v, want chunk 3", c, err)
		}
	}
}

func overhead(c Cipher) int {
	if c == CipherNone {
		return 32
	}
	return 16
}

func TestContainerTruncation(t *testing.T) {
	key := testKey(t)
	data := make([]byte, 1000)
	for _, c := range ciphers {
		ct := seal(t, c, key, data, 100)
		last := 4 + 100 + overhead(c)
		for _, cut := range []int{1, last - 1, last, last + 1} {
			if _, err := open(ct[:len(ct)-cut], key); err == nil {
				t.Fatalf("%v: cut %d not detected", c, cut)
			}
		}
		if _, err := open(append(bytes.Clone(ct), 0), key); err == nil {
			t.Fatalf("%v: trailing byte not detected", c)
		}
		// Dropping whole chunks from the middle is caught too.
		hl := len(ct) - 10*last
		spliced := append(bytes.Clone(ct[:hl+last]), ct[hl+2*last:]...)
		if _, err := open(spliced, key); err == nil {
			t.Fatalf("%v: dropped chunk not detected", c)
		}
	}
}

func TestContainerWrongKey(t *testing.T) {
	ct := seal(t, CipherXChaCha20Poly1305, testKey(t), []byte("hello"), 0)
	if _, err := open(ct, testKey(t)); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := open(ct, nil); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key: %v", err)
	}
}

func TestKeyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	if err := GenerateKey(p); err != nil {
		t.Fatal(err)
	}
	if err := GenerateKey(p); err == nil {
		t.Fatal("overwrote a key file")
	}
	k, err := LoadKey(p)
	if err != nil || len(k) != KeySize {
		t.Fatal(k, err)
	}
	os.WriteFile(p, []byte("abc"), 0o600)
	if _, err := LoadKey(p); err == nil {
		t.Fatal("short key accepted")
	}
}

// TestKeyFileRefused: a key file others may read (as the store refuses
// its secret file, docs/store.md), a directory, or a device is refused
// naming it. Before, mode 0644 was accepted, and --key /dev/zero read
// for ever, growing the heap.
func TestKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k")
	if err := GenerateKey(p); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		os.Chmod(p, mode)
		if _, err := LoadKey(p); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("key file %s is open to others (mode %04o)", p, mode)) ||
			!strings.Contains(err.Error(), "chmod 600 "+p) {
			t.Errorf("mode %04o: %v, want it refused as open to others", mode, err)
		}
	}
	os.Chmod(p, 0o400)
	if _, err := LoadKey(p); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
	// Keys made by hand, not by keygen: the store's secret file refuses
	// them too (wire.NotRandom).
	for name, key := range map[string]string{"zeros": strings.Repeat("00", KeySize), "counting": hex.EncodeToString(seq(KeySize)), "pattern": strings.Repeat("0badf00d", KeySize/4)} {
		kp := filepath.Join(dir, name)
		if err := os.WriteFile(kp, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(kp); err == nil || !strings.Contains(err.Error(), "key file "+kp+": the key is not random") {
			t.Errorf("key of %s: %v, want it refused as not random", name, err)
		}
	}
	for _, bad := range []string{dir, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := LoadKey(bad); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "key file "+bad+" is not a regular file") {
				t.Errorf("LoadKey(%s): %v, want it refused as not a regular file", bad, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("LoadKey(%s) still reading after 10s", bad)
		}
	}
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// FuzzReader: arbitrary bytes must never panic the decoder or make it
// allocate more than the limits, and whatever it accepts must be what a
// Writer produced (round trip of the accepted plaintext).
func FuzzReader(f *testing.F) {
	key := bytes.Repeat([]byte{7}, KeySize)
	for _, c := range ciphers {
		f.Add(seal(f, c, key, []byte("some metadata to seal, long enough for two chunks"), 32))
	}
	f.Add([]byte(containerMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, k := range [][]byte{key, nil} {
			r, err := NewReader(bytes.NewReader(b), k)
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(r, 1<<20))
		}
	})
}

func BenchmarkSeal(b *testing.B) {
	key := testKey(b)
	data := make([]byte, 4<<20)
	rand.Read(data)
	for _, c := range ciphers {
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			h := Header{Cipher: c, Plugin: "raw", Size: int64(len(data))}
			for i := 0; i < b.N; i++ {
				w, _ := NewWriter(io.Discard, &h, key)
				w.Write(data)
				w.Close()
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	key := testKey(b)
	data := make([]byte, 4<<20)
	rand.Read(data)
	for _, c := range ciphers {
		b.Run(c.String(), func(b *testing.B) {
			ct := seal(b, c, key, data, 0)
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				r, _ := NewReader(bytes.NewReader(ct), key)
				io.Copy(io.Discard, r)
			}
		})
	}
}
