package data

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"testing"

	"github.com/pario/pario/vfs"
	"github.com/pario/pario/vfs/errorfs"
)

// shardFiles lists the files in datafile id's shard directory of mem.
func shardFiles(t *testing.T, mem *vfs.MemFS, id uint64) []string {
	t.Helper()
	ents, err := mem.ReadDir(dfName + "/" + shardName(byte(id)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func logSize(t *testing.T, mem *vfs.MemFS) int64 {
	t.Helper()
	f, err := mem.OpenFile(unwrittenName, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A datafile made by CreateBatch or Create is a record until its first
// write: no file, size 0, listed, durable (CreateBatch at once, Create with
// its Sync). The first write makes the file, and only that datafile's.
func TestUnwrittenDatafiles(t *testing.T) {
	s, mem, _ := memStore(t, StoreOptions{})
	ids := []uint64{0x101, 0x201, 0x301}
	if _, err := s.CreateBatch(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, 0x401); err != nil {
		t.Fatal(err)
	}
	if got := shardFiles(t, mem, 0x01); len(got) != 0 {
		t.Fatalf("files in shard 01 before any write: %v, want none", got)
	}
	if got := listIDs(t, s); !slices.Equal(got, []uint64{0x101, 0x201, 0x301, 0x401}) {
		t.Fatalf("listed %#x, want the four made", got)
	}
	if n := mustSize(t, s, 0x101); n != 0 {
		t.Fatalf("size of an unwritten datafile: %d", n)
	}
	if n, err := s.ReadAt(ctx, 0x101, make([]byte, 10), 0); n != 0 || err == nil {
		t.Fatalf("read of an unwritten datafile: %d, %v; want 0, EOF", n, err)
	}
	for _, id := range append(ids, 0x401) {
		if err := s.Create(ctx, id); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("Create of unwritten %#x again: %v, want EEXIST", id, err)
		}
	}

	// Create's record is durable with the datafile's Sync.
	if got := listIDs(t, afterCrash(t, mem)); !slices.Equal(got, ids) {
		t.Fatalf("after a crash: %#x, want the batch's %#x (Create's record was never synced)", got, ids)
	}
	if err := s.Sync(ctx, 0x401); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, afterCrash(t, mem)); !slices.Equal(got, []uint64{0x101, 0x201, 0x301, 0x401}) {
		t.Fatalf("after Sync and a crash: %#x, want all four", got)
	}

	mustWrite(t, s, 0x201, []byte("bytes"), 3)
	if got := shardFiles(t, mem, 0x01); !slices.Equal(got, []string{leafName(0x201)}) {
		t.Fatalf("files in shard 01 after writing 0x201: %v, want only its own", got)
	}
	if got := contents(t, s, 0x201); string(got) != "\x00\x00\x00bytes" {
		t.Fatalf("0x201 holds %q", got)
	}
	// The file made by the write is durable with its Sync, as a created
	// file's entry always was.
	if err := s.Sync(ctx, 0x201); err != nil {
		t.Fatal(err)
	}
	c := afterCrash(t, mem)
	if got := contents(t, c, 0x201); string(got) != "\x00\x00\x00bytes" {
		t.Fatalf("after Sync and a crash 0x201 holds %q", got)
	}
	if got := listIDs(t, c); !slices.Equal(got, []uint64{0x101, 0x201, 0x301, 0x401}) {
		t.Fatalf("after a crash: %#x, want all four", got)
	}
}

// Removing an unwritten datafile is recorded: a write after it is ESTALE,
// before and after a restart, so a write racing with the removal of its
// file cannot bring it back.
func TestUnwrittenRemovedIsStale(t *testing.T) {
	s, mem, _ := memStore(t, StoreOptions{})
	if _, err := s.CreateBatch(ctx, []uint64{7, 8}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveBatch(ctx, []uint64{7}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, afterCrash(t, mem)} {
		if err := st.WriteAt(ctx, 7, []byte("x"), 0); !errors.Is(err, ErrStale) {
			t.Fatalf("write to a removed unwritten datafile: %v, want ESTALE", err)
		}
		if err := st.Truncate(ctx, 7, 10); !errors.Is(err, ErrStale) {
			t.Fatalf("truncate of a removed unwritten datafile: %v, want ESTALE", err)
		}
		if got := listIDs(t, st); !slices.Equal(got, []uint64{8}) {
			t.Fatalf("listed %v, want [8]", got)
		}
	}
}

// A restart keeps unwritten datafiles, drops the records of those written
// since, and compacts the log to what is live; a torn last record is cut
// off. A running store compacts too, and what it drops was made durable
// first.
func TestUnwrittenLogReplayAndCompaction(t *testing.T) {
	s, mem, _ := memStore(t, StoreOptions{})
	var ids []uint64
	for id := uint64(1); id <= 40; id++ {
		ids = append(ids, id<<8|3)
	}
	if _, err := s.CreateBatch(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveBatch(ctx, ids[:10]); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, ids[10], []byte("data"), 0)
	if err := s.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, ids[11], []byte("late"), 0) // its file not durable at the restart
	before := logSize(t, mem)
	if want := int64(50 * unwRecSize); before != want {
		t.Fatalf("log of 40 made and 10 removed: %d bytes, want %d", before, want)
	}
	// A torn append: half a record at the end.
	f, err := mem.OpenFile(unwrittenName, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(encodeUnwritten(nil, unwMade, 0xdead03)[:7], before); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s.Close()
	s2, err := Open("again", StoreOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, want := listIDs(t, s2), ids[10:]; !slices.Equal(got, want) {
		t.Fatalf("after a restart: %#x, want %#x", got, want)
	}
	if got := contents(t, s2, ids[10]); string(got) != "data" {
		t.Fatalf("written datafile after a restart: %q", got)
	}
	if got, want := logSize(t, mem), int64(28*unwRecSize); got != want {
		t.Fatalf("log after a restart: %d bytes, want %d (the 28 unwritten)", got, want)
	}
	c := afterCrash(t, mem)
	if got := listIDs(t, c); !slices.Equal(got, ids[10:]) {
		t.Fatalf("crash after the compaction: %#x", got)
	}
	if got := contents(t, c, ids[11]); string(got) != "late" {
		t.Fatalf("crash after the compaction dropped the record of %#x: it holds %q", ids[11], got)
	}

	// A running store: past the slack, the records of removed ids and of
	// ids made into files go; those files must survive a crash.
	defer func(v int64) { unwCompactSlack = v }(unwCompactSlack)
	unwCompactSlack = 100
	kept := []uint64{0x20005, 0x20105, 0x20205}
	if _, err := s2.CreateBatch(ctx, kept); err != nil {
		t.Fatal(err)
	}
	for _, id := range kept {
		mustWrite(t, s2, id, []byte("w"), 0) // made, not synced
	}
	for i := range uint64(300) {
		id := 0x30000 + i<<8 | 5
		if _, err := s2.CreateBatch(ctx, []uint64{id}); err != nil {
			t.Fatal(err)
		}
		if err := s2.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := logSize(t, mem); got > (4*31+100+2)*unwRecSize {
		t.Fatalf("log of a running store: %d bytes, not compacted", got)
	}
	c = afterCrash(t, mem)
	for _, id := range kept {
		if got := contents(t, c, id); string(got) != "w" {
			t.Fatalf("after compaction and a crash %#x holds %q, want the write its record's drop made durable", id, got)
		}
	}
}

// A log append that fails is cut back off, so later records are not
// written after garbage; a failed sync fails CreateBatch, cancels its
// records, and is retried by the next sync.
func TestUnwrittenLogFailures(t *testing.T) {
	s, mem, efs := memStore(t, StoreOptions{})
	efs.Add(&errorfs.Rule{Op: errorfs.OpWrite, Path: unwrittenName, Nth: 1, Err: eio})
	_, err := s.CreateBatch(ctx, []uint64{1, 2})
	wantErr(t, err, "data: create batch of 2", "append")
	efs.Clear()
	if got := logSize(t, mem); got != 0 {
		t.Fatalf("log after a failed append: %d bytes, want 0", got)
	}
	efs.Add(&errorfs.Rule{Op: errorfs.OpSync, Path: unwrittenName, Nth: 1, Err: eio})
	_, err = s.CreateBatch(ctx, []uint64{1, 2})
	wantErr(t, err, "data: create batch of 2", "sync")
	efs.Clear()
	if got := listIDs(t, s); len(got) != 0 {
		t.Fatalf("datafiles after a failed batch: %#x, want none", got)
	}
	if err := s.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, afterCrash(t, mem)); len(got) != 0 {
		t.Fatalf("a failed batch's datafiles came back after a crash: %#x", got)
	}
	if existed, err := s.CreateBatch(ctx, []uint64{1, 2}); err != nil || len(existed) != 0 {
		t.Fatalf("the batch sent again: existed %v, %v", existed, err)
	}
	if got := listIDs(t, afterCrash(t, mem)); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("after the batch sent again and a crash: %#x", got)
	}
}

// An id made again after its file was unlinked (never done by pario,
// which hands out each id once, but a store must not depend on it) does
// not find the old file back after a crash.
func TestUnwrittenAfterUnsyncedUnlink(t *testing.T) {
	s, mem, _ := memStore(t, StoreOptions{})
	mustWrite(t, s, 9, []byte("old"), 0)
	if err := s.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, 9); err != nil { // not durable by itself
		t.Fatal(err)
	}
	if _, err := s.CreateBatch(ctx, []uint64{9}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, afterCrash(t, mem), 9); got != nil {
		t.Fatalf("after a crash the new datafile 9 holds the old one's %q", got)
	}
}

// FuzzUnwrittenLog opens a store whose log holds arbitrary bytes: it
// opens (the valid records before the first bad one count, the rest is
// cut off) or fails with an error, and never panics.
func FuzzUnwrittenLog(f *testing.F) {
	f.Add([]byte{})
	f.Add(encodeUnwritten(encodeUnwritten(nil, unwMade, 0x105), unwRemoved, 0x105))
	f.Add(append(encodeUnwritten(nil, unwMade, 0x2ff), 1, 2, 3))
	f.Add(encodeUnwritten(nil, 'x', 7))
	f.Fuzz(func(t *testing.T, log []byte) {
		mem := vfs.NewMem()
		claimed(t, mem)
		lf, err := mem.OpenFile(unwrittenName, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lf.WriteAt(log, 0); err != nil {
			t.Fatal(err)
		}
		lf.Close()
		s, err := Open("fuzz", StoreOptions{FS: mem})
		if err != nil {
			t.Skip(err)
		}
		defer s.Close()
		want := map[uint64]bool{}
		decodeUnwritten(log, func(kind byte, id uint64) { want[id] = kind == unwMade })
		for _, id := range listIDs(t, s) {
			if !want[id] {
				t.Fatalf("listed %#x, which the log does not hold live", id)
			}
		}
	})
}
