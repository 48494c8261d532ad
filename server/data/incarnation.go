package data

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// incarnationName is the file, in the data directory, that records which
// cluster incarnation the datafiles belong to: 16 hex digits and a newline.
const incarnationName = "INCARNATION"

var (
	// ErrStale is returned (wrapped, errno ESTALE) by writes, truncates and
	// syncs of a datafile that does not exist: its file was removed, or it
	// was never created. Only Create makes datafiles.
	ErrStale = fmt.Errorf("datafile does not exist (its file was removed): %w", syscall.ESTALE)
	// ErrIncarnation is returned (wrapped, errno EREMCHG) when the I/O
	// server's datafiles belong to another cluster incarnation than the
	// metadata server that talks to it.
	ErrIncarnation = errors.New("cluster incarnation mismatch")
)

// incarnationError is an ErrIncarnation with errno EREMCHG (for the wire)
// whose message is only what went wrong.
type incarnationError string

func (e incarnationError) Error() string   { return string(e) }
func (e incarnationError) Unwrap() []error { return []error{ErrIncarnation, syscall.EREMCHG} }

// Adopt says what a Claim may do to a data directory that holds datafiles
// of another (or of no recorded) incarnation.
type Adopt uint8

const (
	// AdoptNone refuses: the datafiles stay with the incarnation they have.
	AdoptNone Adopt = iota
	// AdoptUnrecorded takes over datafiles only if no incarnation is
	// recorded: a data directory written before incarnations existed.
	AdoptUnrecorded
	// AdoptAny takes over the datafiles whatever their incarnation. Their
	// IDs stay reserved (the metadata server hands out only larger ones);
	// the datafiles no file points to are orphans for pario fsck.
	AdoptAny
)

// ClaimResult is what the metadata server learns from a Claim.
type ClaimResult struct {
	// MaxID is the highest datafile ID in the data directory (0 if none);
	// the metadata server hands out only larger IDs afterwards.
	MaxID uint64
	// Datafiles is the number of datafiles in the data directory.
	Datafiles uint64
}

// Incarnation returns the cluster incarnation recorded in the data
// directory, 0 if none is.
func (s *Store) Incarnation() uint64 {
	s.incMu.Lock()
	defer s.incMu.Unlock()
	return s.incarnation
}

// Refusing returns why the store must not serve datafile operations, or
// nil: it holds datafiles but no recorded incarnation, so nothing says
// which metadata server's files they are until one claims them.
func (s *Store) Refusing() error {
	if !s.unclaimed.Load() {
		return nil
	}
	return incarnationError(fmt.Sprintf("I/O server data directory %s holds datafiles of an unknown cluster incarnation, and no metadata server has claimed them yet", s.dir))
}

// CheckIncarnation returns nil if inc is the recorded incarnation, and an
// ErrIncarnation error otherwise.
func (s *Store) CheckIncarnation(inc uint64) error {
	if got := s.Incarnation(); got != inc {
		if got == 0 {
			return incarnationError(fmt.Sprintf("I/O server data directory %s has not been claimed by a metadata server (incarnation %016x asks)", s.dir, inc))
		}
		return incarnationError(fmt.Sprintf("I/O server data directory %s belongs to cluster incarnation %016x, not %016x", s.dir, got, inc))
	}
	return nil
}

// Claim records inc as the data directory's cluster incarnation, the first
// time a metadata server talks to it, and reports the highest datafile ID
// held. A directory that already belongs to inc is left as it is. One
// holding datafiles of another incarnation (or of none recorded) is
// refused with ErrIncarnation unless adopt allows taking it over; one
// without datafiles is always taken. The record is durable (file and
// directory synced) before Claim returns. Claim walks every shard, so it
// costs a directory listing of all datafiles; it is meant for the
// metadata server's start, not for every request.
func (s *Store) Claim(ctx context.Context, inc uint64, adopt Adopt) (ClaimResult, error) {
	if inc == 0 {
		return ClaimResult{}, fmt.Errorf("data: claim: incarnation 0: %w", syscall.EINVAL)
	}
	if err := s.begin(ctx); err != nil {
		return ClaimResult{}, fmt.Errorf("data: claim: %w", err)
	}
	defer s.ops.Done()
	// After any batch in flight (a dead metadata server's, undone once its
	// connection's end cancels it), so that MaxID and the discard that
	// follows see what it left for good.
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	s.incMu.Lock()
	defer s.incMu.Unlock()
	maxID, count, err := s.scanIDs(false)
	if err != nil {
		return ClaimResult{}, fmt.Errorf("data: claim %s: %w", s.dir, err)
	}
	res := ClaimResult{MaxID: maxID, Datafiles: count}
	old := s.incarnation
	if old == inc {
		return res, nil
	}
	if count > 0 && !(adopt == AdoptAny || adopt == AdoptUnrecorded && old == 0) {
		what := "of no recorded cluster incarnation"
		if old != 0 {
			what = fmt.Sprintf("of cluster incarnation %016x", old)
		}
		return ClaimResult{}, incarnationError(fmt.Sprintf("I/O server data directory %s holds datafiles (%d) %s, not of incarnation %016x", s.dir, count, what, inc))
	}
	if err := s.writeIncarnation(inc); err != nil {
		return ClaimResult{}, fmt.Errorf("data: claim %s: %w", s.dir, err)
	}
	s.incarnation = inc
	s.unclaimed.Store(false)
	return res, nil
}

// writeIncarnation records inc in the INCARNATION file and makes it
// durable. The record has a fixed length and is overwritten in place, so a
// crash leaves the old record or the new one, not a mix (a 17-byte write
// within one sector).
func (s *Store) writeIncarnation(inc uint64) error {
	f, err := s.root.OpenFile(incarnationName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", incarnationName, err)
	}
	defer f.Close()
	rec := fmt.Sprintf("%016x\n", inc)
	if _, err := f.WriteAt([]byte(rec), 0); err != nil {
		return fmt.Errorf("%s: %w", incarnationName, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", incarnationName, err)
	}
	if err := syncDir(s.root); err != nil {
		return fmt.Errorf("%s: %w", incarnationName, err)
	}
	return nil
}

// readIncarnation loads the recorded incarnation at Open; a missing
// record is 0, a malformed one an error naming the file.
func (s *Store) readIncarnation() error {
	f, err := s.root.OpenFile(incarnationName, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		_, count, err := s.scanIDs(true)
		if err != nil {
			return err
		}
		s.unclaimed.Store(count > 0)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", incarnationName, err)
	}
	defer f.Close()
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	v, err := strconv.ParseUint(strings.TrimSpace(string(b[:n])), 16, 64)
	if err != nil || v == 0 {
		return fmt.Errorf("%s holds %q, not a cluster incarnation (16 hex digits); restore it or see docs/store.md: %w",
			incarnationName, b[:n], fs.ErrInvalid)
	}
	s.incarnation = v
	return nil
}

// scanIDs walks the shards and returns the highest datafile ID and the
// number of datafiles, unwritten ones included; with first it stops at
// the first file found.
// Entries that are not datafile names are ignored, and so is a shard that
// cannot be listed: every operation on its datafiles fails (s.shard opens
// it the same way, confined to df/), so none of them can be read or reused.
func (s *Store) scanIDs(first bool) (maxID, count uint64, err error) {
	for i := range 256 {
		// Through the df root, not s.shard: a scan at start must not pin
		// 256 shard descriptors that the server may never need.
		ents, err := s.df.ReadDir(shardName(byte(i)))
		if err != nil {
			continue
		}
		for _, e := range ents {
			id, ok := parseLeaf(e.Name())
			if !ok || byte(id) != byte(i) || !e.Type().IsRegular() {
				continue
			}
			count++
			maxID = max(maxID, id)
			if first {
				return maxID, count, nil
			}
		}
	}
	unwritten, maxLogged := s.unwrittenMax()
	return max(maxID, maxLogged), count + uint64(unwritten), nil
}
