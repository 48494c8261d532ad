package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
)

// Deferred durability: a namespace change is answered once its bbolt
// transaction is written to meta.db (in the page cache), and made
// durable (fdatasync) within SyncInterval, or at once where something
// outside meta.db is about to depend on it. This is the rule of local
// file systems (ext4 commits its journal every 5 s) and of Lustre's
// metadata servers, which answer before they commit:
//
//   - A kill -9 of the metadata server loses nothing it answered: every
//     answered transaction was written, and the kernel keeps what a
//     process wrote when the process dies.
//   - A power cut (or a kernel crash) loses at most the changes of the
//     last SyncInterval, and meta.db comes back as it was at its last
//     durable point: never half a change, never damaged.
//
// bbolt with NoSync alone would not survive a power cut: a commit writes
// new pages, then its meta page, and without fsyncs the kernel may write
// the meta page back before the pages it points to; and the next commits
// may reuse pages that the last synced commit still points to. Two things
// close that:
//
//   - The anchor: a read transaction held open at the last durable
//     transaction. bbolt never reuses a page that an open read
//     transaction can see, and never writes a page in place (copy on
//     write), so every page the durable transaction reaches stays on
//     disk as it was synced, whatever later commits do.
//   - The checkpoint file (meta.db.synced): a copy of the durable
//     transaction's meta page, fdatasynced after meta.db is. The two meta
//     pages in meta.db are overwritten by later commits in turn, so the
//     durable one may be gone; its copy is not.
//
// A checkpoint is: take bbolt's writer lock (no commit runs meanwhile),
// fdatasync meta.db, copy the last transaction's meta page into the
// checkpoint file (two slots, written in turn, each with a checksum) and
// fdatasync it, then move the anchor to that transaction.
//
// At start, a checkpoint file written in an earlier boot of the machine
// (the kernel's boot ID differs) whose transaction is older than meta.db's
// newest means the machine went down with unsynced transactions in its
// page cache: some of their pages may have reached the disk, some not.
// meta.db is then put back to the checkpoint's transaction (its meta page
// written into both slots, on a copy that must pass bbolt's consistency
// check before it replaces meta.db). In the same boot (the server was
// killed, or stopped), the page cache holds every write and meta.db is
// used as it is.

// DefaultSyncInterval is how long an answered namespace change may wait
// for its fdatasync when Options.SyncInterval is zero.
const DefaultSyncInterval = 50 * time.Millisecond

// deferredMmapSize is the memory map bbolt is opened with under deferred
// durability. bbolt remaps a growing file only once no read transaction
// is open, and the anchor is always open: a remap inside a commit would
// wait for the anchor, which waits for the commit. The map is address
// space, not memory; a database that grows past half of it goes back to
// a synced commit per transaction (see checkpoint).
var deferredMmapSize int64 = 8 << 30

// checkpointSuffix names the checkpoint file beside meta.db.
const checkpointSuffix = ".synced"

// durability is a Store's deferred durability (nil when every commit is
// fsynced by bbolt itself).
type durability struct {
	db       *bbolt.DB
	path     string   // meta.db
	ckpt     *os.File // the checkpoint file
	dbRead   *os.File // meta.db, to read meta pages back
	boot     string
	ident    fileIdent
	interval time.Duration

	cpMu     sync.Mutex // one checkpoint at a time
	anchor   *bbolt.Tx  // read transaction at synced (cpMu)
	slot     int        // the checkpoint slot written next (cpMu)
	seq      uint64     // the last checkpoint's sequence number (cpMu)
	pageSize int        // (cpMu)
	fellBack bool       // synced commits again (cpMu)
	released bool       // closed: no checkpoint any more (cpMu)

	mu        sync.Mutex
	failed    error  // a checkpoint failed: no change is answered any more
	synced    uint64 // last transaction known durable
	committed uint64 // last transaction committed
	timer     *time.Timer
	closed    bool

	checkpoints atomic.Uint64
}

// fileIdent tells a file from one put in its place.
type fileIdent struct{ dev, ino uint64 }

func identOf(fi os.FileInfo) fileIdent {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileIdent{uint64(st.Dev), st.Ino}
	}
	return fileIdent{}
}

// kernelBootID returns the kernel's boot ID, which changes at every boot.
func kernelBootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read the boot ID: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// bbolt's meta page: a 16-byte page header, then magic, version, page
// size, flags (4 bytes each), the root bucket (root page, sequence), the
// free list's page, the high-water page, the transaction ID and an FNV-1a
// checksum of everything before it (8 bytes each), in the machine's byte
// order (little endian here, as bbolt files are not portable anyway).
const (
	pageHeaderSize = 16
	metaMagic      = 0xED0CDAED
	metaVersion    = 2
	metaSumOffset  = 56 // bytes of the meta struct the checksum covers
	metaTxidOffset = 48
)

// parseMeta checks the meta page p and returns its transaction ID.
func parseMeta(p []byte) (txid uint64, pageSize int, ok bool) {
	if len(p) < pageHeaderSize+metaSumOffset+8 {
		return 0, 0, false
	}
	m := p[pageHeaderSize:]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != metaMagic || le.Uint32(m[4:]) != metaVersion {
		return 0, 0, false
	}
	h := fnv.New64a()
	h.Write(m[:metaSumOffset])
	if h.Sum64() != le.Uint64(m[metaSumOffset:]) {
		return 0, 0, false
	}
	return le.Uint64(m[metaTxidOffset:]), int(le.Uint32(m[8:])), true
}

// readMetas reads both meta pages of the database file f.
func readMetas(f io.ReaderAt) (pages [2][]byte, txids [2]uint64, valid [2]bool, pageSize int, err error) {
	head := make([]byte, 4096)
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return pages, txids, valid, 0, err
	}
	_, pageSize, ok := parseMeta(head)
	if !ok || pageSize < 1024 || pageSize > 1<<16 || pageSize&(pageSize-1) != 0 {
		// Slot 0 is torn: bbolt's default page size is the OS's.
		pageSize = os.Getpagesize()
	}
	for i := range 2 {
		pages[i] = make([]byte, pageSize)
		if _, err := f.ReadAt(pages[i], int64(i*pageSize)); err != nil && !errors.Is(err, io.EOF) {
			return pages, txids, valid, 0, err
		}
		var ps int
		txids[i], ps, valid[i] = parseMeta(pages[i])
		valid[i] = valid[i] && ps == pageSize
	}
	return pages, txids, valid, pageSize, nil
}

// The checkpoint file holds two slots of ckptSlot bytes, at 0 and
// ckptSlot, each ckptHeader bytes and one meta page: magic, version, page
// size, transaction, the database file's device and inode, the boot ID,
// the checkpoint's sequence number, then a CRC-32C of the rest of the
// slot. The newest is the valid one with the higher sequence number (not
// transaction: a restored backup's transactions go back in time).
const (
	ckptHeader  = 128
	ckptSlot    = ckptHeader + 1<<16 // bbolt's largest page
	ckptMagic   = "PARIOCKP"
	ckptVersion = 1
	ckptBootLen = 40
	ckptSeqAt   = 40 + ckptBootLen
	ckptCRCAt   = ckptSeqAt + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type checkpointRecord struct {
	slot  int // where it was read from
	seq   uint64
	txid  uint64
	ident fileIdent
	boot  string
	page  []byte
}

func encodeCheckpoint(r checkpointRecord) []byte {
	b := make([]byte, ckptHeader+len(r.page))
	copy(b, ckptMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], ckptVersion)
	le.PutUint32(b[12:], uint32(len(r.page)))
	le.PutUint64(b[16:], r.txid)
	le.PutUint64(b[24:], r.ident.dev)
	le.PutUint64(b[32:], r.ident.ino)
	copy(b[40:40+ckptBootLen], r.boot)
	le.PutUint64(b[ckptSeqAt:], r.seq)
	copy(b[ckptHeader:], r.page)
	le.PutUint32(b[ckptCRCAt:], crc32.Checksum(slotSum(b), castagnoli))
	return b
}

// slotSum is what a slot's CRC covers: all of it but the CRC.
func slotSum(b []byte) []byte {
	s := append([]byte(nil), b[:ckptCRCAt]...)
	return append(s, b[ckptCRCAt+4:]...)
}

// readCheckpoint returns the newest valid slot of the checkpoint file at
// path (ok false if there is none).
func readCheckpoint(path string) (rec checkpointRecord, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	le := binary.LittleEndian
	for slot := range 2 {
		if len(data) < slot*ckptSlot+ckptHeader {
			break
		}
		b := data[slot*ckptSlot:]
		if string(b[:8]) != ckptMagic || le.Uint32(b[8:]) != ckptVersion {
			continue // never written, or torn
		}
		size := int(le.Uint32(b[12:]))
		if size < 1024 || size > 1<<16 || ckptHeader+size > len(b) {
			continue
		}
		b = b[:ckptHeader+size]
		if crc32.Checksum(slotSum(b), castagnoli) != le.Uint32(b[ckptCRCAt:]) {
			continue
		}
		r := checkpointRecord{
			slot:  slot,
			seq:   le.Uint64(b[ckptSeqAt:]),
			txid:  le.Uint64(b[16:]),
			ident: fileIdent{le.Uint64(b[24:]), le.Uint64(b[32:])},
			boot:  strings.TrimRight(string(b[40:40+ckptBootLen]), "\x00"),
			page:  b[ckptHeader:],
		}
		if !ok || r.seq > rec.seq {
			rec, ok = r, true
		}
	}
	return rec, ok, nil
}

// recoverUnsynced puts meta.db at path back to its checkpoint if the
// machine went down since with unsynced transactions (see the rule at the
// top of this file). It returns what it did, for the log ("" if nothing).
func recoverUnsynced(path, boot string) (string, error) {
	rec, ok, err := readCheckpoint(path + checkpointSuffix)
	if err != nil || !ok || rec.boot == boot {
		return "", err // a read error is Open's to report with the file
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", nil // no database: nothing to put back
	}
	if identOf(fi) != rec.ident {
		return "", nil // meta.db was replaced (a restored backup): not the checkpoint's
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	_, txids, valid, pageSize, err := readMetas(f)
	f.Close()
	if err != nil {
		return "", err
	}
	newest := uint64(0)
	for i := range 2 {
		if valid[i] {
			newest = max(newest, txids[i])
		}
	}
	if newest <= rec.txid || pageSize != len(rec.page) {
		return "", nil // nothing after the checkpoint reached meta.db
	}
	// Put it back on a copy, check the copy, then rename it into place:
	// meta.db itself is never left half done.
	tmp := path + ".rollback"
	if err := copyFile(path, tmp); err != nil {
		return "", fmt.Errorf("copy %s to roll back unsynced transactions: %w", path, err)
	}
	defer os.Remove(tmp)
	if err := writeMetas(tmp, rec.page); err != nil {
		return "", fmt.Errorf("roll back unsynced transactions of %s: %w", path, err)
	}
	if err := checkRollback(tmp); err != nil {
		return "", fmt.Errorf("the machine went down with transactions %d to %d of %s not yet synced, and put back to transaction %d, the last synced, it is not consistent (%v): its pages did not survive; meta.db is left as it is: restore it from a backup: %w",
			rec.txid+1, newest, path, rec.txid, err, errCorrupt)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	return fmt.Sprintf("the machine went down with transactions %d to %d of %s not yet synced; put back to transaction %d, the last synced (changes of its last sync interval are lost)",
		rec.txid+1, newest, path, rec.txid), nil
}

// checkRollback opens the database at path read-only and runs bbolt's
// consistency check. A damaged file makes bbolt panic (or fault, which
// Store.open turns into a panic): that is a failed check too.
func checkRollback(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(checkTx)
}

// writeMetas writes meta page page into both meta slots of the database
// file at path, each with its own page number, and syncs it.
func writeMetas(path string, page []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := range 2 {
		p := append([]byte(nil), page...)
		binary.LittleEndian.PutUint64(p[0:], uint64(i)) // the page header's ID
		if _, err := f.WriteAt(p, int64(i*len(page))); err != nil {
			return err
		}
	}
	return f.Sync()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// startDurability turns deferred durability on for db (opened with
// deferredMmapSize): a first checkpoint, then NoSync commits.
func startDurability(db *bbolt.DB, path, boot string, interval time.Duration) (*durability, error) {
	ckpt, err := os.OpenFile(path+checkpointSuffix, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	dbRead, err := os.Open(path)
	if err != nil {
		ckpt.Close()
		return nil, err
	}
	fi, err := dbRead.Stat()
	if err == nil {
		err = syncDir(filepath.Dir(path)) // the checkpoint file's name
	}
	if err != nil {
		ckpt.Close()
		dbRead.Close()
		return nil, err
	}
	d := &durability{db: db, path: path, ckpt: ckpt, dbRead: dbRead, boot: boot, ident: identOf(fi), interval: interval}
	// Never overwrite the newest checkpoint: if this write is torn, the
	// other slot is what a power cut falls back to, and only the newest
	// one's pages were kept whole (by the last run's anchor).
	if rec, ok, err := readCheckpoint(path + checkpointSuffix); err == nil && ok {
		d.slot, d.seq = rec.slot^1, rec.seq
	}
	if err := d.checkpoint(); err != nil {
		d.release()
		return nil, err
	}
	db.NoSync = true
	return d, nil
}

// afterCommit notes that transaction txid has committed (unsynced), and
// makes sure a checkpoint follows within the interval: at once if the
// database (size bytes before the commit) is past half of its memory
// map, so that the checkpoint falls back to synced commits long before a
// commit needs a remap, which would wait for the anchor for ever.
func (d *durability) afterCommit(txid uint64, size int64) {
	if size > deferredMmapSize/2 {
		d.cpMu.Lock()
		fellBack := d.fellBack
		d.cpMu.Unlock()
		if !fellBack {
			d.mu.Lock()
			d.committed = max(d.committed, txid)
			d.mu.Unlock()
			if err := d.checkpoint(); err != nil {
				slog.Error("pario meta: syncing the metadata database failed", "path", d.path, "err", err)
			}
			return
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.committed = max(d.committed, txid)
	if d.timer == nil && !d.closed && d.committed > d.synced {
		d.timer = time.AfterFunc(d.interval, func() {
			d.mu.Lock()
			d.timer = nil
			d.mu.Unlock()
			if err := d.checkpoint(); err != nil {
				slog.Error("pario meta: syncing the metadata database failed; answered changes since the last sync are durable only against a crash of this process", "path", d.path, "err", err)
			}
		})
	}
}

// sync returns once every transaction committed before the call is
// durable.
func (d *durability) sync(ctx context.Context) error {
	d.mu.Lock()
	target := d.committed
	done := d.synced >= target
	failed := d.failed
	d.mu.Unlock()
	if failed != nil {
		return failed
	}
	if done {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.checkpoint()
}

// failure returns why changes are refused: a checkpoint failed, so the
// answered changes since the last one may not be on disk (after a failed
// fdatasync the kernel may have dropped the pages it could not write, and
// a later fdatasync succeeds without them), and answering more would
// promise what cannot be kept. As ext4 remounts read-only on a journal
// error, the namespace stays readable; a restart, after the disk is
// fixed, recovers from the last good checkpoint or the page cache.
func (d *durability) failure() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

// checkpoint makes every committed transaction durable (see the top of
// this file). A failure is kept (see failure).
func (d *durability) checkpoint() error {
	err := d.checkpointOnce()
	if err != nil {
		d.mu.Lock()
		if d.failed == nil {
			d.failed = fmt.Errorf("metadata database not synced, changes refused until the metadata server is restarted: %w: %w", err, syscall.EIO)
		}
		err = d.failed
		d.mu.Unlock()
	}
	return err
}

func (d *durability) checkpointOnce() error {
	d.cpMu.Lock()
	defer d.cpMu.Unlock()
	if d.fellBack || d.released {
		return nil // a timer that fired as the store closed finds nothing to do
	}
	// The writer lock: no commit runs until the anchor has moved.
	tx, err := d.db.Begin(true)
	if err != nil {
		return fmt.Errorf("sync %s: %w", d.path, err)
	}
	defer tx.Rollback()
	last := uint64(tx.ID()) - 1
	d.mu.Lock()
	synced := d.synced
	d.mu.Unlock()
	if last <= synced && d.anchor != nil {
		return nil
	}
	if err := d.db.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", d.path, err)
	}
	pages, txids, valid, pageSize, err := readMetas(d.dbRead)
	if err != nil {
		return fmt.Errorf("sync %s: read its meta pages: %w", d.path, err)
	}
	var page []byte
	for i := range 2 {
		if valid[i] && txids[i] == last {
			page = pages[i]
		}
	}
	if page == nil {
		return fmt.Errorf("sync %s: no meta page of transaction %d (%d and %d on disk): %w", d.path, last, txids[0], txids[1], errCorrupt)
	}
	d.pageSize = pageSize
	rec := encodeCheckpoint(checkpointRecord{seq: d.seq + 1, txid: last, ident: d.ident, boot: d.boot, page: page})
	if _, err := d.ckpt.WriteAt(rec, int64(d.slot*ckptSlot)); err != nil {
		return fmt.Errorf("sync %s: write %s: %w", d.path, d.ckpt.Name(), err)
	}
	if err := syscall.Fdatasync(int(d.ckpt.Fd())); err != nil {
		return fmt.Errorf("sync %s: sync %s: %w", d.path, d.ckpt.Name(), err)
	}
	d.slot ^= 1
	d.seq++
	anchor, err := d.db.Begin(false)
	if err != nil {
		return fmt.Errorf("sync %s: %w", d.path, err)
	}
	if d.anchor != nil {
		_ = d.anchor.Rollback()
	}
	d.anchor = anchor
	d.checkpoints.Add(1)
	d.mu.Lock()
	d.synced = max(d.synced, last)
	d.mu.Unlock()
	if tx.Size() > deferredMmapSize/2 {
		// Past half the map, a commit could need a remap, which would wait
		// for the anchor forever: commit synced from now on, as bbolt
		// does by itself. Everything committed is durable now.
		slog.Warn("pario meta: the metadata database is past half of its memory map; every change is fsynced before it is answered from now on",
			"path", d.path, "bytes", tx.Size(), "map", deferredMmapSize)
		// The checkpoint goes before any synced commit: after a power
		// cut, recovery would put meta.db back to it, losing commits
		// answered as durable (whose pages, without the anchor, may
		// overwrite the checkpoint's tree). No checkpoint, no rollback.
		if err := os.Remove(d.path + checkpointSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sync %s: past half of the memory map: %w", d.path, err)
		}
		if err := syncDir(filepath.Dir(d.path)); err != nil {
			return fmt.Errorf("sync %s: past half of the memory map: %w", d.path, err)
		}
		d.db.NoSync = false
		_ = d.anchor.Rollback()
		d.anchor = nil
		d.fellBack = true
	}
	return nil
}

// close makes everything durable and lets the anchor go (bbolt's Close
// waits for every read transaction).
func (d *durability) close() error {
	d.mu.Lock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.mu.Unlock()
	err := d.checkpoint()
	d.cpMu.Lock()
	d.release()
	d.released = true
	d.cpMu.Unlock()
	return err
}

func (d *durability) release() {
	if d.anchor != nil {
		_ = d.anchor.Rollback()
		d.anchor = nil
	}
	d.ckpt.Close()
	d.dbRead.Close()
}
