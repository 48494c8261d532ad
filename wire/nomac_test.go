//go:build wirenomac

package wire

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// go test -tags wirenomac -run NoMAC ./wire: the benchmark build's
// integrity mode sends the same records with tags of zeros and checks
// none, so what scripts/bench-protection.sh measures as "off" is off.
func TestNoMACIntegrityIsUnauthenticated(t *testing.T) {
	c, s := sessionPair(t, ProtectIntegrity)
	data := pattern(3*recordSize+5, 7)
	h := Header{Op: 1, ReqID: 9, DataLen: uint32(len(data))}
	var hb [HeaderSize]byte
	h.Encode(hb[:])
	var w bytes.Buffer
	if err := c.send.writeFrame(&w, hb[:], nil, [][]byte{data}); err != nil {
		t.Fatal(err)
	}
	frame := w.Bytes()
	if len(frame) != sealedSize(0, len(data)) {
		t.Fatalf("frame of %d bytes, want the sealed size %d", len(frame), sealedSize(0, len(data)))
	}
	tag := frame[HeaderSize : HeaderSize+tagSize]
	if !bytes.Equal(tag, make([]byte, tagSize)) {
		t.Fatalf("header record's tag %x, want zeros", tag)
	}
	frame[HeaderSize+tagSize+10] ^= 0xff // a data byte, changed on the way
	if _, err := s.recv.readHeader(&w); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if _, err := s.recv.readData(&w, len(data), [][]byte{got}); err != nil {
		t.Fatalf("a changed byte was refused (%v): this build must not authenticate", err)
	}
	if got[10] == data[10] {
		t.Fatal("the changed byte arrived unchanged")
	}
}

// A benchmark build tells its peers so: its mode on the wire is not a
// normal build's, whose hello and auth it would fail.
func TestNoMACModeOnTheWire(t *testing.T) {
	if got := (ProtectIntegrity | noMACBit).String(); !strings.Contains(got, "wirenomac benchmark build") {
		t.Fatalf("mode string %q", got)
	}
	srv := startServer(t, newTestHandler(), ServerOptions{Protection: ProtectIntegrity})
	c, err := DialProtected(context.Background(), srv.Addr, "I/O server data0", testSecret, ProtectIntegrity)
	if err != nil {
		t.Fatalf("two benchmark builds: %v", err)
	}
	c.Close()
}
