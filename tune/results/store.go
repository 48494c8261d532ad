package results

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/pario/pario/internal/filekind"
)

// FormatVersion is the schema version written to the "meta" bucket.
const FormatVersion = 1

// lockTimeout is how long Open waits for the file lock before reporting that
// another process holds it. A variable so tests can shorten it.
var lockTimeout = 2 * time.Second

var (
	bucketMeta    = []byte("meta")
	bucketResults = []byte("results")
	keyFormat     = []byte("format")
)

// Options configure Open.
type Options struct {
	// ReadOnly opens an existing database without the right to write
	// (several readers may share it; a writer excludes them).
	ReadOnly bool
	// NoSync skips the fsync after each write: much faster, but the
	// results of the last moments before a crash may be lost (they are
	// evaluated again on resume). The database itself stays consistent.
	NoSync bool
}

// Store is a results database: one bbolt file. All methods are safe for
// concurrent use.
type Store struct {
	db   *bbolt.DB
	path string
}

// Open opens the results database at path, creating it if it does not exist
// (unless opts.ReadOnly), and reads every record to check it. Errors name
// the path and say what is wrong: the file cannot be read, is not a bbolt
// database, is damaged, is another kind of bbolt database, has an unknown
// format version, or is locked by another process (Open waits 2 s for the
// lock). See the package doc for damaged files.
func Open(path string, opts Options) (*Store, error) {
	fail := func(format string, args ...any) (*Store, error) {
		return nil, fmt.Errorf("results: open %s: %s", path, fmt.Sprintf(format, args...))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fail("is a directory, not a results database")
	} else if err == nil && !fi.Mode().IsRegular() {
		// bbolt maps, seeks and locks its file: a named pipe failed
		// with "illegal seek" (or, read-only, waited for a writer).
		return fail("is %s, not a regular file: a results database must be a regular file (bbolt maps it into memory)", filekind.Of(fi.Mode()))
	} else if err != nil && (opts.ReadOnly || !errors.Is(err, os.ErrNotExist)) {
		return nil, fmt.Errorf("results: open %s: %w", path, err)
	}
	bo := *bbolt.DefaultOptions
	bo.Timeout = lockTimeout
	bo.ReadOnly = opts.ReadOnly
	bo.NoSync = opts.NoSync
	db, err := openBolt(path, &bo)
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fail("database is locked by another process (is another search using it?); gave up after %v", lockTimeout)
	case errors.Is(err, errDamaged):
		return fail("database is corrupt: %v", err)
	case errors.As(err, new(*fs.PathError)):
		return nil, fmt.Errorf("results: open %s: %w", path, err)
	case err != nil:
		// ErrInvalid, ErrChecksum, ErrVersionMismatch, "file size too
		// small", ...: bbolt cannot make sense of the file.
		return fail("not a results database (not a bbolt file, or a damaged one): %v", err)
	}
	s := &Store{db: db, path: path}
	if err := s.check(); err != nil {
		db.Close()
		return fail("database is corrupt: %v", err)
	}
	if opts.ReadOnly {
		err = s.view(s.checkTx)
	} else {
		err = s.update(s.initTx)
	}
	if err != nil {
		db.Close()
		return fail("%v", err)
	}
	return s, nil
}

// errDamaged marks a panic of bbolt.Open on a damaged file.
var errDamaged = errors.New("bbolt panicked reading it")

// openBolt is bbolt.Open, turning a panic or a memory fault on a damaged
// file into an error. After a panic it closes the file, which releases the
// lock (bbolt's memory map of the damaged file is left behind).
func openBolt(path string, o *bbolt.Options) (db *bbolt.DB, err error) {
	var f *os.File
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		var err error
		f, err = os.OpenFile(name, flag, perm)
		return f, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if f != nil {
				f.Close()
			}
			db, err = nil, fmt.Errorf("%w: %v", errDamaged, p)
		}
	}()
	return bbolt.Open(path, 0o600, o)
}

// view and update are bbolt's View and Update, turning a panic or a memory
// fault (bbolt panics on some damaged pages, and reads others through its
// memory map beyond any valid address) into an error.
func (s *Store) view(fn func(*bbolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err)
	return s.db.View(fn)
}

func (s *Store) update(fn func(*bbolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err)
	return s.db.Update(fn)
}

func recoverCorrupt(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: damaged database file: %v", errCorrupt, p)
	}
}

// check reads every record (the database of a tuner holds thousands, not
// millions), so that a damaged file is reported at Open rather than in the
// middle of a search. (bbolt's own Tx.Check runs in a goroutine of its own,
// where a fault on a damaged page would crash the process.)
func (s *Store) check() error {
	return s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketResults)
		if b == nil {
			return nil // a new or foreign database: initTx or checkTx says which
		}
		return b.ForEach(func(k, v []byte) error {
			key, err := DecodeKey(k)
			if err != nil {
				return err
			}
			if _, err := decodeRecord(v); err != nil {
				return fmt.Errorf("%s %s %v: %w", key.System, key.Objective, key.Params, err)
			}
			return nil
		})
	})
}

// initTx creates the buckets of a new database or checks an existing one.
func (s *Store) initTx(tx *bbolt.Tx) error {
	if tx.Bucket(bucketMeta) == nil {
		if err := foreign(tx); err != nil {
			return err
		}
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyFormat, binary.BigEndian.AppendUint64(nil, FormatVersion)); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bucketResults)
		return err
	}
	return s.checkTx(tx)
}

// foreign returns an error if tx's database has buckets but not ours.
func foreign(tx *bbolt.Tx) error {
	var names []string
	_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		names = append(names, fmt.Sprintf("%q", name))
		return nil
	})
	if len(names) > 0 {
		sort.Strings(names)
		return fmt.Errorf("a bbolt database but not a results database (it has buckets %v, no \"meta\")", names)
	}
	return nil
}

func (s *Store) checkTx(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		if err := foreign(tx); err != nil {
			return err
		}
		return errors.New("an empty bbolt database, not a results database")
	}
	v := meta.Get(keyFormat)
	if len(v) != 8 {
		return fmt.Errorf("not a results database: bad format record %x", v)
	}
	if f := binary.BigEndian.Uint64(v); f != FormatVersion {
		return fmt.Errorf("results format %d (this build reads format %d)", f, FormatVersion)
	}
	if tx.Bucket(bucketResults) == nil {
		return errors.New("not a results database: no \"results\" bucket")
	}
	return nil
}

// Path is the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Get returns the record stored under k.
func (s *Store) Get(k Key) (Record, bool, error) {
	kb, err := k.Encode()
	if err != nil {
		return Record{}, false, err
	}
	var r Record
	var found bool
	err = s.view(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketResults).Get(kb)
		if v == nil {
			return nil
		}
		found = true
		r, err = decodeRecord(v)
		return err
	})
	if err != nil {
		return Record{}, false, fmt.Errorf("results: %s: get %s %s %v: %w", s.path, k.System, k.Objective, k.Params, err)
	}
	return r, found, nil
}

// Put stores r under k, replacing any earlier record. It is durable when it
// returns unless the store was opened with NoSync.
func (s *Store) Put(k Key, r Record) error {
	kb, err := k.Encode()
	if err != nil {
		return err
	}
	if err := checkRecord(r); err != nil {
		return err
	}
	err = s.update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketResults).Put(kb, encodeRecord(r))
	})
	if err != nil {
		return fmt.Errorf("results: %s: put: %w", s.path, err)
	}
	return nil
}

// Each calls fn for every record of system and objective, in key order; an
// empty objective means every objective of the system, and an empty system
// every record. It stops at fn's first error and returns it.
func (s *Store) Each(system, objective string, fn func(Key, Record) error) error {
	var p []byte
	switch {
	case system != "":
		p = prefix(system, objective)
	case objective != "":
		return errors.New("results: Each with an objective needs a system")
	}
	return s.view(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketResults).Cursor()
		for k, v := c.Seek(p); k != nil && hasPrefix(k, p); k, v = c.Next() {
			key, err := DecodeKey(k)
			if err != nil {
				return fmt.Errorf("results: %s: %w", s.path, err)
			}
			r, err := decodeRecord(v)
			if err != nil {
				return fmt.Errorf("results: %s: %s %s %v: %w", s.path, key.System, key.Objective, key.Params, err)
			}
			if err := fn(key, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Best returns the stored record of system and objective with the smallest
// value, and false if there is none.
func (s *Store) Best(system, objective string) (Key, Record, bool, error) {
	var bk Key
	br := Record{Value: math.Inf(1)}
	found := false
	err := s.Each(system, objective, func(k Key, r Record) error {
		if !found || r.Value < br.Value {
			bk, br, found = k, r, true
		}
		return nil
	})
	return bk, br, found, err
}
