package data

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

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
// that existed already (left as they were). The new directory entries are
// durable when it returns (one syncfs for the batch), so a pooled datafile
// survives a crash of the I/O server as a synced file does. If one create
// fails for another reason, the datafiles this call made are removed again
// and the error is returned.
//
// A batch whose ctx ends before it is done (its metadata server's
// connection closed: the server was stopped or died while it waited) is
// undone the same way and fails: nobody is left to record what it made,
// so finishing it would only leave datafiles that the next metadata
// server's discard of the old pool, racing with it, misses (orphans for
// fsck). Batches and claims take turns (batchMu), so a claim never sees
// a batch half made.

func (s *Store) CreateBatch(ctx context.Context, ids []uint64) (existed []uint64, err error) {
	if err := s.begin(ctx); err != nil {
		return nil, fmt.Errorf("data: create batch: %w", err)
	}
	defer s.ops.Done()
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	var made []uint64
	undo := func() {
		for _, id := range made {
			_ = s.removeNew(id)
		}
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			undo()
			return nil, fmt.Errorf("data: create batch: %d of %d made, then: %w (undone)", len(made), len(ids), err)
		}
		err := s.createClosed(id)
		switch {
		case err == nil:
			made = append(made, id)
		case errors.Is(err, fs.ErrExist):
			existed = append(existed, id)
		default:
			undo()
			return nil, dfErr(id, "create", err)
		}
	}
	if len(made) > 0 {
		if err := s.root.SyncFS(); err != nil {
			undo()
			return nil, fmt.Errorf("data: create batch: sync: %w", err)
		}
	}
	return existed, nil
}

// createClosed makes datafile id exclusively without caching a handle: a
// pooled datafile is not written until a file takes it, maybe much later.
func (s *Store) createClosed(id uint64) error {
	sh, err := s.shard(id)
	if err != nil {
		return err
	}
	l := s.idLock(id)
	l.Lock()
	defer l.Unlock()
	if h := s.lookup(id); h != nil {
		s.release(h)
		return fs.ErrExist
	}
	f, err := sh.OpenFile(leafName(id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// removeNew removes datafile id that this server just made and nobody
// knows of yet.
func (s *Store) removeNew(id uint64) error {
	sh, err := s.shard(id)
	if err != nil {
		return err
	}
	l := s.idLock(id)
	l.Lock()
	defer l.Unlock()
	return sh.Remove(leafName(id))
}

// RemoveIfEmpty removes those of datafiles ids that hold no byte and
// returns those it kept because they do; missing ones are skipped. A
// client writing one while it is removed may lose that write, as with
// Remove; only a client of a file the metadata server no longer knows
// (one made after a restored backup) can be writing one.
//
// The removals are durable when it returns (one syncfs, as RemoveBatch):
// the metadata server deletes its pool records of the IDs once it has
// answered, so an empty datafile that a power cut brought back would be
// an orphan no record names. A missing one is synced too: it may be
// missing because a call before this one removed it and failed to sync.
func (s *Store) RemoveIfEmpty(ctx context.Context, ids []uint64) (kept []uint64, err error) {
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	for _, id := range ids {
		size, alloc, err := s.Usage(ctx, id)
		if err != nil {
			return kept, err
		}
		if size > 0 || alloc > 0 {
			kept = append(kept, id)
			continue
		}
		if err := s.Remove(ctx, id); err != nil {
			return kept, err
		}
	}
	if len(kept) == len(ids) {
		return kept, nil
	}
	if err := s.begin(ctx); err != nil {
		return kept, fmt.Errorf("data: remove if empty: %w", err)
	}
	defer s.ops.Done()
	if err := s.root.SyncFS(); err != nil {
		return kept, fmt.Errorf("data: remove if empty of %d datafiles: sync: %w", len(ids)-len(kept), err)
	}
	return kept, nil
}
