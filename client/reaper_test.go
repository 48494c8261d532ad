package client_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// datafilePath is where I/O server dir keeps datafile id (server/data:
// df/<last byte of the ID>/<the ID>, in hex).
func datafilePath(dir string, id uint64) string {
	return filepath.Join(dir, "df", fmt.Sprintf("%02x", byte(id)), fmt.Sprintf("%016x", id))
}

// rm while an I/O server is down succeeds: the removal is recorded with
// the unlink, in the same transaction. A kill -9 of the metadata server
// right after it loses nothing: once the server is back and the metadata
// server restarted, the reaper removes the datafile that was left
// behind, and fsck finds the store clean. (Before, rm failed naming the
// server and its datafile stayed behind for ever.)
func TestRmWithServerDownIsReaped(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()
	const stopped = 1
	victim := writeFile(t, c, "/victim", "simple_stripe:strip_size=4096", 4096*4*3)
	a := victim.Attr()
	id := uint64(a.ID)
	victim.Close()
	left := datafilePath(p.DataDir(stopped), id)
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the victim's datafile on data%d: %v", stopped, err)
	}

	if err := p.Stop(fmt.Sprintf("data%d", stopped)); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, "/victim"); err != nil {
		t.Fatalf("rm with data%d down: %v, want success", stopped, err)
	}
	if _, err := c.Stat(ctx, "/victim"); err == nil {
		t.Fatal("/victim is still there after rm")
	}
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
	if err := p.StartData(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the datafile on the server that was down went before the reaper could reach it: %v", err)
	}
	// The record survived the kill, naming the server that was down.
	db, err := bbolt.Open(filepath.Join(filepath.Dir(p.ClusterFile), "meta", "meta.db"), 0o600, &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var rec []byte
	err = db.View(func(tx *bbolt.Tx) error {
		rec = append(rec, tx.Bucket([]byte("removals")).Get(binary.BigEndian.AppendUint64(nil, id))...)
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil || rec == nil {
		t.Fatalf("removal record of %d after kill -9: %x, %v", id, rec, err)
	}

	if err := p.StartMeta(ctx); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(left); os.IsNotExist(err) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("30 s after the restart, datafile %d is still on data%d", id, stopped)
		}
	}
	out, code := pario(t, p, "fsck", "--grace", "0")
	if code != 0 || !strings.Contains(out, "clean") || strings.Contains(out, "pending removal") {
		t.Fatalf("fsck after the reaper: status %d, want 0, clean, nothing pending:\n%s", code, out)
	}
}
