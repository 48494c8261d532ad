package data

import (
	"context"
	"errors"
	"fmt"

	"github.com/pario/pario/wire"
)

// MaxBatch bounds the IDs of one createBatch request.
const MaxBatch = 1024

// CreateBatchRequest makes datafiles IDs, each exclusively, for the
// metadata server of cluster incarnation Incarnation, and makes their
// directory entries durable before answering. With RemoveIfEmpty it
// instead removes those of IDs that exist and hold no byte: a pool
// discarded after a restart may hold IDs that files made after a restored
// backup used, and their bytes must stay for fsck to report.
type CreateBatchRequest struct {
	Incarnation   uint64
	IDs           []uint64
	RemoveIfEmpty bool
}

func (r CreateBatchRequest) Encode(e *wire.Enc) {
	e.U64(r.Incarnation)
	e.Uvarint(uint64(len(r.IDs)))
	for _, id := range r.IDs {
		e.U64(id)
	}
	e.Bool(r.RemoveIfEmpty)
}

func (r *CreateBatchRequest) Decode(d *wire.Dec) error {
	r.Incarnation = d.U64("incarnation")
	n := d.Int("id count", MaxBatch)
	r.IDs = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.IDs = append(r.IDs, d.U64("id"))
	}
	r.RemoveIfEmpty = d.Bool("remove if empty")
	return d.Done()
}

// CreateBatchResponse lists the IDs left as they were: for a create, the
// datafiles that existed already (their IDs were used before: the caller
// must not hand them out); with RemoveIfEmpty, those kept because they
// hold bytes.
type CreateBatchResponse struct{ Kept []uint64 }

func (r CreateBatchResponse) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Kept)))
	for _, id := range r.Kept {
		e.U64(id)
	}
}

func (r *CreateBatchResponse) Decode(d *wire.Dec) error {
	n := d.Int("kept count", MaxBatch)
	r.Kept = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Kept = append(r.Kept, d.U64("kept id"))
	}
	return d.Done()
}

// CreateBatch makes datafiles ids, each exclusively, and returns those
// that existed already (left as they were). The new datafiles are
// unwritten (unwritten.go): one record each in the log, which is synced
// before CreateBatch returns, so a pooled datafile survives a crash of
// the I/O server as a synced file does.
//
// A batch whose ctx ends before it is recorded (its metadata server's
// connection closed: the server was stopped or died while it waited) is
// not recorded and fails: nobody is left to record what it made, so
// finishing it would only leave datafiles that the next metadata server's
// discard of the old pool, racing with it, misses (orphans for fsck).
// Batches and claims take turns (batchMu), so a claim never sees a batch
// half made.
func (s *Store) CreateBatch(ctx context.Context, ids []uint64) (existed []uint64, err error) {
	if err := s.begin(ctx); err != nil {
		return nil, fmt.Errorf("data: create batch: %w", err)
	}
	defer s.ops.Done()
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	made := make([]uint64, 0, len(ids))
	seen := make(map[uint64]bool, len(ids))
	reused := false // an id whose old file's unlink is not durable yet
	for _, id := range ids {
		if seen[id] {
			existed = append(existed, id)
			continue
		}
		seen[id] = true
		l := s.idLock(id)
		l.Lock()
		exists, err := s.existsLocked(id)
		l.Unlock()
		if err != nil {
			return nil, dfErr(id, "create", err)
		}
		if exists {
			existed = append(existed, id)
		} else {
			made = append(made, id)
			reused = reused || s.unlinkedSinceSync(id)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("data: create batch of %d: %w (not made)", len(ids), err)
	}
	if reused {
		if err := s.syncFS(); err != nil {
			return nil, fmt.Errorf("data: create batch of %d: sync: %w", len(ids), err)
		}
	}
	if len(made) > 0 {
		if err := s.recordUnwritten(made, true); err != nil {
			return nil, fmt.Errorf("data: create batch of %d: %w", len(ids), err)
		}
	}
	return existed, nil
}

// RemoveIfEmpty removes those of datafiles ids that hold no byte and
// returns those it kept because they do; missing ones are skipped. A
// client writing one while it is removed may lose that write, as with
// Remove; only a client of a file the metadata server no longer knows
// (one made after a restored backup) can be writing one.
//
// The removals are durable when it returns (as RemoveBatch makes them):
// the metadata server deletes its pool records of the IDs once it has
// answered, so an empty datafile that a power cut brought back would be
// an orphan no record names. A missing one is synced too: it may be
// missing because a call before this one removed it and failed to sync.
func (s *Store) RemoveIfEmpty(ctx context.Context, ids []uint64) (kept []uint64, err error) {
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	needSyncFS := false
	for _, id := range ids {
		size, alloc, err := s.Usage(ctx, id)
		if errors.Is(err, ErrStale) {
			size, alloc, err = 0, 0, nil // missing: removed again below, and synced
		}
		if err != nil {
			return kept, err
		}
		if size > 0 || alloc > 0 {
			kept = append(kept, id)
			continue
		}
		need, err := s.remove(ctx, id)
		if err != nil {
			return kept, err
		}
		needSyncFS = needSyncFS || need
	}
	if len(kept) == len(ids) {
		return kept, nil
	}
	if err := s.syncRemovals(ctx, needSyncFS); err != nil {
		return kept, fmt.Errorf("data: remove if empty of %d datafiles: %w", len(ids)-len(kept), err)
	}
	return kept, nil
}
