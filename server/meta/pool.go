package meta

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/dist"
)

// Precreate pools, as OrangeFS keeps them: for each set of I/O servers
// files use, a supply of IDs whose datafiles already exist, exclusively
// made, on every server of the set. A create takes one and commits its
// inode without a round trip to an I/O server; the pool is refilled in the
// background, a batch (one createBatch request per server) at a time,
// before it runs dry. A create that finds its pool empty makes its
// datafiles itself, as without pools (newFileID).
//
// Every pooled ID is recorded in the "pool" bucket (key: the ID, value:
// its servers), committed before its datafiles are made (an intent: a
// crash leaves records, not datafiles nobody names) and offered to creates
// only once they exist; the record is deleted in the transaction that
// commits the file taking it, so that fsck knows pooled datafiles are no
// orphans. A pool read back at start is never
// used: meta.db may be a restored backup whose pool holds IDs that files
// made after the backup took, so the whole of it is discarded (its
// datafiles removed where they are empty; one holding bytes is left for
// fsck to report as an orphan) and pools are filled afresh above what the
// claims reported. The entries of a server that is claimed again (forget)
// are discarded the same way.

const (
	// poolBatch is how many IDs one refill adds at first: one createBatch
	// request per server and one commit for that many creates. A pool that
	// a create found empty makes twice as many at its next refill, up to
	// maxPoolBatch: a refill costs each I/O server a syncfs, which on a
	// busy disk takes long enough for a burst of creates (mdtest's, tar's)
	// to empty a pool of poolBatch, and every create that finds it empty
	// waits for round trips to the I/O servers instead.
	poolBatch = 128
	// maxPoolBatch is the largest refill: a createBatch request's limit
	// (server/data's MaxBatch).
	maxPoolBatch = 1024
	// poolLow starts a refill: the pool has fewer IDs left than this, so
	// a burst of creates does not find it empty while a batch is made.
	poolLow = 64
	// maxPoolSets bounds the server sets that get a pool: files placed by
	// hints can use any of many sets, and most of them rarely.
	maxPoolSets = 64
	// poolRetry is how long a set whose refill failed waits before the
	// next try, so that a down server does not cost a request per create.
	poolRetry = 2 * time.Second
	// poolOpTimeout bounds one refill or discard.
	poolOpTimeout = 30 * time.Second
)

var bucketPool = []byte("pool")

// BatchDatafiles is implemented by Datafiles that can make and remove
// many datafiles in one request; a Store keeps precreate pools only
// through one.
type BatchDatafiles interface {
	Datafiles
	// CreateBatch makes datafiles ids on srv, each exclusively, and
	// returns those that existed already (left as they were). Their
	// directory entries are durable when it returns.
	CreateBatch(ctx context.Context, srv uint32, ids []FileID, incarnation uint64) (existed []FileID, err error)
	// RemoveIfEmpty removes those of datafiles ids on srv that hold no
	// byte and returns those it kept because they do.
	RemoveIfEmpty(ctx context.Context, srv uint32, ids []FileID, incarnation uint64) (kept []FileID, err error)
}

// pools is a Store's precreate pools.
type pools struct {
	mu   sync.Mutex
	sets map[string]*poolSet
	// stale are recorded IDs no create may take (read at start, or of a
	// server claimed again), with the servers where their datafiles may
	// still be; claim removes them.
	stale map[FileID][]uint32
	// recordMu orders discardStale's updates of stale and the commits
	// that record them: two servers' discards of one ID must not commit
	// out of the order they changed stale in (a record would come back).
	recordMu sync.Mutex
	// failed counts refills that failed, for tests.
	failed int
	// making holds the IDs whose datafiles a create, a reservation or a
	// layout change is making or has made, and whose commit (or undo) has
	// not ended yet, with their servers (once per maker): they have
	// datafiles and no inode or pool record names them there, and fsck
	// must not take them for orphans (Scan lists them with the pool).
	making map[FileID][]uint32

	ctx    context.Context // canceled by Close: refills and discards stop
	cancel context.CancelFunc
	bg     sync.WaitGroup
}

// poolSet is the pool of one set of I/O servers.
type poolSet struct {
	srvs    []uint32 // sorted
	ids     []FileID // ready: datafiles exist on every server, recorded
	batch   int      // IDs the next refill makes (0: poolBatch)
	grew    bool     // batch doubled since the last refill ended
	filled  bool     // a refill has succeeded (the first is not a miss's fault)
	filling bool
	retry   time.Time // no refill before this, after a failure
	err     error     // the last refill's failure
}

// setKey names a set of servers, whatever their order.
func setKey(srvs []uint32) (string, []uint32) {
	sorted := slices.Clone(srvs)
	slices.Sort(sorted)
	b := make([]byte, 0, 4*len(sorted))
	for _, s := range sorted {
		b = binary.BigEndian.AppendUint32(b, s)
	}
	return string(b), sorted
}

func encodeServers(srvs []uint32) []byte {
	b := binary.AppendUvarint(nil, uint64(len(srvs)))
	for _, s := range srvs {
		b = binary.AppendUvarint(b, uint64(s))
	}
	return b
}

func decodeServers(v []byte) ([]uint32, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)) {
		return nil, fmt.Errorf("%w: pool record %x", errCorrupt, v)
	}
	v = v[k:]
	srvs := make([]uint32, 0, n)
	for range n {
		s, k := binary.Uvarint(v)
		if k <= 0 || s > 1<<31 {
			return nil, fmt.Errorf("%w: pool record server list", errCorrupt)
		}
		srvs = append(srvs, uint32(s))
		v = v[k:]
	}
	return srvs, nil
}

// initPools makes the pools empty and reads the recorded ones as stale,
// but for those reserved by mounts (reserve.go).
// It runs in Open's transaction.
func (s *Store) initPools(tx *bbolt.Tx) error {
	s.pool.sets = map[string]*poolSet{}
	s.pool.stale = map[FileID][]uint32{}
	s.pool.ctx, s.pool.cancel = context.WithCancel(context.Background())
	b, err := tx.CreateBucketIfNotExists(bucketPool)
	if err != nil {
		return err
	}
	reserved, err := initReserved(tx, time.Now())
	if err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: pool record with a %d-byte key", errCorrupt, len(k))
		}
		srvs, err := decodeServers(v)
		if err != nil {
			return err
		}
		id := FileID(binary.BigEndian.Uint64(k))
		if reserved[id] {
			return nil // a mount's, which may still create with it
		}
		s.pool.stale[id] = srvs
		return nil
	})
}

// closePools stops refills and discards and waits for them.
func (s *Store) closePools() {
	// Under mu, so that no refill or discard starts (bg.Go, always under
	// mu after a check of ctx) once Wait may have begun.
	s.pool.mu.Lock()
	if s.pool.cancel != nil {
		s.pool.cancel()
	}
	s.pool.mu.Unlock()
	s.pool.bg.Wait()
}

// batchDatafiles is Options.Datafiles if it can keep pools.
func (s *Store) batchDatafiles() BatchDatafiles {
	b, _ := s.opts.Datafiles.(BatchDatafiles)
	return b
}

// takeID hands out an ID whose datafiles on srvs exist: from their pool
// if it has one (pooled), else made now (newFileID). A pool running low
// is refilled in the background.
func (s *Store) takeID(ctx context.Context, srvs []uint32) (id FileID, pooled bool, err error) {
	if s.batchDatafiles() != nil && len(srvs) > 0 {
		if id, ok := s.fromPool(srvs); ok {
			return id, true, nil
		}
	}
	id, err = s.newFileID(ctx, srvs)
	return id, false, err
}

// fromPool takes an ID from the pool of srvs, starting a refill when the
// pool runs low.
func (s *Store) fromPool(srvs []uint32) (FileID, bool) {
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := s.poolSetLocked(srvs)
	if ps == nil {
		return 0, false
	}
	if len(ps.ids) == 0 {
		if ps.filled && !ps.grew {
			ps.batch, ps.grew = min(2*ps.size(), maxPoolBatch), true
		}
		return 0, false
	}
	id := ps.ids[0]
	ps.ids = ps.ids[1:]
	return id, true
}

// poolSetLocked returns the pool of srvs, making it if there are not
// maxPoolSets already (nil then), and starts its refill if it runs low.
func (s *Store) poolSetLocked(srvs []uint32) *poolSet {
	key, sorted := setKey(srvs)
	p := &s.pool
	ps := p.sets[key]
	if ps == nil {
		if len(p.sets) >= maxPoolSets {
			return nil
		}
		ps = &poolSet{srvs: sorted}
		p.sets[key] = ps
	}
	if len(ps.ids) < max(poolLow, ps.size()/2) && !ps.filling && time.Now().After(ps.retry) && p.ctx.Err() == nil {
		ps.filling = true
		n := ps.size()
		p.bg.Go(func() { s.refill(ps, n) })
	}
	return ps
}

// size is how many IDs the next refill of ps makes.
func (ps *poolSet) size() int {
	if ps.batch == 0 {
		return poolBatch
	}
	return ps.batch
}

// prefill starts filling the pools that files of the default layout use,
// so that the first creates after a start need not make their datafiles.
func (s *Store) prefill() {
	if s.batchDatafiles() == nil {
		return
	}
	l, d, err := s.chooseLayout(dist.Layout{}, dist.Layout{})
	if err != nil {
		return
	}
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	for first := range s.opts.Servers {
		srvs := s.place(uint32(first), l.Datafiles)
		if s.opts.Stuffing && stuffable(d) {
			srvs = srvs[:1]
		}
		s.poolSetLocked(srvs)
	}
}

// putBack returns an ID taken from the pool of srvs whose file was not
// committed: its datafiles and record are untouched.
func (s *Store) putBack(srvs []uint32, id FileID) {
	key, _ := setKey(srvs)
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if ps := p.sets[key]; ps != nil {
		ps.ids = append([]FileID{id}, ps.ids...)
		return
	}
	p.stale[id] = srvs
}

// putBackAll returns IDs taken from their pools whose files were not
// committed (reservations given back, reserve.go), each to the pool of
// its servers, behind the IDs already there.
func (s *Store) putBackAll(recs []reservation) {
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range recs {
		key, _ := setKey(r.file.Servers)
		if ps := p.sets[key]; ps != nil {
			ps.ids = append(ps.ids, r.file.ID)
			continue
		}
		p.stale[r.file.ID] = r.file.Servers
	}
}

// makingAdd notes that datafiles of id are being made on srvs ahead of
// the commit that names them; makingDone ends that, once the commit (or
// its undo) is over.
func (s *Store) makingAdd(id FileID, srvs []uint32) {
	if len(srvs) == 0 {
		return
	}
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.making == nil {
		p.making = map[FileID][]uint32{}
	}
	p.making[id] = append(p.making[id], srvs...)
}

func (s *Store) makingDone(id FileID, srvs []uint32) {
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	left := p.making[id]
	for _, srv := range srvs {
		if i := slices.Index(left, srv); i >= 0 {
			left = slices.Delete(left, i, i+1)
		}
	}
	if len(left) == 0 {
		delete(p.making, id)
	} else {
		p.making[id] = left
	}
}

// makingNow lists what makingAdd noted, for Scan.
func (s *Store) makingNow() []Pooled {
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Pooled, 0, len(p.making))
	for id, srvs := range p.making {
		srvs = slices.Compact(slices.Sorted(slices.Values(srvs)))
		out = append(out, Pooled{ID: id, Servers: srvs})
	}
	slices.SortFunc(out, func(a, b Pooled) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// unpool deletes the record of pooled ID id, in the transaction that
// commits the file taking it.
func (t *txn) unpool(id FileID) error {
	return t.tx.Bucket(bucketPool).Delete(idKey(id))
}

// refill adds a batch of IDs to ps: it claims its servers, makes the
// datafiles on each with one createBatch, records the IDs whose datafiles
// were all made, and only then offers them. IDs a server already held are
// dropped (and that server claimed again); on a failure nothing is added,
// the datafiles made are removed and the set waits poolRetry.
func (s *Store) refill(ps *poolSet, n int) {
	ctx, cancel := context.WithTimeout(s.pool.ctx, poolOpTimeout)
	defer cancel()
	var ids []FileID
	var err error
	// A batch whose IDs the servers all held already (a restored
	// meta.db, with claims that could not say what they hold) moves
	// past them: try again above.
	for range maxCreateAttempts {
		if ids, err = s.fillBatch(ctx, ps.srvs, n); err != nil || len(ids) > 0 {
			break
		}
	}
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	ps.filling = false
	ps.grew = false
	ps.err = err
	if err != nil {
		p.failed++
		ps.retry = time.Now().Add(poolRetry)
		if p.ctx.Err() != nil {
			// Close stopped it: the server is stopping, nothing failed.
			return
		}
		slog.Warn("pario meta: precreate pool not refilled; creates on these servers make their datafiles one at a time",
			"servers", ps.srvs, "err", err)
		return
	}
	ps.ids = append(ps.ids, ids...)
	ps.filled = true
}

// fillBatch makes and records one batch of pooled IDs on srvs. The
// records are committed first, as an intent: a crash while the datafiles
// are made leaves records, which the next start discards, rather than
// datafiles no record names. The IDs become usable (returned) only once
// their datafiles exist on every server.
func (s *Store) fillBatch(ctx context.Context, srvs []uint32, n int) ([]FileID, error) {
	bd := s.batchDatafiles()
	for _, srv := range srvs {
		if err := s.claim(ctx, srv); err != nil {
			return nil, fmt.Errorf("precreate on I/O server %d: claim: %w", srv, err)
		}
	}
	ids := make([]FileID, 0, n)
	for range n {
		id, err := s.allocID(ctx)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := s.record(ctx, ids, srvs); err != nil {
		return nil, fmt.Errorf("record precreated datafiles: %w", err)
	}
	// The records are the intent that makes the datafiles no orphans: on
	// disk before the datafiles are (durable.go).
	if err := s.Sync(ctx); err != nil {
		return nil, fmt.Errorf("record precreated datafiles: %w", err)
	}
	existed := make([][]FileID, len(srvs))
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for i, srv := range srvs {
		wg.Go(func() { existed[i], errs[i] = bd.CreateBatch(ctx, srv, ids, s.incarnation) })
	}
	wg.Wait()

	taken := map[FileID]bool{}
	var failed []error
	var failedSrvs []uint32
	for i, srv := range srvs {
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("precreate on I/O server %d: %w", srv, errs[i]))
			failedSrvs = append(failedSrvs, srv)
			continue
		}
		if len(existed[i]) > 0 {
			s.forget(srv)
		}
		for _, id := range existed[i] {
			taken[id] = true
		}
	}
	// undo removes what this batch made of the IDs drop selects, on the
	// servers that answered (where it is known what that is). It returns
	// where that failed: each ID whose datafile may be left, and the
	// servers that may hold it.
	undo := func(drop func(FileID) bool) (stuck map[FileID][]uint32, err error) {
		stuck = map[FileID][]uint32{}
		var undoErrs []error
		for i, srv := range srvs {
			if errs[i] != nil {
				continue
			}
			gone := slices.DeleteFunc(slices.Clone(ids), func(id FileID) bool { return !drop(id) || slices.Contains(existed[i], id) })
			if len(gone) == 0 {
				continue
			}
			// A datafile kept because it holds bytes was written by a
			// client that should not have it: fsck reports it.
			if _, err := bd.RemoveIfEmpty(context.WithoutCancel(ctx), srv, gone, s.incarnation); err != nil {
				undoErrs = append(undoErrs, fmt.Errorf("undo precreate on I/O server %d: %w", srv, err))
				for _, id := range gone {
					stuck[id] = append(stuck[id], srv)
				}
			}
		}
		return stuck, errors.Join(undoErrs...)
	}
	if len(failed) > 0 {
		// A server that failed undid its batch, or may have made some of
		// it before its connection broke; a server whose undo failed holds
		// its part. Those parts stay recorded, stale, and their servers are
		// claimed again before their next use, which discards them (or the
		// next start does).
		stuck, uerr := undo(func(FileID) bool { return true })
		where := map[FileID][]uint32{}
		var again []uint32
		for _, id := range ids {
			w := slices.Concat(failedSrvs, stuck[id])
			slices.Sort(w)
			where[id] = w
			again = append(again, w...)
		}
		// A failed update leaves the records naming every server of the
		// set: more than is left, which the start-time discard finds empty.
		rerr := s.restale(context.WithoutCancel(ctx), where)
		slices.Sort(again)
		for _, srv := range slices.Compact(again) {
			s.forget(srv)
		}
		return nil, errors.Join(append(failed, uerr, rerr)...)
	}
	good := slices.DeleteFunc(slices.Clone(ids), func(id FileID) bool { return taken[id] })
	if len(taken) > 0 {
		// The datafiles of a taken ID that existed are not ours: only
		// those this batch made go, and the record with them; where they
		// could not be removed, the ID stays recorded (stale) for those
		// servers, which are claimed again.
		stuck, uerr := undo(func(id FileID) bool { return taken[id] })
		where := map[FileID][]uint32{}
		for id := range taken {
			where[id] = stuck[id] // none left: the record goes
		}
		rerr := s.restale(ctx, where)
		for _, w := range stuck {
			for _, srv := range w {
				s.forget(srv)
			}
		}
		if err := errors.Join(uerr, rerr); err != nil {
			// What stays is recorded (the records name every server of
			// the set if their update failed): a later claim or the next
			// start discards it, and no file is given one of these IDs.
			slog.Warn("pario meta: precreated datafiles of IDs used before not all removed; left recorded for the next claim or start to discard",
				"servers", srvs, "ids", len(taken), "err", err)
		}
		// IDs above what the re-claim reports come with the next batch.
		s.skipIDs(uint64(slices.Max(ids)))
	}
	return good, nil
}

// record commits pool records of ids on srvs.
func (s *Store) record(ctx context.Context, ids []FileID, srvs []uint32) error {
	v := encodeServers(srvs)
	return s.commit.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPool)
		for _, id := range ids {
			if err := b.Put(idKey(id), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// restale makes each ID of where stale on the servers it names, and
// records that: an ID on no server is forgotten (its record deleted).
// Under recordMu, as discardStale, so that a discard of one of these IDs
// running meanwhile commits after this.
func (s *Store) restale(ctx context.Context, where map[FileID][]uint32) error {
	p := &s.pool
	p.recordMu.Lock()
	defer p.recordMu.Unlock()
	p.mu.Lock()
	for id, srvs := range where {
		if len(srvs) == 0 {
			delete(p.stale, id)
		} else {
			p.stale[id] = srvs
		}
	}
	p.mu.Unlock()
	err := s.commit.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPool)
		for id, srvs := range where {
			var err error
			if len(srvs) == 0 {
				err = b.Delete(idKey(id))
			} else {
				err = b.Put(idKey(id), encodeServers(srvs))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record precreated datafiles left: %w", err)
	}
	return nil
}

// discardPools makes every pooled ID with a datafile on srv stale: srv
// is being claimed again, so what it holds is in doubt. Its part is
// discarded at that claim; the other servers' parts now.
func (s *Store) discardPools(srv uint32) {
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	others := map[uint32]bool{}
	for key, ps := range p.sets {
		if !slices.Contains(ps.srvs, srv) {
			continue
		}
		for _, id := range ps.ids {
			p.stale[id] = ps.srvs
			for _, o := range ps.srvs {
				if o != srv {
					others[o] = true
				}
			}
		}
		ps.ids = nil
		if !ps.filling {
			delete(p.sets, key)
		}
	}
	if p.ctx.Err() != nil {
		return
	}
	for o := range others {
		p.bg.Go(func() {
			ctx, cancel := context.WithTimeout(p.ctx, poolOpTimeout)
			defer cancel()
			if err := s.discardStale(ctx, o); err != nil && p.ctx.Err() == nil {
				slog.Warn("pario meta: precreated datafiles not discarded; they are retried at the server's next claim", "err", err)
			}
		})
	}
}

// discardStale removes the datafiles of stale pooled IDs on srv, just
// claimed, where they are empty, and deletes the records of IDs left on
// no server. A datafile that holds bytes (a file made after a restored
// backup took its ID) is kept, for fsck to report as an orphan. If srv
// does not answer, its part waits for its next claim.
func (s *Store) discardStale(ctx context.Context, srv uint32) error {
	bd := s.batchDatafiles()
	if bd == nil {
		return nil
	}
	p := &s.pool
	p.mu.Lock()
	var ids []FileID
	for id, srvs := range p.stale {
		if slices.Contains(srvs, srv) {
			ids = append(ids, id)
		}
	}
	p.mu.Unlock()
	slices.Sort(ids)
	for batch := range slices.Chunk(ids, poolBatch) {
		kept, err := bd.RemoveIfEmpty(ctx, srv, batch, s.incarnation)
		if err != nil {
			return fmt.Errorf("discard precreated datafiles on I/O server %d: %w", srv, err)
		}
		if len(kept) > 0 {
			slog.Warn("pario meta: precreated datafiles hold bytes (a file made after a restored backup used their IDs?); kept for pario fsck",
				"server", srv, "ids", kept)
		}
		// left[id] is where id's datafiles may still be; none: done.
		left := map[FileID][]uint32{}
		p.recordMu.Lock()
		p.mu.Lock()
		for _, id := range batch {
			if srvs, ok := p.stale[id]; ok {
				left[id] = slices.DeleteFunc(slices.Clone(srvs), func(x uint32) bool { return x == srv })
				if len(left[id]) == 0 {
					delete(p.stale, id)
				} else {
					p.stale[id] = left[id]
				}
			}
		}
		p.mu.Unlock()
		err = s.commit.update(ctx, func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketPool)
			for id, srvs := range left {
				var err error
				if len(srvs) == 0 {
					err = b.Delete(idKey(id))
				} else {
					err = b.Put(idKey(id), encodeServers(srvs))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		p.recordMu.Unlock()
		if err != nil {
			return fmt.Errorf("discard precreated datafiles on I/O server %d: %w", srv, err)
		}
	}
	return nil
}

// PoolStats says how many IDs the pools hold ready and how many
// recorded ones wait to be discarded.
type PoolStats struct {
	Ready, Stale, Sets, Filling, Failed int
}

// Pools reports the precreate pools' state.
func (s *Store) Pools() PoolStats {
	p := &s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PoolStats{Stale: len(p.stale), Sets: len(p.sets), Failed: p.failed}
	for _, ps := range p.sets {
		st.Ready += len(ps.ids)
		if ps.filling {
			st.Filling++
		}
	}
	return st
}
