package medic

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// ctxStore is a store that, as parioStore does (its MkdirAll and Create
// take the context), fails to begin once the receiver's context is done.
type ctxStore struct{ Store }

func (s ctxStore) Begin(ctx context.Context, name string) (Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.Store.Begin(ctx, name)
}

// A receiver shutting down keeps a staged container for the next one,
// whatever fails then: before the fix, when a regeneration slot was free
// the select took it half the time, the store refused to begin with the
// canceled context, and the part was dropped.
func TestShutdownKeepsStagedContainer(t *testing.T) {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key)
	staging := t.TempDir()
	srv, err := NewServer(ServerConfig{Key: key, Store: ctxStore{DirStore(t.TempDir())}, StagingDir: staging, MaxRegens: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(out, []byte("an output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(t.TempDir(), "c.medic")
	if _, err := encodeFile(context.Background(), out, EncodeOptions{Plugin: "raw", Cipher: CipherXChaCha20Poly1305, Key: key}, filepath.Dir(spool), spool); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(spool)
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(data)
	idh := hex.EncodeToString(id[:])
	srv.cancel() // Close's first step; no regeneration runs, so both cases are ready
	dropped := 0
	const tries = 20
	for range tries {
		st, err := openStaged(staging, idh, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.write(data); err != nil {
			t.Fatal(err)
		}
		if err := st.checkpoint(); err != nil {
			t.Fatal(err)
		}
		c := &srvConn{s: srv, log: srv.cfg.Logger}
		_, ferr := c.finish(st, id[:], "out.txt")
		st.close()
		if _, err := os.Stat(st.part); err != nil {
			dropped++
			t.Logf("dropped after: %v", ferr)
		}
		os.Remove(st.part)
		os.Remove(st.sum)
	}
	if dropped > 0 {
		t.Errorf("a receiver shutting down dropped the staged container in %d of %d finishes", dropped, tries)
	}
}
