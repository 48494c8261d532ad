package meta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
)

// fakeData is a set of I/O servers as the metadata server sees them: which
// datafiles exist where, and each server's incarnation.
type fakeData struct {
	mu    sync.Mutex
	files []map[FileID]bool
	inc   []uint64
	down  []bool
	// hideMax makes Claim answer 0, as a server whose holdings the
	// metadata server could not learn, to exercise the EEXIST path.
	hideMax bool
	creates int
}

func newFakeData(n int) *fakeData {
	f := &fakeData{files: make([]map[FileID]bool, n), inc: make([]uint64, n), down: make([]bool, n)}
	for i := range f.files {
		f.files[i] = map[FileID]bool{}
	}
	return f
}

func (f *fakeData) Claim(_ context.Context, srv uint32, inc uint64) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[srv] {
		return 0, fmt.Errorf("server %d: connection refused", srv)
	}
	if f.inc[srv] != 0 && f.inc[srv] != inc && len(f.files[srv]) > 0 {
		return 0, fmt.Errorf("server %d belongs to incarnation %x: %w", srv, f.inc[srv], syscall.EREMCHG)
	}
	f.inc[srv] = inc
	var m FileID
	for id := range f.files[srv] {
		m = max(m, id)
	}
	if f.hideMax {
		m = 0
	}
	return uint64(m), nil
}

func (f *fakeData) Create(_ context.Context, srv uint32, id FileID, inc uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	switch {
	case f.down[srv]:
		return fmt.Errorf("server %d: connection refused", srv)
	case f.inc[srv] != inc:
		return fmt.Errorf("server %d: not claimed by %x: %w", srv, inc, syscall.EREMCHG)
	case f.files[srv][id]:
		return fmt.Errorf("datafile %d on %d: %w", id, srv, fs.ErrExist)
	}
	f.files[srv][id] = true
	return nil
}

func (f *fakeData) Remove(_ context.Context, srv uint32, id FileID, inc uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.down[srv]:
		return fmt.Errorf("server %d: connection refused", srv)
	case f.inc[srv] != inc:
		return fmt.Errorf("server %d: not claimed by %x: %w", srv, inc, syscall.EREMCHG)
	}
	delete(f.files[srv], id)
	return nil
}

// where lists the servers holding datafile id.
func (f *fakeData) where(id FileID) []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []uint32
	for srv, m := range f.files {
		if m[id] {
			out = append(out, uint32(srv))
		}
	}
	return out
}

var ctx = context.Background()

func sorted(x []uint32) []uint32 { return slices.Sorted(slices.Values(x)) }

// Create makes every datafile before it commits; a stuffed file gets its
// first only, and Unstuff makes the rest.
func TestCreateMakesDatafiles(t *testing.T) {
	fd := newFakeData(4)
	s := openT(t, Options{Servers: 4, Datafiles: fd, Stuffing: true})
	a := okAttr(t)(s.Create(ctx, "/plain", 0o644, dist.Layout{Dist: "basic"}))
	if got := fd.where(a.ID); !slices.Equal(got, a.Servers) {
		t.Fatalf("datafiles of a basic file on %v, want %v", got, a.Servers)
	}
	b := okAttr(t)(s.Create(ctx, "/stuffed", 0o644, dist.Layout{}))
	if !b.Stuffed || !slices.Equal(fd.where(b.ID), b.Servers[:1]) {
		t.Fatalf("stuffed file %+v has datafiles on %v", b, fd.where(b.ID))
	}
	// A datafile an earlier Unstuff made is the file's own and is kept.
	fd.files[b.Servers[2]][b.ID] = true
	u := okAttr(t)(s.Unstuff(ctx, b.ID))
	if u.Stuffed || !slices.Equal(fd.where(b.ID), sorted(b.Servers)) {
		t.Fatalf("after unstuff: %+v, datafiles on %v", u, fd.where(b.ID))
	}
	// SetLayout of an empty file makes the datafiles it adds and removes
	// those it drops.
	c := okAttr(t)(s.Create(ctx, "/c", 0o644, dist.Layout{Dist: "simple_stripe", Datafiles: 3}))
	c2 := okAttr(t)(s.SetLayout(ctx, "/c", dist.Layout{Dist: "simple_stripe", Datafiles: 2}, true))
	if !slices.Equal(fd.where(c.ID), sorted(c2.Servers)) {
		t.Fatalf("after setlayout to 2: datafiles on %v, want %v", fd.where(c.ID), c2.Servers)
	}
	c4 := okAttr(t)(s.SetLayout(ctx, "/c", dist.Layout{Dist: "simple_stripe"}, true))
	if !slices.Equal(fd.where(c.ID), []uint32{0, 1, 2, 3}) || len(c4.Servers) != 4 {
		t.Fatalf("after setlayout to 4: datafiles on %v", fd.where(c.ID))
	}
	// A create that fails on the I/O servers commits nothing and leaves
	// no datafile behind.
	fd.down[1] = true
	// (A varstrip starting on datafile 1 is not stuffed: all four are made.)
	_, err := s.Create(ctx, "/down", 0o644, dist.Layout{Dist: "varstrip", Params: "strips=1:100;0:100;2:100;3:100"})
	if err == nil {
		t.Fatal("create with a server down succeeded")
	}
	t.Log(err)
	if _, err := s.Lookup(ctx, "/down"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed create left an entry: %v", err)
	}
	for srv, m := range fd.files {
		for id := range m {
			if id != a.ID && id != b.ID && id != c.ID {
				t.Fatalf("datafile %d left on server %d by a failed create", id, srv)
			}
		}
	}
	fd.down[1] = false
	// A create that loses the name to another commits nothing either.
	okAttr(t)(s.Create(ctx, "/down", 0o644, dist.Layout{}))
	if _, err := s.Create(ctx, "/down", 0o644, dist.Layout{}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v", err)
	}
}

// The restored-backup scenario: a database copied before a file was made,
// put back afterwards, must never hand out that file's ID again, and must
// not touch its datafiles.
func TestRestoredDatabaseNeverReusesIDs(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprintf("server reports its max ID: %v", !hide), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "meta.db")
			fd := newFakeData(3)
			fd.hideMax = hide
			s, err := Open(path, Options{Servers: 3, Datafiles: fd})
			if err != nil {
				t.Fatal(err)
			}
			okAttr(t)(s.Create(ctx, "/before", 0o644, dist.Layout{}))
			s.Close()
			backup, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err = Open(path, Options{Servers: 3, Datafiles: fd})
			if err != nil {
				t.Fatal(err)
			}
			var secret []FileID
			for i := range 5 {
				secret = append(secret, okAttr(t)(s.Create(ctx, fmt.Sprintf("/secret%d", i), 0o644, dist.Layout{})).ID)
			}
			s.Close()
			if err := os.WriteFile(path, backup, 0o600); err != nil {
				t.Fatal(err)
			}
			s = openAt(t, path, Options{Servers: 3, Datafiles: fd})
			if errs := s.ClaimAll(ctx); errors.Join(errs...) != nil {
				t.Fatal(errs)
			}
			for i := range 10 {
				n := okAttr(t)(s.Create(ctx, fmt.Sprintf("/new%d", i), 0o644, dist.Layout{}))
				if slices.Contains(secret, n.ID) {
					t.Fatalf("new file got ID %d of a file made after the backup", n.ID)
				}
			}
			for _, id := range secret {
				if got := fd.where(id); len(got) != 3 {
					t.Fatalf("datafiles of %d after the restore: %v", id, got)
				}
			}
		})
	}
}

// IDs handed out before a restart stay handed out, though next_id is
// written once per block.
func TestIDsAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	seen := map[FileID]bool{}
	for range 3 {
		s, err := Open(path, Options{Servers: 2, Datafiles: newFakeData(2)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			a, err := s.Mkdir(ctx, fmt.Sprintf("/d%d-%d", len(seen), i), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if seen[a.ID] || a.ID <= RootID {
				t.Fatalf("ID %d handed out twice", a.ID)
			}
			seen[a.ID] = true
		}
		s.Close()
	}
}

// The incarnation is made with the database and kept.
func TestIncarnation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(path, Options{Servers: 1})
	if err != nil {
		t.Fatal(err)
	}
	inc, created := s.Incarnation(), s.Created()
	s.Close()
	if inc == 0 || !created {
		t.Fatalf("new database: incarnation %x, created %v", inc, created)
	}
	s = openAt(t, path, Options{Servers: 1})
	if s.Incarnation() != inc || s.Created() || s.Upgraded() {
		t.Fatalf("reopened: incarnation %x (was %x), created %v, upgraded %v", s.Incarnation(), inc, s.Created(), s.Upgraded())
	}
	// A server of another incarnation is refused at claim.
	fd := newFakeData(1)
	fd.inc[0], fd.files[0][77] = inc, true
	other := openT(t, Options{Servers: 1, Datafiles: fd})
	if other.Incarnation() == inc {
		t.Fatal("two databases share an incarnation")
	}
	errs := other.ClaimAll(ctx)
	if !errors.Is(errs[0], syscall.EREMCHG) {
		t.Fatalf("claim of another incarnation's server: %v", errs)
	}
}
