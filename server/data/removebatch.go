package data

import (
	"context"
	"fmt"
)

// RemoveBatch deletes datafiles ids (a missing one is not an error) and
// makes the removals durable before it returns, with one syncfs for the
// whole batch as CreateBatch does: the metadata server deletes its removal
// records once this answers, so a datafile that came back after a power
// cut would be an orphan that only pario fsck finds. One syncfs per batch
// of up to MaxRemoveBatch IDs is one journal commit; a sync per shard
// directory cost a commit each. If a remove or the sync fails, the batch
// is not answered and the metadata server sends it again (removing a
// missing datafile again is not an error).
func (s *Store) RemoveBatch(ctx context.Context, ids []uint64) error {
	for _, id := range ids {
		if err := s.Remove(ctx, id); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := s.begin(ctx); err != nil {
		return fmt.Errorf("data: remove batch: %w", err)
	}
	defer s.ops.Done()
	if err := s.root.SyncFS(); err != nil {
		return fmt.Errorf("data: remove batch of %d datafiles: sync: %w", len(ids), err)
	}
	return nil
}
