package results

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/tune/search"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "results.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPutGet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := sampleKey()
	if _, ok, err := s.Get(k); ok || err != nil {
		t.Fatalf("Get on an empty store: %v, %v", ok, err)
	}
	r := Record{Value: 202.65, Time: time.Unix(1700000000, 0), Duration: time.Millisecond, Source: "model"}
	if err := s.Put(k, r); err != nil {
		t.Fatal(err)
	}
	// The same parameters in another order are the same key.
	k2 := k
	k2.Params = slices.Clone(k.Params)
	slices.Reverse(k2.Params)
	got, ok, err := s.Get(k2)
	if err != nil || !ok || got.Value != r.Value || !got.Time.Equal(r.Time) || got.Source != "model" {
		t.Fatalf("Get = %+v, %v, %v", got, ok, err)
	}
	// Another system or objective is another key.
	for _, other := range []Key{{System: "other", Objective: k.Objective, Params: k.Params}, {System: k.System, Objective: "striping/v2", Params: k.Params}} {
		if _, ok, _ := s.Get(other); ok {
			t.Errorf("%s %s finds the record of %s %s", other.System, other.Objective, k.System, k.Objective)
		}
	}
	if err := s.Put(k, Record{Value: math.NaN()}); err == nil {
		t.Error("Put accepted NaN")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Durable across Open.
	s, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, ok, err := s.Get(k); !ok || err != nil || got.Value != r.Value {
		t.Errorf("after reopening: %+v, %v, %v", got, ok, err)
	}
	if err := s.Put(k, r); err == nil {
		t.Error("Put on a read-only store succeeded")
	}
}

func TestEachAndBest(t *testing.T) {
	s := openTemp(t)
	put := func(system, objective string, n int64, v float64) {
		t.Helper()
		k := Key{System: system, Objective: objective, Params: search.Params{{Name: "n", Value: n}}}
		if err := s.Put(k, Record{Value: v, Source: "model"}); err != nil {
			t.Fatal(err)
		}
	}
	put("kraken", "a", 1, 5)
	put("kraken", "a", 2, 3)
	put("kraken", "b", 1, 1)
	put("kraken2", "a", 1, 0)
	put("jaguar", "a", 1, -1)
	count := func(system, objective string) int {
		n := 0
		if err := s.Each(system, objective, func(Key, Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		system, objective string
		want              int
	}{{"kraken", "a", 2}, {"kraken", "", 3}, {"kraken2", "", 1}, {"", "", 5}, {"nowhere", "", 0}} {
		if got := count(tc.system, tc.objective); got != tc.want {
			t.Errorf("Each(%q, %q) saw %d records, want %d", tc.system, tc.objective, got, tc.want)
		}
	}
	k, r, ok, err := s.Best("kraken", "a")
	if err != nil || !ok || r.Value != 3 || k.Params[0].Value != 2 {
		t.Errorf("Best = %+v, %+v, %v, %v", k, r, ok, err)
	}
	if _, _, ok, err := s.Best("nowhere", "a"); ok || err != nil {
		t.Errorf("Best of nothing: %v, %v", ok, err)
	}
	stop := errors.New("stop")
	if err := s.Each("", "", func(Key, Record) error { return stop }); err != stop {
		t.Errorf("Each did not return fn's error: %v", err)
	}
	if err := s.Each("", "a", nil); err == nil {
		t.Error("Each with an objective and no system accepted")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A real results database, then damaged copies of it.
	good := filepath.Join(dir, "good.db")
	s, err := Open(good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		k := Key{System: "s", Objective: "o", Params: search.Params{{Name: "n", Value: int64(i)}}}
		if err := s.Put(k, Record{Value: float64(i), Source: strings.Repeat("x", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	img, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := os.Getpagesize()
	damaged := slices.Clone(img)
	for i := 4 * pageSize; i < len(damaged); i += 7 {
		damaged[i] ^= 0x5a
	}
	// One leaf page of results with a wrong element count: the header pages
	// are fine, so only the consistency check at Open can see it.
	badLeaf := slices.Clone(img)
	leaves := 0
	for off := 2 * pageSize; off+pageSize <= len(badLeaf); off += pageSize {
		flags := binary.LittleEndian.Uint16(badLeaf[off+8:])
		if flags == 0x02 && binary.LittleEndian.Uint16(badLeaf[off+10:]) > 10 {
			binary.LittleEndian.PutUint16(badLeaf[off+10:], 0xfff0)
			leaves++
			break
		}
	}
	if leaves == 0 {
		t.Fatal("no leaf page found to damage")
	}
	// A bbolt database of another kind.
	foreignPath := filepath.Join(dir, "foreign.db")
	db, err := bbolt.Open(foreignPath, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("inodes")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// A results database from a future version.
	futurePath := filepath.Join(dir, "future.db")
	s, err = Open(futurePath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err = bbolt.Open(futurePath, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte{0, 0, 0, 0, 0, 0, 0, 2})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// bbolt maps and seeks its file: a named pipe failed with "illegal
	// seek", naming neither the file nor the cause.
	fifo := filepath.Join(dir, "fifo.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, path string
		opts       Options
		want       string
	}{
		{"directory", dir, Options{}, "is a directory"},
		{"named pipe", fifo, Options{}, "is a named pipe, not a regular file: a results database must be a regular file"},
		{"named pipe, read-only", fifo, Options{ReadOnly: true}, "is a named pipe, not a regular file"},
		{"device", "/dev/null", Options{}, "is a character device, not a regular file"},
		{"text file", write("notes.txt", []byte(strings.Repeat("stripe count 4, strip size 1M\n", 400))), Options{}, "not a results database"},
		{"short garbage", write("short.db", []byte("hello")), Options{}, "not a results database"},
		{"truncated", write("truncated.db", img[:pageSize+100]), Options{}, ""},
		{"damaged pages", write("damaged.db", damaged), Options{}, "corrupt"},
		{"damaged leaf", write("leaf.db", badLeaf), Options{}, "database is corrupt"},
		{"foreign bbolt", foreignPath, Options{}, `not a results database (it has buckets ["inodes"]`},
		{"future format", futurePath, Options{}, "results format 2 (this build reads format 1)"},
		{"missing read-only", filepath.Join(dir, "missing.db"), Options{ReadOnly: true}, "no such file"},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "r.db"), Options{}, "no such file"},
	} {
		s, err := Open(tc.path, tc.opts)
		if err == nil {
			s.Close()
			t.Errorf("%s: Open succeeded", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not name the path and say %q", tc.name, err, tc.want)
		}
		t.Logf("%s: %v", tc.name, err)
	}
}

func TestOpenLocked(t *testing.T) {
	defer func(d time.Duration) { lockTimeout = d }(lockTimeout)
	lockTimeout = 100 * time.Millisecond
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("second Open: %v", err)
	}
}

// Randomly damaged copies of a results database: Open either refuses the
// file with an error that names it, or opens it, and then reading and
// writing return errors rather than crash (bbolt panics, or faults through
// its memory map, on some damaged pages; the store turns both into errors).
func TestDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	s, err := Open(good, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		k := Key{System: "s", Objective: "o", Params: search.Params{{Name: "n", Value: int64(i)}}}
		if err := s.Put(k, Record{Value: float64(i), Source: "model"}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	img, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 2))
	iterations := 400
	if testenv.RaceEnabled {
		iterations = 100
	}
	refused := 0
	for i := range iterations {
		b := slices.Clone(img)
		for range 1 + rng.IntN(20) {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		// A new name each time: a file whose damage bbolt.Open trips on
		// stays locked by this process (see Open).
		p := filepath.Join(dir, fmt.Sprintf("damaged%d.db", i))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(p, Options{NoSync: true})
		if err != nil {
			refused++
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the file", err)
			}
			continue
		}
		_ = s.Each("", "", func(Key, Record) error { return nil })
		k := Key{System: "s", Objective: "o", Params: search.Params{{Name: "n", Value: int64(i)}}}
		_, _, _ = s.Get(k)
		_ = s.Put(k, Record{Value: 1})
		s.Close()
	}
	t.Logf("%d of %d damaged copies refused at Open", refused, iterations)
}
