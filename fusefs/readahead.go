package fusefs

import (
	"context"
	"errors"
	"io"
	"sync"
)

// smallRead is the largest read through a direct descriptor that
// readAhead serves from its buffer: the kernel's own read-ahead window.
const smallRead = 128 << 10

// readAhead reads ahead for one direct descriptor. The kernel reads
// ahead only through the page cache, which a direct descriptor bypasses,
// so without this a program that reads back what it wrote through a
// read-write descriptor in small pieces (HDF5's metadata, a log) would
// pay a round trip to the servers for each piece: 4 KiB reads ran at a
// fourteenth of a cached descriptor's speed.
//
// A small read that starts where the descriptor's last read ended fills
// a MaxIO buffer from there, and the reads after it are answered from the
// buffer until they leave it. The buffer holds only while no write or
// truncate went through this mount since it was filled (openFile.writes),
// so the descriptor still reads this mount's writes as soon as they are
// made. Another client's writes show when the descriptor next leaves the
// buffer: no later than a cached descriptor shows them, at its next open.
type readAhead struct {
	mu     sync.Mutex
	next   int64  // where the last read ended
	buf    []byte // nil until a sequential small read; MaxIO bytes
	off    int64  // file offset of buf[0]
	n      int    // bytes of buf filled
	writes uint64 // openFile.writes when buf was filled
}

// read reads len(dest) bytes at off through the read-ahead buffer when
// that pays (ok), else leaves the read to the caller (not ok).
func (ra *readAhead) read(ctx context.Context, of *openFile, dest []byte, off int64) (n int, ok bool, err error) {
	if len(dest) > smallRead {
		ra.mu.Lock()
		ra.next = off + int64(len(dest))
		ra.mu.Unlock()
		return 0, false, nil
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if n, hit := ra.fromBuffer(of, dest, off); hit {
		return n, true, nil
	}
	if off != ra.next {
		ra.next = off + int64(len(dest))
		return 0, false, nil
	}
	if ra.buf == nil {
		ra.buf = getBuffer(MaxIO)
	}
	// Counted before the writes in flight are waited for: a write handed
	// on after this makes the buffer stale, one before it is in it.
	ra.writes = of.writes.Load()
	of.wb.wait()
	got, err := of.file().ReadAtContext(ctx, ra.buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		ra.n = 0
		return 0, true, err
	}
	ra.off, ra.n = off, got
	n, _ = ra.fromBuffer(of, dest, off)
	return n, true, nil
}

// fromBuffer answers the read from the buffer if it holds its start and
// is current; a read past what a short fill found (the end of the file
// then) gets what there is.
func (ra *readAhead) fromBuffer(of *openFile, dest []byte, off int64) (int, bool) {
	if ra.n == 0 || off < ra.off || off >= ra.off+int64(ra.n) || ra.writes != of.writes.Load() {
		return 0, false
	}
	end := ra.off + int64(ra.n)
	if off+int64(len(dest)) > end && ra.n == len(ra.buf) {
		return 0, false // it goes on past the buffer, not past the file
	}
	n := copy(dest, ra.buf[off-ra.off:ra.n])
	ra.next = off + int64(n)
	return n, true
}

// free gives the buffer back.
func (ra *readAhead) free() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.buf != nil {
		putBuffer(ra.buf)
		ra.buf, ra.n = nil, 0
	}
}
