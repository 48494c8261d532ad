package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/dist"
)

// cleanDB builds a database big enough to have branch pages and returns
// its bytes, its page size and the root page of the inodes bucket (a
// branch page, live).
func cleanDB(t *testing.T) ([]byte, int, int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(p, Options{Servers: 4})
	if err != nil {
		t.Fatal(err)
	}
	// One transaction: the test needs many entries, not many fsyncs.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		t := newTxn(tx)
		for i := 0; i < 2000; i++ {
			a := Attr{ID: FileID(1000 + i), Kind: KindFile, Mode: 0o644}
			if err := t.put(&a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var root int
	s.db.View(func(tx *bbolt.Tx) error {
		root = int(tx.Bucket(bucketInodes).RootPage())
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The meta page: page header (16 bytes), magic, version, page size.
	size := int(binary.LittleEndian.Uint32(b[16+8:]))
	if flags := binary.LittleEndian.Uint16(b[root*size+8:]); flags != 1 {
		t.Fatalf("inodes root page %d has flags %#x, want a branch page", root, flags)
	}
	return b, size, root
}

// child returns the page number branch page pg's element i points at.
func child(b []byte, size, pg, i int) int {
	return int(binary.LittleEndian.Uint64(b[pg*size+16+16*i+8:]))
}

// TestOpenDamagedDatabase: a damaged meta.db is an error that names the
// file and says what to do, never a panic or a fault that kills the
// metadata server with a bbolt trace.
func TestOpenDamagedDatabase(t *testing.T) {
	clean, size, root := cleanDB(t)
	for _, tc := range []struct {
		name   string
		damage func(b []byte)
	}{
		{"branch points past the end", func(b []byte) {
			binary.LittleEndian.PutUint64(b[root*size+16+8:], 1<<40)
		}},
		{"branch points far past the end", func(b []byte) {
			binary.LittleEndian.PutUint64(b[root*size+16+8:], 1<<52)
		}},
		{"branch page zeroed", func(b []byte) {
			clear(b[root*size : (root+1)*size])
		}},
		{"leaf page garbage", func(b []byte) {
			pg := child(b, size, root, 1)
			rand.New(rand.NewSource(1)).Read(b[pg*size : (pg+1)*size])
		}},
		{"leaf element table garbage", func(b []byte) {
			pg := child(b, size, root, 0)
			rand.New(rand.NewSource(2)).Read(b[pg*size+16 : pg*size+96])
		}},
		{"both meta pages", func(b []byte) {
			clear(b[16:64])
			clear(b[size+16 : size+64])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), clean...)
			tc.damage(b)
			p := filepath.Join(t.TempDir(), "meta.db")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(p, Options{Servers: 4})
			if err == nil {
				s.Close()
				t.Fatal("a damaged database opened")
			}
			for _, want := range []string{p, "damaged", "backup"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// TestOpenRandomDamage: whatever page is overwritten with whatever bytes,
// Open either refuses or gives a store whose every entry can be read
// without bringing the process down.
func TestOpenRandomDamage(t *testing.T) {
	clean, size, _ := cleanDB(t)
	dir := t.TempDir()
	for seed := int64(0); seed < 60; seed++ {
		r := rand.New(rand.NewSource(seed))
		b := append([]byte(nil), clean...)
		pg := 2 + r.Intn(len(b)/size-2)
		off, n := r.Intn(size), 1+r.Intn(64)
		if seed%3 == 0 { // a whole page
			off, n = 0, size
		}
		// A new file each time: bbolt keeps the lock of a file whose
		// Open panicked.
		p := filepath.Join(dir, fmt.Sprintf("meta-%d.db", seed))
		r.Read(b[pg*size+off : pg*size+min(size, off+n)])
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(p, Options{Servers: 4})
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("seed %d: error does not name the file: %v", seed, err)
			}
			continue
		}
		ents, _ := s.Readdir(context.Background(), "/")
		for _, e := range ents {
			s.Lookup(context.Background(), "/"+e.Name)
		}
		s.Close()
	}
}

// TestOpenFewerServers: a store whose files use 4 I/O servers does not
// start with 2 or 3; it says which servers are missing.
func TestOpenFewerServers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(p, Options{Servers: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Create(context.Background(), fmt.Sprintf("/f%d", i), 0o644, dist.Layout{}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	for _, tc := range []struct {
		servers int
		want    string
	}{
		{2, "3 files have datafiles on I/O servers 2 to 3"},
		{3, "3 files have datafiles on I/O server 3 "},
		{1, "on I/O servers 1 to 3"},
	} {
		_, err := Open(p, Options{Servers: tc.servers})
		var me *MissingServersError
		if !errors.As(err, &me) || me.Need != 4 || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "start it with all 4") || !strings.Contains(err.Error(), p) {
			t.Errorf("%d servers: %v; want a refusal with %q", tc.servers, err, tc.want)
		}
	}
	for _, n := range []int{4, 6} {
		s, err := Open(p, Options{Servers: n})
		if err != nil {
			t.Fatalf("%d servers: %v", n, err)
		}
		s.Close()
	}
}
