package data

import (
	"io/fs"
	"sync"
	"testing"

	"github.com/pario/pario/vfs"
)

// hookFS calls hook (once) before the first ReadDir of a shard
// directory, so that a test can act between a List's read of the
// shard's files and what it reads after.
type hookFS struct {
	vfs.FS
	h *readDirHook
}

type readDirHook struct {
	once sync.Once
	fn   func() // nil: none yet
}

func (h hookFS) OpenRoot(name string) (vfs.FS, error) {
	r, err := h.FS.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return hookFS{FS: r, h: h.h}, nil
}

func (h hookFS) ReadDir(name string) ([]fs.DirEntry, error) {
	des, err := h.FS.ReadDir(name)
	if h.h.fn != nil {
		h.h.once.Do(h.h.fn)
	}
	return des, err
}

// An unwritten datafile whose first write lands while List reads its
// shard is listed all the same: as unwritten or as the file the write
// made. Otherwise fsck, which lists under live writes, reports the file's
// datafile missing (lost data) when it is not.
func TestListSeesADatafileWrittenWhileItsShardIsRead(t *testing.T) {
	const id = 0x105
	var s *Store
	hook := &readDirHook{}
	var err error
	s, err = Open("memdir", StoreOptions{FS: hookFS{FS: vfs.NewMem(), h: hook}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, id); err != nil {
		t.Fatal(err)
	}
	hook.fn = func() {
		// The shard's files have been read: the first write makes the file.
		if err := s.WriteAt(ctx, id, []byte("first bytes"), 0); err != nil {
			t.Error(err)
		}
	}
	ents, _, done, err := s.List(ctx, ListPos(id), 0)
	if err != nil || !done {
		t.Fatalf("List: done %v, %v", done, err)
	}
	var found bool
	for _, e := range ents {
		found = found || e.ID == id
	}
	if !found {
		t.Fatalf("datafile %#x, made into a file while its shard was listed, is not listed: %v", id, ents)
	}
}
