package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/vfs"
	"github.com/pario/pario/wire"
)

// Create is exclusive: a datafile that exists, written or not, is EEXIST
// and keeps its bytes.
func TestCreateExclusive(t *testing.T) {
	s := openStore(t, StoreOptions{})
	const id = 0x5a
	if err := s.Create(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"empty", "written", "synced, uncached"} {
		switch step {
		case "written":
			mustWrite(t, s, id, []byte("secret"), 0)
		case "synced, uncached":
			if err := s.SyncAll(ctx); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			h := s.handles[id]
			s.uncacheLocked(h)
			s.mu.Unlock()
			h.f.Close()
		}
		err := s.Create(ctx, id)
		if !errors.Is(err, fs.ErrExist) || wire.ErrnoOf(err) != syscall.EEXIST || !strings.HasPrefix(err.Error(), "datafile 0x5a: create: ") {
			t.Fatalf("%s: second create: %v, want EEXIST naming the datafile", step, err)
		}
	}
	if got := mustRead(t, s, id, 0, 6); string(got) != "secret" {
		t.Fatalf("after a refused create the datafile holds %q", got)
	}
	// A created datafile is durable with its first Sync, not before.
	s3, mem, _ := memStore(t, StoreOptions{})
	if err := s3.Create(ctx, 0x77); err != nil {
		t.Fatal(err)
	}
	if err := afterCrash(t, mem).Create(ctx, 0x77); err != nil {
		t.Fatalf("a crash before the first Sync should leave no datafile: %v", err)
	}
	if err := s3.Sync(ctx, 0x77); err != nil {
		t.Fatal(err)
	}
	c := afterCrash(t, mem)
	if err := c.Create(ctx, 0x77); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create after a crash that followed Sync: %v, want EEXIST", err)
	}
}

// claimStore opens a store on a temp dir holding datafiles ids.
func claimStore(t *testing.T, dir string, ids ...uint64) *Store {
	t.Helper()
	s, err := Open(dir, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, id := range ids {
		mustWrite(t, s, id, []byte("x"), 0)
	}
	return s
}

func TestClaim(t *testing.T) {
	const inc, other = 0x1111, 0x2222
	refused := func(t *testing.T, err error, want ...string) {
		t.Helper()
		if !errors.Is(err, ErrIncarnation) || wire.ErrnoOf(err) != syscall.EREMCHG {
			t.Fatalf("claim: %v, want ErrIncarnation (EREMCHG)", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("claim: %q does not say %q", err, w)
			}
		}
	}
	reopen := func(t *testing.T, s *Store) *Store {
		t.Helper()
		dir := s.Dir()
		s.Close()
		s2, err := Open(dir, StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s2.Close() })
		return s2
	}

	t.Run("blank directory is claimed and remembers", func(t *testing.T) {
		s := claimStore(t, t.TempDir())
		res, err := s.Claim(ctx, inc, AdoptNone)
		if err != nil || res != (ClaimResult{}) {
			t.Fatalf("claim: %+v, %v", res, err)
		}
		mustWrite(t, s, 0x1ff03, []byte("x"), 0)
		mustWrite(t, s, 0x42, []byte("x"), 0)
		s = reopen(t, s)
		if s.Incarnation() != inc || s.Refusing() != nil {
			t.Fatalf("after reopen: incarnation %x, refusing %v", s.Incarnation(), s.Refusing())
		}
		res, err = s.Claim(ctx, inc, AdoptNone)
		if err != nil || res != (ClaimResult{MaxID: 0x1ff03, Datafiles: 2}) {
			t.Fatalf("claim again: %+v, %v", res, err)
		}
		refused(t, s.CheckIncarnation(other), "0000000000001111", "0000000000002222")
		if err := s.CheckIncarnation(inc); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("other incarnation's datafiles are refused unless adopted", func(t *testing.T) {
		s := claimStore(t, t.TempDir())
		if _, err := s.Claim(ctx, other, AdoptNone); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s, 9, []byte("x"), 0)
		_, err := s.Claim(ctx, inc, AdoptNone)
		refused(t, err, "holds datafiles (1) of cluster incarnation 0000000000002222", "not of incarnation 0000000000001111")
		_, err = s.Claim(ctx, inc, AdoptUnrecorded)
		refused(t, err)
		if s.Incarnation() != other {
			t.Fatal("a refused claim changed the incarnation")
		}
		res, err := s.Claim(ctx, inc, AdoptAny)
		if err != nil || res.MaxID != 9 {
			t.Fatalf("adopt: %+v, %v", res, err)
		}
		if s = reopen(t, s); s.Incarnation() != inc {
			t.Fatalf("adopted incarnation not durable: %x", s.Incarnation())
		}
	})
	t.Run("other incarnation without datafiles is taken", func(t *testing.T) {
		s := claimStore(t, t.TempDir())
		if _, err := s.Claim(ctx, other, AdoptNone); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, inc, AdoptNone); err != nil || s.Incarnation() != inc {
			t.Fatalf("claim: %v, incarnation %x", err, s.Incarnation())
		}
	})
	t.Run("datafiles of no recorded incarnation", func(t *testing.T) {
		dir := t.TempDir()
		s := claimStore(t, dir, 0x300)
		s = reopen(t, s)
		refused(t, s.Refusing(), dir, "unknown cluster incarnation")
		h := &Handler{Store: s}
		for _, op := range []wire.OpInfo{OpWrite.OpInfo, OpRead.OpInfo, OpSize.OpInfo, OpRemove.OpInfo, OpCreate.OpInfo} {
			var e wire.Enc
			e.U64(0x300)
			e.U64(0)
			if op.Code == OpRead.Code {
				e.U64(1)
			}
			if _, err := h.ServeWire(ctx, &wire.Request{Op: op.Code, Args: e.Bytes(), Data: []byte("y")}); !errors.Is(err, ErrIncarnation) {
				t.Fatalf("%s on an unclaimed directory: %v, want refused", op.Name, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, datafilePath(0x300))); err != nil {
			t.Fatalf("a refused remove removed: %v", err)
		}
		_, err := s.Claim(ctx, inc, AdoptNone)
		refused(t, err, "of no recorded cluster incarnation")
		if res, err := s.Claim(ctx, inc, AdoptUnrecorded); err != nil || res.MaxID != 0x300 {
			t.Fatalf("adopt unrecorded: %+v, %v", res, err)
		}
		if s.Refusing() != nil {
			t.Fatal("still refusing after a claim")
		}
	})
	t.Run("malformed record", func(t *testing.T) {
		mem := vfs.NewMem()
		f, _ := mem.OpenFile(incarnationName, os.O_RDWR|os.O_CREATE, 0o600)
		f.WriteAt([]byte("not hex\n"), 0)
		f.Close()
		_, err := Open("memdir", StoreOptions{FS: mem})
		if err == nil || !strings.Contains(err.Error(), "data: open memdir: INCARNATION holds") {
			t.Fatalf("open: %v", err)
		}
	})
}

// The handler creates only for the incarnation the directory belongs to.
func TestHandlerCreate(t *testing.T) {
	s := openStore(t, StoreOptions{})
	h := &Handler{Store: s}
	create := func(id, inc uint64) error {
		var e wire.Enc
		CreateRequest{ID: id, Incarnation: inc}.Encode(&e)
		_, err := h.ServeWire(ctx, &wire.Request{Op: OpCreate.Code, Args: e.Bytes()})
		return err
	}
	if err := create(5, 0xabc); !errors.Is(err, ErrIncarnation) || !strings.Contains(err.Error(), "not been claimed") {
		t.Fatalf("create before any claim: %v", err)
	}
	var e wire.Enc
	ClaimRequest{Incarnation: 0xabc}.Encode(&e)
	if _, err := h.ServeWire(ctx, &wire.Request{Op: OpClaim.Code, Args: e.Bytes()}); err != nil {
		t.Fatal(err)
	}
	if err := create(5, 0xabd); !errors.Is(err, ErrIncarnation) {
		t.Fatalf("create for another incarnation: %v", err)
	}
	if err := create(5, 0xabc); err != nil {
		t.Fatal(err)
	}
	if err := create(5, 0xabc); wire.ErrnoOf(err) != syscall.EEXIST {
		t.Fatalf("second create: %v, want EEXIST", err)
	}
}
