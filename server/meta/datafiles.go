package meta

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"

	"go.etcd.io/bbolt"
)

// Datafiles is how the metadata server reaches the datafiles on the I/O
// servers (server index srv, as in Attr.Servers). The cluster package
// implements it over the wire; tests use fakes.
type Datafiles interface {
	// Claim tells I/O server srv the cluster incarnation and returns the
	// highest datafile ID it holds. An I/O server that holds datafiles of
	// another incarnation refuses (wire errno EREMCHG).
	Claim(ctx context.Context, srv uint32, incarnation uint64) (maxID uint64, err error)
	// Create makes datafile id on srv, exclusively: fs.ErrExist (EEXIST)
	// if it exists already. It is not retried after a transport failure,
	// since a retry of a create that happened would be EEXIST.
	Create(ctx context.Context, srv uint32, id FileID, incarnation uint64) error
	// Remove deletes datafile id on srv; a missing one is not an error.
	// An I/O server of another incarnation refuses (EREMCHG).
	Remove(ctx context.Context, srv uint32, id FileID, incarnation uint64) error
}

// idBlock is how many IDs one durable reservation covers: next_id in the
// database runs ahead of the IDs handed out, so a create does not cost an
// extra commit, and a restart skips what was reserved but not used.
const idBlock = 1024

// maxCreateAttempts bounds how many fresh IDs a create tries when the I/O
// servers already hold datafiles of the ones it picked.
const maxCreateAttempts = 8

var keyIncarnation = []byte("incarnation")

// errIDTaken says an I/O server already holds a datafile of the ID picked.
var errIDTaken = errors.New("datafile ID already in use on an I/O server")

// claimState says whether an I/O server has been claimed since start.
type claimState struct {
	mu   sync.Mutex
	done bool
}

// ids hands out FileIDs: never one at or below an ID already handed out
// (next_id is durable before an ID below it is used) nor below what an I/O
// server reported holding.
type ids struct {
	mu       sync.Mutex
	next     uint64 // the next ID to hand out
	reserved uint64 // next_id in the database: IDs below it may have been used
}

// loadIncarnation reads the cluster incarnation, creating a random one for
// a new database or for one written before incarnations existed.
func (t *txn) loadIncarnation() (inc uint64, made bool, err error) {
	if v := t.meta.Get(keyIncarnation); len(v) == 8 {
		if inc = binary.BigEndian.Uint64(v); inc != 0 {
			return inc, false, nil
		}
	}
	for inc == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, false, err
		}
		inc = binary.BigEndian.Uint64(b[:])
	}
	return inc, true, t.setCounter(keyIncarnation, inc)
}

// Incarnation returns the cluster incarnation: a random 64-bit number made
// when the database was, which every I/O server records at its first
// contact and checks afterwards.
func (s *Store) Incarnation() uint64 { return s.incarnation }

// Created reports whether Open created the database (a new, empty
// namespace).
func (s *Store) Created() bool { return s.created }

// Upgraded reports whether Open gave an incarnation to a database written
// before incarnations existed: its I/O servers hold datafiles without one.
func (s *Store) Upgraded() bool { return s.upgraded }

// allocID hands out a new FileID, first making durable a reservation that
// covers it when needed.
func (s *Store) allocID(ctx context.Context) (FileID, error) {
	s.ids.mu.Lock()
	defer s.ids.mu.Unlock()
	if s.ids.next >= s.ids.reserved {
		to := s.ids.next + idBlock
		err := s.commit.update(ctx, func(tx *bbolt.Tx) error {
			return newTxn(tx).setCounter(keyNextID, to)
		})
		if err == nil {
			// A reservation a power cut undid would hand its IDs out again.
			err = s.Sync(ctx)
		}
		if err != nil {
			return 0, fmt.Errorf("reserve file IDs: %w", err)
		}
		s.ids.reserved = to
	}
	id := s.ids.next
	s.ids.next++
	return FileID(id), nil
}

// skipIDs makes every later ID larger than above.
func (s *Store) skipIDs(above uint64) {
	s.ids.mu.Lock()
	defer s.ids.mu.Unlock()
	s.ids.next = max(s.ids.next, above+1)
}

// claim claims I/O server srv once (until forget) and skips the IDs it
// holds.
func (s *Store) claim(ctx context.Context, srv uint32) error {
	if s.opts.Datafiles == nil {
		return nil
	}
	if int(srv) >= len(s.claims) {
		return fmt.Errorf("layout names I/O server %d but the cluster has %d", srv, len(s.claims))
	}
	c := &s.claims[srv]
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return nil
	}
	maxID, err := s.opts.Datafiles.Claim(ctx, srv, s.incarnation)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	s.skipIDs(maxID)
	c.done = true
	c.mu.Unlock()
	// Pooled datafiles recorded before (pool.go) are thrown away now that
	// the server is known to be ours; failing that only leaves them for
	// the next claim.
	if err := s.discardStale(ctx, srv); err != nil {
		slog.Warn("pario meta: precreated datafiles not discarded; they are retried at the server's next claim", "err", err)
	}
	return nil
}

// forget makes the next create on srv claim it again.
func (s *Store) forget(srv uint32) {
	c := &s.claims[srv]
	c.mu.Lock()
	c.done = false
	c.mu.Unlock()
	s.discardPools(srv)
}

// ClaimAll claims every I/O server, in parallel, and returns one error per
// server that failed (nil entries for the others). A metadata server calls
// it at start: IDs are then handed out above everything the I/O servers
// hold, and a server that belongs to another incarnation is found before
// any file is created. A server that could not be reached is claimed
// again before its first create. Then the precreate pools of the default
// layout start filling (pool.go).
func (s *Store) ClaimAll(ctx context.Context) []error {
	errs := make([]error, s.opts.Servers)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = s.claim(ctx, uint32(i)) })
	}
	wg.Wait()
	if errors.Join(errs...) == nil {
		s.prefill()
	}
	return errs
}

// makeDatafiles creates datafile id on every server of srvs, in parallel.
// With excl, a datafile that exists means the ID is taken (errIDTaken,
// after the ones this call made are removed again, and the server is
// claimed again to skip what it holds); without, an existing datafile of
// id is the file's own (IDs are never handed out twice) and is kept.
func (s *Store) makeDatafiles(ctx context.Context, id FileID, srvs []uint32, excl bool) error {
	df := s.opts.Datafiles
	if df == nil || len(srvs) == 0 {
		return nil
	}
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for i, srv := range srvs {
		wg.Go(func() {
			if err := s.claim(ctx, srv); err != nil {
				errs[i] = err
				return
			}
			errs[i] = df.Create(ctx, srv, id, s.incarnation)
		})
	}
	wg.Wait()
	var taken bool
	var failed []error
	var undo []uint32
	for i, err := range errs {
		switch {
		case err == nil:
			undo = append(undo, srvs[i])
		case errors.Is(err, fs.ErrExist) && !excl:
		case errors.Is(err, fs.ErrExist):
			taken = true
			s.forget(srvs[i])
		default:
			failed = append(failed, fmt.Errorf("datafile %d: %w", i, err))
			// It may have been made before the failure was seen; the ID is
			// ours alone, so removing it cannot touch another file's.
			undo = append(undo, srvs[i])
		}
	}
	if !taken && len(failed) == 0 {
		return nil
	}
	if excl {
		s.removeDatafiles(ctx, id, undo)
	}
	if len(failed) > 0 {
		return errors.Join(failed...)
	}
	return errIDTaken
}

// removeDatafiles deletes datafile id on srvs, best effort: what is left
// (a server down) is an orphan pario fsck finds.
func (s *Store) removeDatafiles(ctx context.Context, id FileID, srvs []uint32) {
	df := s.opts.Datafiles
	if df == nil {
		return
	}
	var wg sync.WaitGroup
	for _, srv := range srvs {
		wg.Go(func() { _ = df.Remove(context.WithoutCancel(ctx), srv, id, s.incarnation) })
	}
	wg.Wait()
}

// newFileID hands out an ID and makes its datafiles on srvs, exclusively.
// An ID an I/O server already holds is never used: the create goes on with
// a fresh one above everything that server holds.
func (s *Store) newFileID(ctx context.Context, srvs []uint32) (FileID, error) {
	for range maxCreateAttempts {
		id, err := s.allocID(ctx)
		if err != nil {
			return 0, err
		}
		s.makingAdd(id, srvs)
		err = s.makeDatafiles(ctx, id, srvs, true)
		if err != nil {
			s.makingDone(id, srvs)
		}
		if !errors.Is(err, errIDTaken) {
			return id, err
		}
		s.skipIDs(uint64(id))
	}
	return 0, fmt.Errorf("%d fresh file IDs in a row are held by I/O servers: %w", maxCreateAttempts, errIDTaken)
}
