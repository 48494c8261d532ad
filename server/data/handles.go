package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	"github.com/pario/pario/vfs"
)

// handle is an open datafile shared by the operations using it.
//
// A handle lives in Store.handles (and the LRU list) while cached. Eviction
// takes it out of the cache; its file is closed once no operation holds a
// reference (refs == 0), so an operation never sees its descriptor closed
// underneath it.
type handle struct {
	id uint64
	f  vfs.File

	// Guarded by Store.mu.
	refs       int
	cached     bool    // in Store.handles and the LRU list
	removed    bool    // its datafile was removed; dirty data does not matter
	prev, next *handle // LRU list around Store.lru; lru.next is the most recent

	// dirty is set after every write or truncate through this handle and
	// cleared just before an fdatasync of it.
	dirty atomic.Bool

	// Write-behind accounting: bytes written and the range they span since
	// the last writeback kick.
	wbMu      sync.Mutex
	wbPending int64
	wbLo      int64
	wbHi      int64
}

// lruRemoveLocked takes h out of the LRU list.
func (s *Store) lruRemoveLocked(h *handle) {
	h.prev.next = h.next
	h.next.prev = h.prev
	h.prev, h.next = nil, nil
}

// lruPushFrontLocked makes h the most recently used handle.
func (s *Store) lruPushFrontLocked(h *handle) {
	h.prev = &s.lru
	h.next = s.lru.next
	s.lru.next.prev = h
	s.lru.next = h
}

// lookup returns the cached handle of id with a reference taken, or nil.
func (s *Store) lookup(id uint64) *handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.handles[id]
	if h == nil {
		return nil
	}
	h.refs++
	if s.lru.next != h {
		s.lruRemoveLocked(h)
		s.lruPushFrontLocked(h)
	}
	return h
}

// acquire returns the handle of datafile id with a reference taken, or
// (nil, nil) if the datafile is unwritten (it reads as empty); release it
// with s.release. A datafile that does not exist is ErrStale: only Create
// and CreateBatch make one, so its file was removed (or, after a crash
// before its first sync, lost), and reading it as empty would hand a
// reader a short file without an error.
func (s *Store) acquire(id uint64) (*handle, error) {
	return s.acquireMaking(id, false)
}

// acquireMaking is acquire that, with makeFile, makes the file of an
// unwritten datafile.
func (s *Store) acquireMaking(id uint64, makeFile bool) (*handle, error) {
	if h := s.lookup(id); h != nil {
		return h, nil
	}
	// Opening, creating and removing datafile id are serialized by its id
	// lock, so a handle is never cached for a file Remove has unlinked and
	// two openers of one id do not both insert.
	l := s.idLock(id)
	l.Lock()
	defer l.Unlock()
	if h := s.lookup(id); h != nil {
		return h, nil
	}
	sh, err := s.shard(id)
	if err != nil {
		return nil, err
	}
	if s.isUnwritten(id) {
		// No file (unwritten.go): reads and sizes need no open that
		// fails; a write makes it.
		if !makeFile {
			return nil, nil
		}
		f, err := sh.OpenFile(leafName(id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, err
		}
		s.madeFile(id)
		return s.cacheLocked(id, f, true), nil
	}
	f, err := sh.OpenFile(leafName(id), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrStale
	}
	if err != nil {
		return nil, err
	}
	return s.cacheLocked(id, f, false), nil
}

// acquireExisting is acquire for operations that change a datafile: it
// makes the file of an unwritten one, so the handle is never nil.
func (s *Store) acquireExisting(id uint64) (*handle, error) {
	return s.acquireMaking(id, true)
}

// cacheLocked caches the handle of f, just opened (or, with created, just
// created) under id's lock, and returns it with a reference taken.
func (s *Store) cacheLocked(id uint64, f vfs.File, created bool) *handle {
	h := &handle{id: id, f: f, refs: 1, cached: true}
	s.mu.Lock()
	if created {
		s.createGen++
		s.needDirSync[id] = s.createGen
	}
	s.handles[id] = h
	s.lruPushFrontLocked(h)
	victims := s.evictLocked()
	s.mu.Unlock()
	for _, v := range victims {
		_ = v.f.Close()
	}
	return h
}

// evictLocked takes handles out of the cache until it holds at most
// maxOpen, preferring the least recently used idle ones, and returns the
// idle ones for the caller to close after unlocking. Busy victims are
// closed by their last release.
func (s *Store) evictLocked() []*handle {
	var idle []*handle
	for len(s.handles) > s.maxOpen {
		v := s.lru.prev
		for c := s.lru.prev; c != &s.lru; c = c.prev {
			if c.refs == 0 {
				v = c
				break
			}
		}
		s.uncacheLocked(v)
		if v.refs == 0 {
			s.noteClosingLocked(v)
			idle = append(idle, v)
		}
	}
	return idle
}

// uncacheLocked takes h out of the cache. While operations still use it,
// it stays in s.busy so SyncAll can find its dirty data.
func (s *Store) uncacheLocked(h *handle) {
	delete(s.handles, h.id)
	s.lruRemoveLocked(h)
	h.cached = false
	if h.refs > 0 {
		s.busy[h] = struct{}{}
	}
}

// noteClosingLocked records, for SyncAll, that dirty data is about to lose
// its open handle.
func (s *Store) noteClosingLocked(h *handle) {
	if h.dirty.Load() && !h.removed {
		s.closedDirty = true
	}
}

// release drops a reference taken by acquire or lookup, closing the file
// of an uncached handle when its last user is done.
func (s *Store) release(h *handle) {
	s.mu.Lock()
	h.refs--
	closeNow := h.refs == 0 && !h.cached
	if closeNow {
		delete(s.busy, h)
		s.noteClosingLocked(h)
	}
	s.mu.Unlock()
	if closeNow {
		_ = h.f.Close()
	}
}

// idLock returns the lock serializing open, create and remove of id.
func (s *Store) idLock(id uint64) *sync.Mutex {
	return &s.idLocks[(id^id>>8)%uint64(len(s.idLocks))]
}

// shard returns the root of shard directory df/XX holding datafile id,
// opening it on first use. A shard that cannot be opened (for example a
// symlink leading out of the data directory) fails every operation on its
// datafiles and leaves the other shards working.
func (s *Store) shard(id uint64) (vfs.FS, error) {
	i := byte(id)
	if r := s.shards[i].Load(); r != nil {
		return *r, nil
	}
	s.shardMu.Lock()
	defer s.shardMu.Unlock()
	if r := s.shards[i].Load(); r != nil {
		return *r, nil
	}
	r, err := s.df.OpenRoot(shardName(i))
	if err != nil {
		return nil, fmt.Errorf("shard %s/%s: %w", dfName, shardName(i), err)
	}
	s.shards[i].Store(&r)
	return r, nil
}
