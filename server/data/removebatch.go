package data

import (
	"context"
	"fmt"
)

// RemoveBatch deletes datafiles ids (a missing one is not an error) and
// makes the removals durable before it returns, with one syncfs for the
// whole batch (only a sync of the unwritten log if every datafile was
// unwritten): the metadata server deletes its removal
// records once this answers, so a datafile that came back after a power
// cut would be an orphan that only pario fsck finds. One syncfs per batch
// of up to MaxRemoveBatch IDs is one journal commit; a sync per shard
// directory cost a commit each. If a remove or the sync fails, the batch
// is not answered and the metadata server sends it again (removing a
// missing datafile again is not an error).
func (s *Store) RemoveBatch(ctx context.Context, ids []uint64) error {
	needSyncFS := false
	for _, id := range ids {
		need, err := s.remove(ctx, id)
		if err != nil {
			return err
		}
		needSyncFS = needSyncFS || need
	}
	if len(ids) == 0 {
		return nil
	}
	if err := s.syncRemovals(ctx, needSyncFS); err != nil {
		return fmt.Errorf("data: remove batch of %d datafiles: %w", len(ids), err)
	}
	return nil
}

// syncRemovals makes the removals made so far durable: a sync of the
// unwritten log where only unwritten datafiles were removed, a syncfs
// (which covers the log too) where files were.
func (s *Store) syncRemovals(ctx context.Context, needSyncFS bool) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.ops.Done()
	if !needSyncFS {
		if err := s.syncUnwritten(); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		return nil
	}
	if err := s.syncFS(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}
