package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/pario/pario/vfs"
)

// Unwritten datafiles.
//
// A datafile that Create or CreateBatch made and nobody has written since
// is only a record in DIR/UNWRITTEN, not a file: it reads as empty, has
// size 0, is listed, counted and removed like any datafile, and its first
// write (or truncate) makes the file, under the id's lock. Why: a file
// costs an inode on every server it is striped over before its first
// byte, and an inode is the dearest thing a create does (ext4 spends
// 100-300 us of CPU allocating one on a disk that has seen many removes,
// scanning for recently deleted inodes it must not reuse). An empty file,
// and the precreated pools the metadata server keeps, now cost a 13-byte
// record on each server; a small file an inode on the servers its bytes
// reach, not on all of them.
//
// The store's rule that only a create makes datafiles still holds: a write
// makes the file only for an id recorded here, and Remove records the
// removal, so a write racing with the removal of its file fails with
// ESTALE as before.
//
// The log is a sequence of fixed-size records: a kind ('+' made, '-'
// removed), the id (little endian) and the CRC32C of both. Create appends
// without syncing (its record becomes durable with the datafile's first
// Sync, or SyncAll, as a created file's directory entry did);
// CreateBatch, RemoveBatch and RemoveIfEmpty fdatasync the log before
// they answer. Open replays it, stopping at the first record that is
// short or fails its CRC (a torn append; the rest is cut off), drops ids
// whose file exists (written before the restart), and rewrites the log
// with the live records when that makes it shorter. A running store
// rewrites it the same way once it holds far more records than live ids,
// after a syncfs, because the records it then drops are those of ids
// whose files were made since, and a crash must not lose both.
//
// A failed sync is retried by the next, as for datafiles. An append that
// fails and cannot be cut back off the log leaves its end unknown, so
// every later operation that needs the log fails with the error until the
// I/O server is restarted; datafiles already written are not affected.

// unwrittenName is the log of unwritten datafiles, in the data directory.
const unwrittenName = "UNWRITTEN"

const (
	unwRecSize = 13 // kind, id, CRC32C
	unwMade    = '+'
	unwRemoved = '-'
)

// unwCompactSlack: a running store compacts its log once it holds more
// than 4*live + unwCompactSlack records (a variable for tests).
var unwCompactSlack int64 = 1 << 16

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// unwritten is the set of unwritten datafiles and its log.
type unwritten struct {
	mu sync.Mutex
	// ids holds the unwritten datafiles (no file exists), by shard (the
	// id's low byte) for List, with the time each was recorded (unix ns):
	// its mtime for List, so fsck's grace period applies to new ones.
	ids   [256]map[uint64]int64
	count int
	// logged holds the ids with a '+' record and no '-' record after it
	// in the log: the unwritten ones and those made into files since.
	logged  map[uint64]struct{}
	f       vfs.File
	size    int64 // bytes of f
	records int64 // records in f
	dirty   bool  // appended since the last sync
	broken  error // sticky: a failed append, truncate or sync
	// pending holds '-' records (pendingN of them) not written yet: a
	// removal needs its record only once it is made durable, so a batch
	// of removals writes all of theirs at once (appendUnwrittenLocked,
	// which writes them before anything else).
	pending  []byte
	pendingN int64
}

// unwPendingMax bounds the bytes of '-' records held before they are
// written.
const unwPendingMax = 64 << 10

func (u *unwritten) has(id uint64) bool {
	_, ok := u.ids[byte(id)][id]
	return ok
}

func (u *unwritten) add(id uint64, at int64) {
	m := u.ids[byte(id)]
	if m == nil {
		m = make(map[uint64]int64)
		u.ids[byte(id)] = m
	}
	if _, ok := m[id]; !ok {
		u.count++
	}
	m[id] = at
	u.logged[id] = struct{}{}
}

func (u *unwritten) drop(id uint64) bool {
	if _, ok := u.ids[byte(id)][id]; !ok {
		return false
	}
	delete(u.ids[byte(id)], id)
	u.count--
	return true
}

func encodeUnwritten(b []byte, kind byte, id uint64) []byte {
	var r [unwRecSize]byte
	r[0] = kind
	binary.LittleEndian.PutUint64(r[1:9], id)
	binary.LittleEndian.PutUint32(r[9:], crc32.Checksum(r[:9], crc32c))
	return append(b, r[:]...)
}

// decodeUnwritten reads the records of log b in order until the first one
// that is short or corrupt, calling f for each, and returns the bytes that
// were whole records.
func decodeUnwritten(b []byte, f func(kind byte, id uint64)) (good int64) {
	for len(b) >= unwRecSize {
		r := b[:unwRecSize]
		if binary.LittleEndian.Uint32(r[9:]) != crc32.Checksum(r[:9], crc32c) || r[0] != unwMade && r[0] != unwRemoved {
			break
		}
		f(r[0], binary.LittleEndian.Uint64(r[1:9]))
		b = b[unwRecSize:]
		good += unwRecSize
	}
	return good
}

// openUnwritten loads the log at Open (creating it if missing) and
// compacts it when it holds more than its live records.
func (s *Store) openUnwritten() error {
	u := &s.unw
	u.logged = make(map[uint64]struct{})
	f, err := s.root.OpenFile(unwrittenName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", unwrittenName, err)
	}
	u.f = f
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", unwrittenName, err)
	}
	b := make([]byte, fi.Size())
	if n, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return fmt.Errorf("%s: read: %w", unwrittenName, err)
	}
	now := time.Now().UnixNano()
	var records int64
	good := decodeUnwritten(b, func(kind byte, id uint64) {
		records++
		if kind == unwMade {
			u.add(id, now)
		} else {
			u.drop(id)
			delete(u.logged, id)
		}
	})
	u.size, u.records = good, records
	if good < int64(len(b)) {
		// An append a crash cut short leaves this; so would a damaged
		// disk, whose lost records then show as missing datafiles.
		slog.Warn("pario data: the log of unwritten datafiles ends in an incomplete record; cutting it off",
			"dir", s.dir, "file", unwrittenName, "offset", good, "bytes", int64(len(b))-good)
	}
	// Ids whose file exists were written before the restart.
	madeSince := false
	for id := range u.logged {
		// Through the df root, not s.shard, as scanIDs does: Open must
		// not pin shard descriptors the server may never need.
		g, err := s.df.OpenFile(shardName(byte(id))+"/"+leafName(id), os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: datafile %016x: %w", unwrittenName, id, err)
		}
		_ = g.Close()
		u.drop(id)
		madeSince = true
	}
	if good < int64(len(b)) || records > int64(u.count) {
		if madeSince {
			// Their records go; their files must not be lost with them.
			if err := s.syncFSLocked(); err != nil {
				return fmt.Errorf("%s: compact: %w", unwrittenName, err)
			}
		}
		if err := s.compactUnwrittenLocked(); err != nil {
			return err
		}
	}
	return nil
}

// compactUnwrittenLocked rewrites the log with one record per unwritten
// datafile (a new file, synced, then renamed over the old one). Files
// made from ids it drops must be durable already. Holds u.mu (or runs
// before the store is shared).
func (s *Store) compactUnwrittenLocked() error {
	u := &s.unw
	tmp := unwrittenName + ".tmp"
	b := make([]byte, 0, u.count*unwRecSize)
	for i := range u.ids {
		for id := range u.ids[i] {
			b = encodeUnwritten(b, unwMade, id)
		}
	}
	f, err := s.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("%s: compact: %w", unwrittenName, err)
	}
	fail := func(err error) error {
		_ = f.Close()
		_ = s.root.Remove(tmp)
		return fmt.Errorf("%s: compact: %w", unwrittenName, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := s.root.Rename(tmp, unwrittenName); err != nil {
		return fail(err)
	}
	if err := syncDir(s.root); err != nil {
		// The rename may or may not survive a crash; either file holds
		// every unwritten datafile, so both are right.
		_ = f.Close()
		return fmt.Errorf("%s: compact: %w", unwrittenName, err)
	}
	if u.f != nil {
		_ = u.f.Close()
	}
	u.f, u.size, u.records, u.dirty = f, int64(len(b)), int64(u.count), false
	u.pending, u.pendingN = u.pending[:0], 0 // what they removed is not in b
	clear(u.logged)
	for i := range u.ids {
		for id := range u.ids[i] {
			u.logged[id] = struct{}{}
		}
	}
	return nil
}

// appendUnwrittenLocked appends records b (n of them) to the log, and
// syncs it with sync. A failed append is cut back off the log; if that
// fails too, the log's end is unknown and the failure is sticky. Holds
// u.mu.
func (s *Store) appendUnwrittenLocked(b []byte, n int64, sync bool) error {
	u := &s.unw
	if u.broken != nil {
		return u.broken
	}
	flushed := len(u.pending) > 0
	if flushed {
		b = append(u.pending[:len(u.pending):len(u.pending)], b...)
		n += u.pendingN
	}
	if len(b) > 0 {
		if _, err := u.f.WriteAt(b, u.size); err != nil {
			if terr := u.f.Truncate(u.size); terr != nil {
				u.broken = fmt.Errorf("%s: append: %w (and cutting it back: %v); restart the I/O server", unwrittenName, err, terr)
				return u.broken
			}
			return fmt.Errorf("%s: append: %w", unwrittenName, err)
		}
		u.size += int64(len(b))
		u.records += n
		u.dirty = true
		if flushed {
			u.pending, u.pendingN = u.pending[:0], 0
		}
	}
	if sync && u.dirty {
		// A failed sync is retried by the next one, as the store does
		// for datafiles; the records stay dirty until one succeeds.
		if err := u.f.Sync(); err != nil {
			return fmt.Errorf("%s: sync: %w", unwrittenName, err)
		}
		u.dirty = false
	}
	return nil
}

// recordUnwritten records ids as unwritten datafiles, durably with sync.
// The caller has checked that none exists.
func (s *Store) recordUnwritten(ids []uint64, sync bool) error {
	b := make([]byte, 0, len(ids)*unwRecSize)
	for _, id := range ids {
		b = encodeUnwritten(b, unwMade, id)
	}
	u := &s.unw
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := s.appendUnwrittenLocked(b, int64(len(ids)), false); err != nil {
		return err
	}
	if sync {
		if err := s.appendUnwrittenLocked(nil, 0, true); err != nil {
			// The records may be durable or not: cancel them, so that
			// a restart does not find datafiles nobody was told of.
			var undo []byte
			for _, id := range ids {
				undo = encodeUnwritten(undo, unwRemoved, id)
			}
			_ = s.appendUnwrittenLocked(undo, int64(len(ids)), false)
			return err
		}
	}
	now := time.Now().UnixNano()
	for _, id := range ids {
		u.add(id, now)
	}
	return s.maybeCompactLocked()
}

// maybeCompactLocked compacts the log once it holds far more records
// than live ids. Holds u.mu.
func (s *Store) maybeCompactLocked() error {
	u := &s.unw
	if u.records <= 4*int64(len(u.logged))+unwCompactSlack {
		return nil
	}
	// The logged ids that are files now lose their records: make their
	// directory entries durable first.
	if len(u.logged) > u.count {
		if err := s.syncFSLocked(); err != nil {
			return fmt.Errorf("%s: compact: %w", unwrittenName, err)
		}
	}
	if err := s.compactUnwrittenLocked(); err != nil {
		u.broken = fmt.Errorf("%w; restart the I/O server", err)
		return u.broken
	}
	return nil
}

// isUnwritten reports whether id is an unwritten datafile.
func (s *Store) isUnwritten(id uint64) bool {
	s.unw.mu.Lock()
	defer s.unw.mu.Unlock()
	return s.unw.has(id)
}

// madeFile notes that unwritten datafile id is a file now. Its record
// stays: the file's directory entry is not durable yet. Holds id's lock.
func (s *Store) madeFile(id uint64) {
	s.unw.mu.Lock()
	s.unw.drop(id)
	s.unw.mu.Unlock()
}

// forgetUnwritten records that datafile id is removed if the log holds a
// record of it (without syncing), and reports whether it was unwritten.
// Holds id's lock.
func (s *Store) forgetUnwritten(id uint64) (wasUnwritten bool, err error) {
	u := &s.unw
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.logged[id]; !ok {
		return false, nil
	}
	if u.broken != nil {
		return false, u.broken
	}
	u.pending = encodeUnwritten(u.pending, unwRemoved, id)
	u.pendingN++
	if len(u.pending) >= unwPendingMax {
		if err := s.appendUnwrittenLocked(nil, 0, false); err != nil {
			// Written or not, the record is in pending until it is.
			return false, err
		}
	}
	delete(u.logged, id)
	return u.drop(id), nil
}

// closeUnwritten writes the records not written yet and closes the log.
func (s *Store) closeUnwritten() error {
	u := &s.unw
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil {
		return nil
	}
	err := s.appendUnwrittenLocked(nil, 0, false)
	if cerr := u.f.Close(); err == nil {
		err = cerr
	}
	u.f = nil
	return err
}

// syncUnwritten makes every record appended so far durable.
func (s *Store) syncUnwritten() error {
	u := &s.unw
	u.mu.Lock()
	defer u.mu.Unlock()
	return s.appendUnwrittenLocked(nil, 0, true)
}

// unwrittenIn returns the unwritten datafiles of shard i with their
// record times.
func (s *Store) unwrittenIn(i byte) map[uint64]int64 {
	u := &s.unw
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.ids[i]) == 0 {
		return nil
	}
	m := make(map[uint64]int64, len(u.ids[i]))
	for id, at := range u.ids[i] {
		m[id] = at
	}
	return m
}

// unwrittenMax returns how many unwritten datafiles there are and the
// highest id the log holds. It walks every logged id: for Open and
// Claim, not for every Statfs (UnwrittenStats counts in constant time).
func (s *Store) unwrittenMax() (count int, maxID uint64) {
	u := &s.unw
	u.mu.Lock()
	defer u.mu.Unlock()
	for id := range u.logged {
		maxID = max(maxID, id)
	}
	return u.count, maxID
}

// UnwrittenStats reports the unwritten datafiles (unwritten.go), the bytes
// of their log, and whether the log is broken (an append that could not
// be cut back off: every create fails until the I/O server restarts).
func (s *Store) UnwrittenStats() (count uint64, logBytes int64, broken bool) {
	u := &s.unw
	u.mu.Lock()
	defer u.mu.Unlock()
	return uint64(u.count), u.size, u.broken != nil
}
