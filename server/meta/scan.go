package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
)

// MaxScanPage bounds the records (inodes, directory entries, bad records)
// one Scan call returns, whatever the caller asks.
const MaxScanPage = 4096

// scanPageBytes bounds a page's encoded size, well inside a frame's
// 1 MiB argument section even for inodes with many servers.
const scanPageBytes = 512 << 10

// Dirent is one directory entry as Scan reports it: name Name in
// directory Parent names Child.
type Dirent struct {
	Parent FileID
	Name   string
	Child  FileID
}

// ScanPage is one page of a scan of the whole database (see Scan).
type ScanPage struct {
	// Inodes are the decodable inodes of this page, files and directories.
	Inodes []Attr
	// Dirents are directory entries, once every inode has been listed.
	Dirents []Dirent
	// Bad describes records that do not decode, one line each.
	Bad []string
	// Pooled are precreated datafiles no file has taken yet (pool.go),
	// listed once every directory entry has been, and, on the last page,
	// datafiles a create, reservation or layout change has made and not
	// committed yet (an ID may then be listed twice).
	Pooled []Pooled
	// Pending are removed files whose datafiles the reaper has still to
	// remove (reaper.go), listed after the pool.
	Pending []PendingRemoval
	// NextID is the next FileID the server will hand out, as of this page.
	NextID FileID
	// Cookie continues the scan; Done says there is nothing more.
	Cookie []byte
	Done   bool
}

// Pooled is a precreated datafile ID and the servers it has datafiles on.
type Pooled struct {
	ID      FileID
	Servers []uint32
}

// Scan cookies: one byte naming the bucket (inodes, dirents, pool, then removals)
// and the last key returned from it. An empty cookie starts the scan.
const (
	scanInodes   byte = 0
	scanDirents  byte = 1
	scanPool     byte = 2
	scanRemovals byte = 3
)

// PoolCookie is the Scan cookie that starts at the precreate pool's
// records (then the pending removals), skipping every inode and entry.
func PoolCookie() []byte { return []byte{scanPool} }

// Scan returns one page of every record of the namespace: all inodes (in
// ID order), then all directory entries (by parent and name), at most max
// records (at most MaxScanPage, and about 512 KiB) per page, continuing
// after cookie. Each page is its own read transaction, so a scan under a
// live workload sees each record as of the page that held it; IDs at or
// above the first page's NextID belong to entries created during the scan.
// Records that do not decode are reported in Bad, not as errors, so that
// fsck can name them.
func (s *Store) Scan(ctx context.Context, cookie []byte, max int) (ScanPage, error) {
	if err := ctx.Err(); err != nil {
		return ScanPage{}, fmt.Errorf("meta: scan: %w", err)
	}
	if max <= 0 || max > MaxScanPage {
		max = MaxScanPage
	}
	phase, after := scanInodes, []byte(nil)
	if len(cookie) > 0 {
		phase, after = cookie[0], cookie[1:]
		if phase > scanRemovals {
			return ScanPage{}, fmt.Errorf("meta: scan: bad cookie %x: %w", cookie, syscall.EINVAL)
		}
	}
	var p ScanPage
	err := s.db.View(func(tx *bbolt.Tx) error {
		t := newTxn(tx)
		p.NextID = FileID(t.counter(keyNextID))
		n, size := 0, 0
		for ; phase <= scanRemovals; phase, after = phase+1, nil {
			b := t.inodes
			switch phase {
			case scanDirents:
				b = t.dirents
			case scanPool:
				b = tx.Bucket(bucketPool)
			case scanRemovals:
				b = tx.Bucket(bucketRemovals)
			}
			c := b.Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			prev := after
			for ; k != nil; k, v = c.Next() {
				if n >= max || size >= scanPageBytes {
					// Resume after the last key this page holds.
					p.Cookie = append([]byte{phase}, prev...)
					return nil
				}
				n++
				size += len(k) + len(v) + 16
				p.add(phase, k, v)
				prev = k
			}
		}
		p.Done = true
		return nil
	})
	if err != nil {
		return ScanPage{}, fmt.Errorf("meta: scan: %w", err)
	}
	if p.Done {
		// Datafiles being made for a create, a reservation or a layout
		// change whose commit has not landed: no record names them yet,
		// and the grace period is all that would keep fsck from them.
		p.Pooled = append(p.Pooled, s.makingNow()...)
	}
	return p, nil
}

// add appends the record k, v of phase's bucket to the page.
func (p *ScanPage) add(phase byte, k, v []byte) {
	if phase == scanPool {
		srvs, err := decodeServers(v)
		if len(k) != 8 || err != nil {
			p.Bad = append(p.Bad, fmt.Sprintf("precreate pool record %x: %x", k, v))
			return
		}
		p.Pooled = append(p.Pooled, Pooled{ID: FileID(binary.BigEndian.Uint64(k)), Servers: srvs})
		return
	}
	if phase == scanInodes {
		if len(k) != 8 {
			p.Bad = append(p.Bad, fmt.Sprintf("inode record with a %d-byte key %x", len(k), k))
			return
		}
		id := binary.BigEndian.Uint64(k)
		a, err := decodeAttr(v)
		switch {
		case err != nil:
			p.Bad = append(p.Bad, fmt.Sprintf("inode %d: %v", id, err))
		case uint64(a.ID) != id:
			p.Bad = append(p.Bad, fmt.Sprintf("inode %d: record holds ID %d", id, a.ID))
		default:
			p.Inodes = append(p.Inodes, a)
		}
		return
	}
	if phase == scanRemovals {
		rm, err := decodeRemoval(k, v)
		if err != nil {
			p.Bad = append(p.Bad, err.Error())
			return
		}
		p.Pending = append(p.Pending, PendingRemoval{ID: rm.ID, Servers: rm.Servers})
		return
	}
	switch {
	case len(k) < 8:
		p.Bad = append(p.Bad, fmt.Sprintf("directory entry with a %d-byte key %x", len(k), k))
	case len(v) != 8:
		p.Bad = append(p.Bad, fmt.Sprintf("directory entry %q in %d: %d-byte child ID", k[8:], binary.BigEndian.Uint64(k), len(v)))
	default:
		p.Dirents = append(p.Dirents, Dirent{
			Parent: FileID(binary.BigEndian.Uint64(k)), Name: string(k[8:]),
			Child: FileID(binary.BigEndian.Uint64(v)),
		})
	}
}

// UnlinkDangling removes the directory entry name of directory parent if
// it still names child and child has no inode: fsck's repair of an entry
// that points nowhere, checked and done in one transaction so that it
// cannot remove an entry a concurrent create or rename just made. An entry
// that has gone is ENOENT; one that now names another ID, or whose child
// exists, is ESTALE (nothing is removed).
func (s *Store) UnlinkDangling(ctx context.Context, parent FileID, name string, child FileID) error {
	path := fmt.Sprintf("%s/%q", idPath(parent), name)
	if err := ctx.Err(); err != nil {
		return wrapErr("unlink dangling", path, err)
	}
	err := s.mutate(ctx, func(t *txn) error {
		got, ok, err := t.child(parent, name)
		if err != nil {
			return err
		}
		if !ok {
			return syscall.ENOENT
		}
		if got != child {
			return fmt.Errorf("entry now names %d, not %d: %w", got, child, syscall.ESTALE)
		}
		if t.inodes.Get(idKey(child)) != nil {
			return fmt.Errorf("entry's inode %d exists: %w", child, syscall.ESTALE)
		}
		if err := t.dirents.Delete(direntKey(parent, name)); err != nil {
			return err
		}
		if dir, err := t.get(parent); err == nil && dir.Kind == KindDir {
			return t.touchDir(&dir, time.Now().UnixNano())
		}
		return nil
	})
	return wrapErr("unlink dangling", path, err)
}
