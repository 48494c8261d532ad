package data

import (
	"context"
	"fmt"
)

// RemoveBatch deletes datafiles ids (a missing one is not an error) and
// then fsyncs each shard directory it removed from, once: the removals
// are durable when it returns, so the metadata server may forget them. A
// datafile that came back after a crash would be an orphan no record
// names any more; one directory sync per shard per batch costs less than
// a single remove's round trip did.
func (s *Store) RemoveBatch(ctx context.Context, ids []uint64) error {
	var shards [256]bool
	for _, id := range ids {
		if err := s.Remove(ctx, id); err != nil {
			return err
		}
		shards[byte(id)] = true
	}
	if err := s.begin(ctx); err != nil {
		return fmt.Errorf("data: remove batch: %w", err)
	}
	defer s.ops.Done()
	for i, touched := range shards {
		if !touched {
			continue
		}
		if err := s.syncShard(byte(i)); err != nil {
			return fmt.Errorf("data: remove batch: %w", err)
		}
	}
	return nil
}
