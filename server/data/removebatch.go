package data

import "context"

// RemoveBatch deletes datafiles ids; a missing one is not an error. The
// removals are not synced: a crash of this server soon after may bring a
// datafile back, as an orphan that pario fsck finds, which is what a
// single remove has always risked. Syncing a shard directory per ID would
// cost a journal commit each, more than the metadata server's commit of
// the unlink itself.
func (s *Store) RemoveBatch(ctx context.Context, ids []uint64) error {
	for _, id := range ids {
		if err := s.Remove(ctx, id); err != nil {
			return err
		}
	}
	return nil
}
