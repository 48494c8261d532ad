package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
)

// Removing a file's datafiles is the metadata server's job, after the
// answer: the transaction that drops a file's last name (dropName) also
// records a removal intent in bucket "removals" (file ID -> the I/O
// servers still holding a datafile of it), so the remove is acknowledged
// after one commit, with no round trip to an I/O server. Once it has
// committed, the reaper goroutine removes those datafiles in batches
// (data op removeBatch, many IDs per request) and
// then deletes the records, in one transaction per batch. A server that
// is down keeps its part of the records, retried with backoff; a crash
// leaves the records, which the reaper takes up at the next start.
//
// IDs are never handed out twice, so a record never names a datafile of a
// live file, not even in a meta.db restored from a backup: its records
// name files removed before the backup was taken, whose IDs were
// therefore never handed out again (the restored server hands out IDs
// above everything its I/O servers hold). Removing such a datafile again
// finds nothing, which is not an error.

var bucketRemovals = []byte("removals")

// BatchRemover is what the reaper prefers of a Datafiles: removal of many
// datafiles of one I/O server in one request, for the metadata server of
// cluster incarnation inc. A missing datafile is not an error. Without it, the reaper removes
// one datafile at a time with Datafiles.Remove.
type BatchRemover interface {
	RemoveBatch(ctx context.Context, srv uint32, ids []FileID, inc uint64) error
}

// Reaper bounds: how long it lets removals gather after a wake, records
// read per pass step, IDs per request, how long a request may take (a
// down server's retries included), and the backoff of a server that
// failed.
const (
	// reapGather keeps a stream of removes (rm -r: one at a time, each
	// its own commit) from costing a reaper pass each, that is a batch
	// request per server and a commit of its own competing with theirs:
	// the removals of the last reapGather go in one batch.
	reapGather  = 50 * time.Millisecond
	reapChunk   = 4096
	reapBatch   = 1024
	reapTimeout = 30 * time.Second
	// reapQueueMax bounds the IDs remembered for the next pass; past it,
	// the pass reads every record instead.
	reapQueueMax = 1 << 16
)

// The backoff of a server that failed: variables so that a test can keep
// a down server from being retried while it counts.
var (
	reapBackoffMin = 200 * time.Millisecond
	reapBackoffMax = time.Minute
)

// removal is a pending removal: the datafiles of file ID that are still
// to be deleted, on Servers.
type removal struct {
	ID      FileID
	Servers []uint32
	Stuffed bool
}

// Removal record layout: version (1), flags (bit 0: stuffed), uvarint
// count, then the server indexes as big-endian uint32.
const removalVersion = 1

func encodeRemoval(servers []uint32, stuffed bool) []byte {
	b := []byte{removalVersion, 0}
	if stuffed {
		b[1] = 1
	}
	b = binary.AppendUvarint(b, uint64(len(servers)))
	for _, s := range servers {
		b = binary.BigEndian.AppendUint32(b, s)
	}
	return b
}

func decodeRemoval(k, v []byte) (removal, error) {
	if len(k) != 8 {
		return removal{}, fmt.Errorf("%w: removal record key %x is not a file ID", errCorrupt, k)
	}
	r := removal{ID: FileID(binary.BigEndian.Uint64(k))}
	if len(v) < 2 || v[0] != removalVersion {
		return removal{}, fmt.Errorf("%w: removal record of file %d: unknown version", errCorrupt, r.ID)
	}
	r.Stuffed = v[1]&1 != 0
	n, used := binary.Uvarint(v[2:])
	rest := v[2:]
	if used <= 0 || uint64(len(rest)-used) != 4*n {
		return removal{}, fmt.Errorf("%w: removal record of file %d: bad server list", errCorrupt, r.ID)
	}
	for rest = rest[used:]; len(rest) > 0; rest = rest[4:] {
		r.Servers = append(r.Servers, binary.BigEndian.Uint32(rest))
	}
	return r, nil
}

// keepDataKey marks a context whose removal must not record an intent.
type keepDataKey struct{}

// WithKeepData returns a context whose Remove or Rename leaves a removed
// file's datafiles to the caller: a mount that holds the file open
// removes them at its last close (client.RemoveData).
func WithKeepData(ctx context.Context) context.Context {
	return context.WithValue(ctx, keepDataKey{}, true)
}

func keepData(ctx context.Context) bool {
	v, _ := ctx.Value(keepDataKey{}).(bool)
	return v
}

// intendRemoval records that file a's datafiles are to be removed, unless
// the caller keeps them (WithKeepData).
func (t *txn) intendRemoval(a Attr) error {
	if a.Kind != KindFile || t.keepData {
		return nil
	}
	servers := a.Servers
	if a.Stuffed && len(servers) > 0 {
		servers = servers[:1]
	}
	if len(servers) == 0 {
		return nil
	}
	t.removals = append(t.removals, a.ID)
	return t.tx.Bucket(bucketRemovals).Put(idKey(a.ID), encodeRemoval(servers, a.Stuffed))
}

// reaper is the Store's remover of datafiles.
//
// A pass woken by new removals reads only their records (queued), so a
// server that is down, whose records pile up, costs nothing per remove: its
// records are read again only by the pass at the end of its backoff, which
// reads them all (full). A server backing off is tried by full passes
// only, so that all its records go when it is back.
type reaper struct {
	wake    chan struct{} // has a value when records were added
	stop    context.CancelFunc
	done    chan struct{}
	once    sync.Once
	pending atomic.Int64  // records not yet done
	reaped  atomic.Uint64 // datafiles removed
	passes  atomic.Uint64 // passes finished (tests wait on it)
	read    atomic.Uint64 // records read (tests count a pass's cost)

	mu     sync.Mutex
	queued []FileID // records committed since the last pass began
	full   bool     // the next pass reads every record (start, queue overflow)
}

// queueRemovals tells the reaper of the records of ids, just committed.
func (s *Store) queueRemovals(ids []FileID) {
	r := &s.reaper
	r.pending.Add(int64(len(ids)))
	if r.wake == nil {
		return // no reaper
	}
	r.mu.Lock()
	if !r.full && len(r.queued)+len(ids) <= reapQueueMax {
		r.queued = append(r.queued, ids...)
	} else {
		r.full, r.queued = true, nil
	}
	r.mu.Unlock()
	s.wakeReaper()
}

// takeQueued returns the IDs queued since the last call, or full if the
// next pass must read every record.
func (r *reaper) takeQueued() (ids []FileID, full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, full = r.queued, r.full
	r.queued, r.full = nil, false
	return ids, full
}

// RemovalStats reports the removal records not yet done and the datafiles
// the reaper has removed since start (metrics).
func (s *Store) RemovalStats() (pending int64, reaped uint64) {
	return s.reaper.pending.Load(), s.reaper.reaped.Load()
}

// startReaper counts the records a previous run left and starts the
// reaper, which takes them up at once. A Store without Datafiles (tests,
// tools reading a database) has no reaper: it would drop records without
// removing anything.
func (s *Store) startReaper() error {
	if s.opts.Datafiles == nil {
		return nil
	}
	var n int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = int64(tx.Bucket(bucketRemovals).Stats().KeyN)
		return nil
	})
	if err != nil {
		return err
	}
	r := &s.reaper
	r.pending.Store(n)
	r.full = true // what a previous run left
	r.wake = make(chan struct{}, 1)
	r.done = make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	r.wake <- struct{}{}
	go s.reap(ctx)
	return nil
}

// stopReaper stops the reaper and waits for it; records not done stay for
// the next start.
func (s *Store) stopReaper() {
	r := &s.reaper
	if r.stop == nil {
		return
	}
	r.once.Do(func() {
		r.stop()
		<-r.done
	})
}

// wakeReaper tells the reaper that records were committed.
func (s *Store) wakeReaper() {
	select {
	case s.reaper.wake <- struct{}{}:
	default:
	}
}

// reap runs passes over the records: at every wake (the records queued
// since the last pass), and, while a server that failed holds records,
// when its backoff ends (every record).
func (s *Store) reap(ctx context.Context) {
	r := &s.reaper
	defer close(r.done)
	retry := map[uint32]time.Time{}
	backoff := map[uint32]time.Duration{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		full := false
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			select {
			case <-ctx.Done():
				return
			case <-time.After(reapGather):
			}
		case <-timer.C:
			full = true
		}
		ids, overflow := r.takeQueued()
		if overflow {
			full, ids = true, nil
		} else if full {
			ids = nil // the full pass reads them too
		}
		next := s.reapPass(ctx, full, ids, retry, backoff)
		r.passes.Add(1)
		for _, at := range retry {
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
	}
}

// reapPass removes the datafiles of the records of ids, or of every record
// if full, a chunk at a time. A server backing off (in retry) is tried
// only by a full pass past its retry time. It returns when the next full
// pass is due because this one failed (zero: when retry says).
func (s *Store) reapPass(ctx context.Context, full bool, ids []FileID, retry map[uint32]time.Time, backoff map[uint32]time.Duration) time.Time {
	var after []byte
	slices.Sort(ids)
	ids = slices.Compact(ids)
	named := map[uint32]bool{} // servers some record names (full passes)
	for ctx.Err() == nil {
		var chunk []removal
		var err error
		if full {
			chunk, err = s.readRemovals(after)
		} else {
			if len(ids) == 0 {
				break
			}
			n := min(len(ids), reapChunk)
			chunk, err = s.readRemovalsOf(ids[:n])
			ids = ids[n:]
		}
		if err != nil {
			slog.Error("pario meta: reading the datafile removals to do", "err", err)
			return time.Now().Add(reapBackoffMax)
		}
		if full && len(chunk) == 0 {
			break
		}
		if full {
			after = idKey(chunk[len(chunk)-1].ID)
		}
		now := time.Now()
		byServer := map[uint32][]FileID{}
		for _, rm := range chunk {
			for _, srv := range rm.Servers {
				named[srv] = true
				if at, ok := retry[srv]; ok && (!full || now.Before(at)) {
					continue
				}
				byServer[srv] = append(byServer[srv], rm.ID)
			}
		}
		// The records' removes may be answered but not yet durable
		// (durable.go): a power cut must not bring back a file whose
		// datafiles are gone.
		if err := s.Sync(ctx); err != nil {
			if ctx.Err() == nil {
				slog.Warn("pario meta: removing datafiles of removed files waits for the metadata database to sync", "err", err)
			}
			return now.Add(reapBackoffMin)
		}
		done := s.removeOnServers(ctx, byServer)
		for srv := range byServer {
			if done[srv] {
				delete(retry, srv)
				delete(backoff, srv)
				continue
			}
			b := min(max(2*backoff[srv], reapBackoffMin), reapBackoffMax)
			backoff[srv] = b
			retry[srv] = time.Now().Add(b)
		}
		if !slices.Contains(slices.Collect(maps.Values(done)), true) {
			continue // nothing to record: spare the commit
		}
		if err := s.forgetRemoved(ctx, chunk, done); err != nil {
			if ctx.Err() == nil {
				slog.Error("pario meta: recording removed datafiles", "err", err)
			}
			return time.Now().Add(reapBackoffMin)
		}
	}
	if full && ctx.Err() == nil {
		// A server no record names has nothing to retry.
		for srv := range retry {
			if !named[srv] {
				delete(retry, srv)
				delete(backoff, srv)
			}
		}
	}
	return time.Time{}
}

// readRemovalsOf reads the records of ids (sorted); those already done
// are skipped.
func (s *Store) readRemovalsOf(ids []FileID) ([]removal, error) {
	var out []removal
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketRemovals)
		for _, id := range ids {
			k := idKey(id)
			if v := b.Get(k); v != nil {
				out = s.appendRemoval(out, k, v)
			}
		}
		return nil
	})
	return out, err
}

// readRemovals reads up to reapChunk records after key after.
func (s *Store) readRemovals(after []byte) ([]removal, error) {
	var out []removal
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketRemovals).Cursor()
		k, v := c.First()
		if after != nil {
			k, v = c.Seek(after)
			if bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(out) < reapChunk; k, v = c.Next() {
			out = s.appendRemoval(out, k, v)
		}
		return nil
	})
	return out, err
}

// appendRemoval decodes the record k, v, counts its read and appends it
// to out. A record that does not decode is skipped and logged: it is left
// for an operator (fsck reports it as a bad record), and the others are
// still removed.
func (s *Store) appendRemoval(out []removal, k, v []byte) []removal {
	s.reaper.read.Add(1)
	rm, err := decodeRemoval(k, v)
	if err != nil {
		slog.Error("pario meta: skipping a removal record", "err", err)
		return out
	}
	return append(out, rm)
}

// removeOnServers removes the datafiles of ids on each server, servers in
// parallel, and says which servers removed all theirs.
func (s *Store) removeOnServers(ctx context.Context, byServer map[uint32][]FileID) map[uint32]bool {
	df := s.opts.Datafiles
	done := make(map[uint32]bool, len(byServer))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for srv, ids := range byServer {
		wg.Go(func() {
			err := s.removeOn(ctx, df, srv, ids)
			if err != nil && ctx.Err() == nil {
				slog.Warn("pario meta: removing datafiles of removed files failed; will retry", "server", srv, "datafiles", len(ids), "err", err)
			}
			mu.Lock()
			done[srv] = err == nil
			mu.Unlock()
		})
	}
	wg.Wait()
	return done
}

func (s *Store) removeOn(ctx context.Context, df Datafiles, srv uint32, ids []FileID) error {
	br, batched := df.(BatchRemover)
	for len(ids) > 0 {
		n := min(len(ids), reapBatch)
		cctx, cancel := context.WithTimeout(ctx, reapTimeout)
		var err error
		if batched {
			err = br.RemoveBatch(cctx, srv, ids[:n], s.incarnation)
		} else {
			for _, id := range ids[:n] {
				if err = df.Remove(cctx, srv, id, s.incarnation); err != nil {
					break
				}
			}
		}
		cancel()
		if err != nil {
			return err
		}
		s.reaper.reaped.Add(uint64(n))
		ids = ids[n:]
	}
	return nil
}

// forgetRemoved takes the servers that are done out of chunk's records,
// and deletes the records left with none, in one transaction.
func (s *Store) forgetRemoved(ctx context.Context, chunk []removal, done map[uint32]bool) error {
	var deleted int64
	err := s.commit.update(ctx, func(tx *bbolt.Tx) error {
		deleted = 0
		b := tx.Bucket(bucketRemovals)
		for _, rm := range chunk {
			k := idKey(rm.ID)
			v := b.Get(k)
			if v == nil {
				continue
			}
			cur, err := decodeRemoval(k, v)
			if err != nil {
				return err
			}
			left := cur.Servers[:0:0]
			for _, srv := range cur.Servers {
				if !done[srv] {
					left = append(left, srv)
				}
			}
			switch {
			case len(left) == 0:
				deleted++
				err = b.Delete(k)
			case len(left) < len(cur.Servers):
				err = b.Put(k, encodeRemoval(left, cur.Stuffed))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.reaper.pending.Add(-deleted)
	}
	return err
}

// PendingRemoval is a removed file whose datafiles the reaper has not
// removed yet from Servers (fsck counts them apart from orphans).
type PendingRemoval struct {
	ID      FileID
	Servers []uint32
}
