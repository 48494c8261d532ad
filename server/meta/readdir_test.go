package meta

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
)

// Readdir lists a whole directory page by page: the tests' view of it.
// Servers and clients never hold a whole directory.
func (s *Store) Readdir(ctx context.Context, path string) ([]DirEntry, error) {
	var out []DirEntry
	cookie := ""
	for {
		page, next, err := s.ReaddirPage(ctx, path, cookie, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		cookie = next
	}
}

// pageAll lists dir with pages of at most max entries, checking each
// page's bounds, and returns the names in the order given.
func pageAll(t *testing.T, s *Store, dir string, max int) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	cookie := ""
	for pages := 0; ; pages++ {
		page, next, err := s.ReaddirPage(ctx, dir, cookie, max)
		if err != nil {
			t.Fatalf("ReaddirPage(%q, cookie %q, max %d): %v", dir, cookie, max, err)
		}
		checkPage(t, page, next, max)
		for _, e := range page {
			names = append(names, e.Name)
		}
		if next == "" {
			return names
		}
		if pages > 1<<20 {
			t.Fatalf("listing of %s does not end", dir)
		}
		cookie = next
	}
}

// checkPage asserts a page's bounds: at most max (and MaxPageEntries)
// entries, sorted, encoded within PageBytes and wire.MaxArgLen, and a
// non-final page's cookie is its last name.
func checkPage(t *testing.T, page []DirEntry, next string, max int) {
	t.Helper()
	if max <= 0 || max > MaxPageEntries {
		max = MaxPageEntries
	}
	if len(page) > max {
		t.Fatalf("page of %d entries, max %d", len(page), max)
	}
	if next != "" && (len(page) == 0 || page[len(page)-1].Name != next) {
		t.Fatalf("page of %d entries has next cookie %q, not its last name", len(page), next)
	}
	for i := 1; i < len(page); i++ {
		if page[i-1].Name >= page[i].Name {
			t.Fatalf("page not in byte order: %q before %q", page[i-1].Name, page[i].Name)
		}
	}
	var e wire.Enc
	ReaddirResponse{Entries: page, Next: next}.Encode(&e)
	if len(page) > 1 && len(e.Bytes()) > PageBytes+2*MaxNameLen {
		t.Fatalf("page of %d entries encodes to %d bytes, bound %d", len(page), len(e.Bytes()), PageBytes)
	}
	if len(e.Bytes()) > wire.MaxArgLen {
		t.Fatalf("page encodes to %d bytes, over the frame limit %d", len(e.Bytes()), wire.MaxArgLen)
	}
}

func TestReaddirPages(t *testing.T) {
	ctx := context.Background()
	s := openT(t, Options{Servers: 4})
	s.db.NoSync = true // speed only: durability is tested elsewhere
	var want []string
	for i := range 2500 {
		name := fmt.Sprintf("f%05d", i)
		if i%7 == 0 {
			name = fmt.Sprintf("d%05d", i)
			okAttr(t)(s.Mkdir(ctx, "/"+name, 0o755))
		} else {
			okAttr(t)(s.Create(ctx, "/"+name, 0o644, dist.Layout{}))
		}
		want = append(want, name)
	}
	slices.Sort(want)
	for _, max := range []int{0, 1, 2, 3, 999, 1000, MaxPageEntries, MaxPageEntries + 1, 1 << 30, -1} {
		if got := pageAll(t, s, "/", max); !slices.Equal(got, want) {
			t.Errorf("max %d: listed %d names, want %d (first difference near %v)", max, len(got), len(want), firstDiff(got, want))
		}
	}
	// A cookie that names no entry (it was removed) resumes after it.
	page, _, err := s.ReaddirPage(ctx, "/", "f00001x", 2)
	if err != nil || len(page) != 2 || page[0].Name != "f00002" || page[1].Name != "f00003" {
		t.Errorf("cookie between names: got %v, %v; want f00002, f00003", names(page), err)
	}
	// The last page ends with an empty cookie, and asking past it is empty.
	page, next, err := s.ReaddirPage(ctx, "/", want[len(want)-1], 0)
	if err != nil || len(page) != 0 || next != "" {
		t.Errorf("past the end: %v, %q, %v", names(page), next, err)
	}
	// A directory that fills a page exactly has no empty last page.
	okAttr(t)(s.Mkdir(ctx, "/four", 0o755))
	for i := range 4 {
		okAttr(t)(s.Create(ctx, fmt.Sprintf("/four/%d", i), 0o644, dist.Layout{}))
	}
	if page, next, err := s.ReaddirPage(ctx, "/four", "", 4); err != nil || len(page) != 4 || next != "" {
		t.Errorf("full last page: %d entries, next %q, %v; want 4, \"\"", len(page), next, err)
	}
	for _, tc := range []struct {
		path, cookie string
		want         syscall.Errno
	}{
		{"/nope", "", syscall.ENOENT},
		{"/f00001", "", syscall.ENOTDIR},
		{"/", strings.Repeat("x", MaxNameLen+1), syscall.EINVAL},
	} {
		if _, _, err := s.ReaddirPage(ctx, tc.path, tc.cookie, 0); errnoOf(t, err) != tc.want {
			t.Errorf("ReaddirPage(%q, cookie of %d bytes): %v, want %v", tc.path, len(tc.cookie), err, tc.want)
		}
	}
}

// Pages of names of the longest length, with the longest layouts a
// directory default can give, stay within PageBytes and the frame limit.
func TestReaddirPageBytes(t *testing.T) {
	ctx := context.Background()
	s := openT(t, Options{Servers: 64})
	s.db.NoSync = true
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	// A long varstrip layout: every file's attribute record carries it.
	var strips []string
	for i := range 64 {
		strips = append(strips, fmt.Sprintf("%d:%d", i, 1000000+i))
	}
	l, err := dist.ParseLayout("varstrip:strips=" + strings.Join(strips, ";"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetLayout(ctx, "/d", l, false); err != nil {
		t.Fatalf("SetLayout: %v", err)
	}
	const n = 3000
	for i := range n {
		name := fmt.Sprintf("%06d%s", i, strings.Repeat("n", MaxNameLen-6))
		okAttr(t)(s.Create(ctx, "/d/"+name, 0o644, dist.Layout{}))
	}
	got := pageAll(t, s, "/d", 0)
	if len(got) != n {
		t.Fatalf("listed %d of %d", len(got), n)
	}
	page, _, err := s.ReaddirPage(ctx, "/d", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var e wire.Enc
	ReaddirResponse{Entries: page, Next: page[len(page)-1].Name}.Encode(&e)
	t.Logf("a page of %d-byte names and %d-byte layouts: %d entries, %d bytes", MaxNameLen, len(l.String()), len(page), len(e.Bytes()))
	if len(page) >= MaxPageEntries || len(e.Bytes()) < PageBytes/2 {
		t.Errorf("page of %d entries, %d bytes: the byte bound should have stopped it near %d", len(page), len(e.Bytes()), PageBytes)
	}
}

// Entries created and removed while a directory is paged through are never
// listed twice, and every entry present throughout is listed exactly once.
func TestReaddirPagesConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openT(t, Options{Servers: 2})
	s.db.NoSync = true
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	const stable = 600
	want := map[string]bool{}
	for i := range stable {
		name := fmt.Sprintf("s%04d", i*3)
		okAttr(t)(s.Create(ctx, "/d/"+name, 0o644, dist.Layout{}))
		want[name] = true
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for !stop.Load() {
				// Churn names that sort between, before and after the stable ones.
				name := fmt.Sprintf("%c%04d", "ast"[r.IntN(3)], r.IntN(stable*3))
				if want[name] {
					continue
				}
				if r.IntN(2) == 0 {
					_, _ = s.Create(ctx, "/d/"+name, 0o644, dist.Layout{})
				} else {
					_, _ = s.Remove(ctx, "/d/"+name)
				}
			}
		})
	}
	for round := range 20 {
		seen := map[string]int{}
		for _, name := range pageAll(t, s, "/d", 1+round*7) {
			seen[name]++
			if seen[name] > 1 {
				t.Fatalf("round %d: %q listed twice", round, name)
			}
		}
		for name := range want {
			if seen[name] != 1 {
				t.Fatalf("round %d: stable entry %q listed %d times", round, name, seen[name])
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("index %d: %q vs %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("index %d", min(len(a), len(b)))
}
