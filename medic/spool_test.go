package medic_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// A send that reuses a spooled container counts SpoolTTL afresh from
// then, as the receiver counts its staged part's TTL from that send
// (before the fix it counted from the encoding: a container retried
// yesterday was removed the next day and encoded afresh, under a new
// transfer id, losing the resumption).
func TestSpoolReuseKeepsTheContainer(t *testing.T) {
	key := medictest.Key(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every send fails after encoding
	p := writeFile(t, "out.txt", report(200))
	spool := t.TempDir()
	send := func() {
		_, err := medic.SendFile(context.Background(), p, medic.SendFileOptions{
			Encode:   medic.EncodeOptions{Plugin: "zstd", Cipher: medic.CipherXChaCha20Poly1305, Key: key},
			Send:     medic.SendOptions{Addr: addr, Key: key},
			SpoolDir: spool,
		})
		if err == nil {
			t.Fatal("a send to nothing succeeded")
		}
	}
	send()
	es, _ := os.ReadDir(spool)
	if len(es) != 1 {
		t.Fatalf("spool holds %d files", len(es))
	}
	c := filepath.Join(spool, es[0].Name())
	old := time.Now().Add(-6 * 24 * time.Hour)
	if err := os.Chtimes(c, old, old); err != nil {
		t.Fatal(err)
	}
	send() // reuses it (a send used it now)
	fi, err := os.Stat(c)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("a spooled container a send just used still dates from %v: it expires %v from now, not SpoolTTL after this use",
			fi.ModTime().Round(time.Second), (medic.SpoolTTL - time.Since(fi.ModTime())).Round(time.Hour))
	}
}
