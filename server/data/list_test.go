package data

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// List pages through every datafile once, in position order, whatever the
// page size, with each datafile's size; it skips what is not a datafile.
func TestListPagesEveryDatafileOnce(t *testing.T) {
	s := openStore(t, StoreOptions{})
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[uint64]int64{}
	for len(want) < 700 {
		id := rng.Uint64N(1 << 20)
		if rng.IntN(10) == 0 {
			id = rng.Uint64() // high ids too
		}
		size := int64(rng.IntN(3000))
		if _, ok := want[id]; !ok {
			if err := s.Create(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Truncate(ctx, id, size); err != nil {
			t.Fatal(err)
		}
		want[id] = size
	}
	// Strays an operator or an editor might leave: none is a datafile.
	for _, name := range []string{"df/01/tmp", "df/01/00000000000000ab", "df/02/00000000000000X2", "df/03/0000000000000003.bak"} {
		if err := os.WriteFile(filepath.Join(s.Dir(), name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(s.Dir(), "df/04/0000000000000004"), 0o700); err != nil {
		t.Fatal(err)
	}

	for _, page := range []int{1, 7, 256, 0, MaxListPage + 5} {
		got := map[uint64]int64{}
		var order []uint64
		from, pages := uint64(0), 0
		for {
			ents, next, done, err := s.List(ctx, from, page)
			if err != nil {
				t.Fatalf("page %d: List(%#x): %v", page, from, err)
			}
			if page > 0 && len(ents) > page {
				t.Fatalf("page %d: List returned %d entries", page, len(ents))
			}
			pages++
			for _, e := range ents {
				if _, dup := got[e.ID]; dup {
					t.Fatalf("page %d: datafile %#x listed twice", page, e.ID)
				}
				got[e.ID] = e.Size
				order = append(order, ListPos(e.ID))
				if e.Mtime == 0 {
					t.Errorf("datafile %#x has no mtime", e.ID)
				}
			}
			if done {
				break
			}
			from = next
		}
		if len(got) != len(want) {
			t.Errorf("page %d: listed %d datafiles, want %d", page, len(got), len(want))
		}
		for id, size := range want {
			if g, ok := got[id]; !ok || g != size {
				t.Errorf("page %d: datafile %#x: listed %v (size %d), want size %d", page, id, ok, g, size)
			}
		}
		if !slices.IsSorted(order) {
			t.Errorf("page %d: not in position order", page)
		}
		if page == 1 && pages < len(want) {
			t.Errorf("page 1: %d pages for %d datafiles", pages, len(want))
		}
	}
}

func TestListPosIsABijectionInShardOrder(t *testing.T) {
	for _, id := range []uint64{0, 1, 0xff, 0x100, 0x1ab, 1<<64 - 1, 0x8000000000000000} {
		p := ListPos(id)
		if back := p<<8 | p>>56; back != id {
			t.Errorf("ListPos(%#x) = %#x does not rotate back", id, p)
		}
		if byte(p>>56) != byte(id) {
			t.Errorf("ListPos(%#x) = %#x: top byte is not the shard", id, p)
		}
	}
	if !(ListPos(0x2ff) > ListPos(0x1ff) && ListPos(0x100) < ListPos(0x001)) {
		t.Error("positions do not order by shard, then id")
	}
}

func TestListAfterClose(t *testing.T) {
	s := openStore(t, StoreOptions{})
	s.Close()
	if _, _, _, err := s.List(ctx, 0, 10); err == nil {
		t.Fatal("List after Close succeeded")
	}
}
