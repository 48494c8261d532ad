package data

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
)

// DatafileInfo is one datafile as List reports it.
type DatafileInfo struct {
	ID    uint64
	Size  int64 // apparent size in bytes
	Mtime int64 // last modification, unix nanoseconds (the server's clock)
}

// MaxListPage bounds the datafiles one List call returns, whatever the
// caller asks: 16384 entries of 24 bytes stay well inside a frame's
// argument section.
const MaxListPage = 16384

// ListPos is the position of datafile id in List's order: shard (the id's
// low byte) first, then id. It is id rotated right by 8 bits, so positions
// and ids map one to one and a caller can resume after any id.
func ListPos(id uint64) uint64 { return id>>8 | id<<56 }

// List returns up to max datafiles (at most MaxListPage) at positions
// from (see ListPos) onwards, in position order, and the position to
// continue from; done says there are no more. It reads one shard
// directory at a time, so its memory is bounded by the largest shard, not
// the store. Entries whose names are not datafile names (16 lower-case hex
// digits of an id whose low byte is the shard's) are skipped, as are
// datafiles removed while the page was read. Unwritten datafiles
// (unwritten.go) are listed with size 0 and the time they were recorded
// (at the I/O server's start, for those recorded before it). A datafile
// written for the first time while its shard is read is listed once.
func (s *Store) List(ctx context.Context, from uint64, max int) (ents []DatafileInfo, next uint64, done bool, err error) {
	if err := s.begin(ctx); err != nil {
		return nil, 0, false, fmt.Errorf("data: list datafiles: %w", err)
	}
	defer s.ops.Done()
	if max <= 0 || max > MaxListPage {
		max = MaxListPage
	}
	for i := int(from >> 56); i < 256; i++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, false, fmt.Errorf("data: list datafiles: %w", err)
		}
		sh, err := s.shard(uint64(i))
		if err != nil {
			return nil, 0, false, fmt.Errorf("data: list datafiles: %w", err)
		}
		// The unwritten set is read before the directory: a first write
		// makes the file, then drops the id from the set, so an id read
		// in neither order would be one written in between, and fsck
		// would call a live file's datafile missing.
		unw := s.unwrittenIn(byte(i))
		des, err := sh.ReadDir(".")
		if err != nil {
			return nil, 0, false, fmt.Errorf("data: list datafiles: %s/%s: %w", dfName, shardName(byte(i)), err)
		}
		type leaf struct {
			id    uint64
			de    fs.DirEntry // nil: unwritten, recorded at mtime
			mtime int64
		}
		var leaves []leaf
		for _, de := range des {
			id, ok := parseLeaf(de.Name())
			if ok && byte(id) == byte(i) && de.Type().IsRegular() && ListPos(id) >= from {
				leaves = append(leaves, leaf{id: id, de: de})
			}
		}
		for id, at := range unw {
			if ListPos(id) >= from {
				leaves = append(leaves, leaf{id: id, mtime: at})
			}
		}
		// By id, and the file before the unwritten record of the same id
		// (made into a file while the shard was read): it has the size.
		slices.SortFunc(leaves, func(a, b leaf) int {
			return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(boolInt(a.de == nil), boolInt(b.de == nil)))
		})
		for j, l := range leaves {
			id := l.id
			if j > 0 && leaves[j-1].id == id {
				continue // made into a file while the shard was read
			}
			if len(ents) == max {
				return ents, ListPos(id), false, nil
			}
			if l.de == nil {
				ents = append(ents, DatafileInfo{ID: id, Mtime: l.mtime})
				continue
			}
			fi, err := l.de.Info() // lstat relative to the shard
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while the page was read
			}
			if err != nil {
				return nil, 0, false, fmt.Errorf("data: list datafiles: %w", dfErr(id, "stat", err))
			}
			ents = append(ents, DatafileInfo{ID: id, Size: fi.Size(), Mtime: fi.ModTime().UnixNano()})
		}
	}
	return ents, 0, true, nil
}

// parseLeaf reads a datafile's name (16 lower-case hex digits, leafName) back into
// its id.
func parseLeaf(name string) (uint64, bool) {
	if len(name) != 16 {
		return 0, false
	}
	for _, c := range []byte(name) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, false
		}
	}
	id, err := strconv.ParseUint(name, 16, 64)
	return id, err == nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
