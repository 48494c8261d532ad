package meta

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/dist"
)

// damagedDB builds a database big enough to have branch pages, closes it,
// and returns its path, its bytes and its page size.
func damagedDB(t *testing.T) (string, []byte, int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(p, Options{Servers: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; i++ {
		if _, err := s.Create(fmt.Sprintf("/file-%05d-with-a-longer-name", i), 0o644, dist.Layout{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The meta page: page header (16 bytes), magic, version, page size.
	return p, b, int(binary.LittleEndian.Uint32(b[16+8:]))
}

// pagesOf lists the pages with the given bbolt page flag (1 branch, 2 leaf).
func pagesOf(b []byte, size int, flag uint16) []int {
	var out []int
	for pg := 2; (pg+1)*size <= len(b); pg++ {
		if binary.LittleEndian.Uint16(b[pg*size+8:]) == flag {
			out = append(out, pg)
		}
	}
	return out
}

// TestOpenDamagedDatabase: a damaged meta.db is an error that names the
// file and says what to do, never a panic or a fault that kills the
// metadata server with a bbolt trace.
func TestOpenDamagedDatabase(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte, size int)
	}{
		{"branch points past the end", func(b []byte, size int) {
			pg := pagesOf(b, size, 1)[0]
			binary.LittleEndian.PutUint64(b[pg*size+16+8:], 1<<40)
		}},
		{"branch page zeroed", func(b []byte, size int) {
			pg := pagesOf(b, size, 1)[0]
			clear(b[pg*size : (pg+1)*size])
		}},
		{"leaf page garbage", func(b []byte, size int) {
			pg := pagesOf(b, size, 2)[1]
			rand.New(rand.NewSource(1)).Read(b[pg*size : (pg+1)*size])
		}},
		{"leaf element table garbage", func(b []byte, size int) {
			pg := pagesOf(b, size, 2)[0]
			rand.New(rand.NewSource(2)).Read(b[pg*size+16 : pg*size+96])
		}},
		{"both meta pages", func(b []byte, size int) {
			clear(b[16:64])
			clear(b[size+16 : size+64])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b, size := damagedDB(t)
			tc.damage(b, size)
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
	p, clean, size := damagedDB(t)
	for seed := int64(0); seed < 30; seed++ {
		r := rand.New(rand.NewSource(seed))
		b := append([]byte(nil), clean...)
		pg := 2 + r.Intn(len(b)/size-2)
		off, n := r.Intn(size), 1+r.Intn(64)
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
		ents, _ := s.Readdir("/")
		for _, e := range ents {
			s.Lookup("/" + e.Name)
		}
		s.Close()
	}
}
