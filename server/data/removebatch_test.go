package data

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pario/pario/wire"
)

// removeBatch over the handler removes every datafile it names, missing
// ones included without error, and nothing else; a metadata server of
// another incarnation is refused and removes nothing.
func TestRemoveBatch(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, StoreOptions{})
	if _, err := s.Claim(ctx, 7, AdoptNone); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{2, 3, 0x102, 4} {
		if err := s.Create(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	h := &Handler{Store: s}
	call := func(inc uint64, ids ...uint64) error {
		var e wire.Enc
		RemoveBatchRequest{Incarnation: inc, IDs: ids}.Encode(&e)
		_, err := h.ServeWire(ctx, &wire.Request{Op: OpRemoveBatch.Code, Args: e.Bytes()})
		return err
	}
	if err := call(8, 2, 3); !errors.Is(err, ErrIncarnation) {
		t.Fatalf("removeBatch of another incarnation: got %v, want ErrIncarnation", err)
	}
	if got := listIDs(t, s); !slices.Equal(got, []uint64{2, 3, 4, 0x102}) {
		t.Fatalf("after a refused batch: datafiles %v", got)
	}
	if err := call(7, 2, 0x102, 99); err != nil {
		t.Fatalf("removeBatch with a missing ID: %v", err)
	}
	if got := listIDs(t, s); !slices.Equal(got, []uint64{3, 4}) {
		t.Fatalf("after removing 2, 0x102 and 99: datafiles %v, want [3 4]", got)
	}
	if err := call(7, 2, 0x102); err != nil {
		t.Fatalf("removeBatch again: %v", err)
	}
}

// A single remove carries the incarnation too: one sent by a client or
// metadata server of another cluster is refused and removes nothing.
func TestRemoveOfAnotherIncarnationIsRefused(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, StoreOptions{})
	if _, err := s.Claim(ctx, 7, AdoptNone); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{2, 3} {
		if err := s.Create(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteAt(ctx, 3, []byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	h := &Handler{Store: s}
	call := func(inc, id uint64) error {
		var e wire.Enc
		RemoveRequest{ID: id, Incarnation: inc}.Encode(&e)
		_, err := h.ServeWire(ctx, &wire.Request{Op: OpRemove.Code, Args: e.Bytes()})
		return err
	}
	for _, id := range []uint64{2, 3} {
		if err := call(8, id); !errors.Is(err, ErrIncarnation) {
			t.Fatalf("remove of datafile %d by incarnation 8: got %v, want ErrIncarnation", id, err)
		}
	}
	if got := listIDs(t, s); !slices.Equal(got, []uint64{2, 3}) {
		t.Fatalf("after refused removes: datafiles %v, want [2 3]", got)
	}
	if err := call(7, 3); err != nil {
		t.Fatalf("remove by the directory's incarnation: %v", err)
	}
	if got := listIDs(t, s); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("after removing 3: datafiles %v, want [2]", got)
	}
}

func listIDs(t *testing.T, s *Store) []uint64 {
	t.Helper()
	ents, _, _, err := s.List(context.Background(), 0, MaxListPage)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, e := range ents {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

// A batch's removals survive a power cut right after it answers: the
// metadata server forgets its records then, and a datafile that came back
// would be an orphan nobody removes. A failed sync fails the batch, so the
// metadata server keeps its records and sends it again.
func TestRemoveBatchDurable(t *testing.T) {
	ctx := context.Background()
	s, mem, efs := memStore(t, StoreOptions{})
	ids := []uint64{0x101, 0x102, 0x2ff, 0x300}
	if _, err := s.CreateBatch(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveBatch(ctx, ids[:3]); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, afterCrash(t, mem)); !slices.Equal(got, []uint64{0x300}) {
		t.Fatalf("after removeBatch and a power cut: datafiles %#x, want [0x300]", got)
	}

	failedSyncIsSentAgain(t, s, mem, efs, func(ids []uint64) error { return s.RemoveBatch(ctx, ids) }, "data: remove batch")
}
