package meta

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/dist"
)

// scanAll pages through a whole scan with pages of max records.
func scanAll(t *testing.T, s *Store, max int) (all ScanPage, pages int) {
	t.Helper()
	var cookie []byte
	for {
		p, err := s.Scan(t.Context(), cookie, max)
		if err != nil {
			t.Fatalf("Scan(%x, %d): %v", cookie, max, err)
		}
		if n := len(p.Inodes) + len(p.Dirents) + len(p.Bad); max > 0 && n > max {
			t.Fatalf("page of %d records, max %d", n, max)
		}
		pages++
		if pages == 1 {
			all.NextID = p.NextID
		}
		all.Inodes = append(all.Inodes, p.Inodes...)
		all.Dirents = append(all.Dirents, p.Dirents...)
		all.Bad = append(all.Bad, p.Bad...)
		if p.Done {
			return all, pages
		}
		if len(p.Cookie) == 0 {
			t.Fatal("a page that is not the last has no cookie")
		}
		cookie = p.Cookie
	}
}

// Scan lists every inode and every directory entry exactly once, in order,
// whatever the page size, and the ID counter as of its first page.
func TestScanListsEverythingOnce(t *testing.T) {
	s := openT(t, Options{Servers: 3})
	ctx := t.Context()
	if _, err := s.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 57 {
		dir := "/"
		if i%2 == 1 {
			dir = "/d/"
		}
		if _, err := s.Create(ctx, fmt.Sprintf("%sf%03d", dir, i), 0o644, dist.Layout{}); err != nil {
			t.Fatal(err)
		}
	}
	want := snapshot(t, s)
	for _, max := range []int{1, 2, 10, 58, 59, 0} {
		all, pages := scanAll(t, s, max)
		// IDs are reserved in blocks, so NextID is the block's end: at
		// least every ID handed out, never one of them.
		if all.NextID < 60 {
			t.Errorf("max %d: NextID %d, want at least 60", max, all.NextID)
		}
		if len(all.Inodes) != len(want) || len(all.Dirents) != len(want)-1 || len(all.Bad) != 0 {
			t.Errorf("max %d: %d inodes, %d entries, %d bad; want %d, %d, 0", max, len(all.Inodes), len(all.Dirents), len(all.Bad), len(want), len(want)-1)
		}
		if !slices.IsSortedFunc(all.Inodes, func(a, b Attr) int { return int(a.ID) - int(b.ID) }) {
			t.Errorf("max %d: inodes not in ID order", max)
		}
		for _, a := range all.Inodes {
			found := false
			for _, w := range want {
				found = found || w.ID == a.ID && slices.Equal(w.Servers, a.Servers)
			}
			if !found {
				t.Errorf("max %d: scanned inode %+v is not in the namespace", max, a)
			}
		}
		if max == 1 && pages < 2*len(want)-1 {
			t.Errorf("max 1: %d pages", pages)
		}
	}
	if _, err := s.Scan(ctx, []byte{7}, 1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("bad cookie: %v, want EINVAL", err)
	}
}

// A record that does not decode is reported, not a failure of the scan.
func TestScanReportsBadRecords(t *testing.T) {
	s := openT(t, Options{Servers: 1})
	ctx := t.Context()
	if _, err := s.Create(ctx, "/f", 0o644, dist.Layout{}); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		t := newTxn(tx)
		if err := t.inodes.Put(idKey(9), []byte{99}); err != nil {
			return err
		}
		return t.dirents.Put(direntKey(RootID, "short"), []byte{1, 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := scanAll(t, s, 1)
	if len(all.Bad) != 2 || len(all.Inodes) != 2 || len(all.Dirents) != 1 {
		t.Fatalf("scan: %d inodes, %d entries, bad %q", len(all.Inodes), len(all.Dirents), all.Bad)
	}
}

// UnlinkDangling removes an entry only while it still names an ID that
// has no inode.
func TestUnlinkDangling(t *testing.T) {
	s := openT(t, Options{Servers: 1})
	ctx := t.Context()
	f, err := s.Create(ctx, "/f", 0o644, dist.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string, child FileID) {
		t.Helper()
		if err := s.db.Update(func(tx *bbolt.Tx) error {
			return newTxn(tx).dirents.Put(direntKey(RootID, name), idKey(child))
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("dangling", 1000)
	for _, tc := range []struct {
		name  string
		child FileID
		errno syscall.Errno
	}{
		{"f", f.ID, syscall.ESTALE},        // its inode exists
		{"dangling", 999, syscall.ESTALE},  // names another ID now
		{"nothing", 1000, syscall.ENOENT},  // no such entry
		{"dangling", 1000, 0},              // removed
		{"dangling", 1000, syscall.ENOENT}, // already gone
	} {
		if got := errnoOf(t, s.UnlinkDangling(ctx, RootID, tc.name, tc.child)); got != tc.errno {
			t.Errorf("UnlinkDangling(%q, %d): errno %v, want %v", tc.name, tc.child, got, tc.errno)
		}
	}
	if _, err := s.Lookup(ctx, "/f"); err != nil {
		t.Errorf("a live entry went: %v", err)
	}
	if ents, err := s.Readdir(ctx, "/"); err != nil || len(ents) != 1 {
		t.Errorf("after repair: Readdir / = %v, %v; want /f only", ents, err)
	}
}
