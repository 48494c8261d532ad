package data

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/vfs"
	"github.com/pario/pario/vfs/errorfs"
)

// memStore opens a Store on a fresh crashable in-memory file system with
// fault injection, and returns both.
func memStore(t *testing.T, opts StoreOptions) (*Store, *vfs.MemFS, *errorfs.FS) {
	t.Helper()
	mem := vfs.NewMem()
	claimed(t, mem)
	efs := errorfs.Wrap(mem)
	opts.FS = efs
	s, err := Open("mem", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, mem, efs
}

// claimed records an incarnation in mem, durably, as a running I/O
// server's data directory has: Open then opens no shard before it is used.
func claimed(t testing.TB, mem *vfs.MemFS) {
	t.Helper()
	f, err := mem.OpenFile(incarnationName, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.WriteAt([]byte("00000000000000a1\n"), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = mem.SyncDir(".")
	}
	if err != nil {
		t.Fatal(err)
	}
}

// afterCrash opens a Store on what a power cut would leave of mem.
func afterCrash(t *testing.T, mem *vfs.MemFS) *Store {
	t.Helper()
	s, err := Open("crashed", StoreOptions{FS: mem.CrashClone()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// contents returns datafile id whole, or nil if it is empty or missing.
func contents(t *testing.T, s *Store, id uint64) []byte {
	t.Helper()
	n, err := s.Size(ctx, id)
	if errors.Is(err, ErrStale) || err == nil && n == 0 {
		return nil // no datafile, or an empty one
	}
	if err != nil {
		t.Fatal(err)
	}
	return mustRead(t, s, id, 0, int(n))
}

// wantDurable crashes mem and checks datafile id reads back as want.
func wantDurable(t *testing.T, mem *vfs.MemFS, id uint64, want []byte) {
	t.Helper()
	if got := contents(t, afterCrash(t, mem), id); !bytes.Equal(got, want) {
		t.Fatalf("after a crash datafile %#x has %d bytes, want %d (equal: %v)", id, len(got), len(want), bytes.Equal(got, want))
	}
}

// wantErr checks err is the injected EIO, wrapped with a message that
// starts with prefix and names the failed operation.
func wantErr(t *testing.T, err error, prefix, op string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one starting %q", prefix)
	}
	if !errors.Is(err, syscall.EIO) || !strings.HasPrefix(err.Error(), prefix) ||
		!strings.Contains(err.Error(), op) || !strings.Contains(err.Error(), "(injected)") {
		t.Fatalf("error %q: want EIO (injected), starting %q and naming %q", err, prefix, op)
	}
	t.Log(err)
}

var eio = syscall.EIO

// TestWriteFailures fails each step of WriteAt, WriteAtv and Truncate.
// The error names the datafile and the operation, nothing is claimed
// durable that is not, and once the fault is gone a retry and a Sync make
// the data durable.
func TestWriteFailures(t *testing.T) {
	const id = 0x2a1
	data := pattern(id, 0, 10000)
	write := func(s *Store) error { return s.WriteAt(ctx, id, data, 0) }
	create := func(s *Store) error { return s.Create(ctx, id) }
	writev := func(s *Store) error {
		return s.WriteAtv(ctx, id, [][]byte{data[:100], data[100:5000], data[5000:]}, 0)
	}
	for _, c := range []struct {
		name     string
		existing bool // the datafile exists (synced) before
		rule     errorfs.Rule
		op       func(*Store) error
		prefix   string
		partial  int // bytes of the failed write that reach the file
	}{
		{"create", false, errorfs.Rule{Op: errorfs.OpOpen, Path: datafilePath(id)}, create,
			"datafile 0x2a1: create: ", 0},
		{"shard", false, errorfs.Rule{Op: errorfs.OpOpenRoot, Path: "df/a1"}, create,
			"datafile 0x2a1: create: shard df/a1: ", 0},
		{"write new", false, errorfs.Rule{Op: errorfs.OpWrite, Path: datafilePath(id)}, write,
			"datafile 0x2a1: write at 0: ", 0},
		{"write existing", true, errorfs.Rule{Op: errorfs.OpWrite, Path: datafilePath(id)}, write,
			"datafile 0x2a1: write at 0: ", 0},
		{"short write", false, errorfs.Rule{Op: errorfs.OpWrite, Path: datafilePath(id), ShortWrite: 4096}, write,
			"datafile 0x2a1: write at 0: ", 4096},
		{"short writev", true, errorfs.Rule{Op: errorfs.OpWrite, Path: datafilePath(id), Nth: 2, ShortWrite: 7}, writev,
			"datafile 0x2a1: writev at 0: ", 107},
		{"truncate", false, errorfs.Rule{Op: errorfs.OpTruncate, Path: datafilePath(id)},
			func(s *Store) error { return s.Truncate(ctx, id, 10000) },
			"datafile 0x2a1: truncate to 10000: ", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, mem, efs := memStore(t, StoreOptions{})
			var before []byte
			if c.existing {
				before = pattern(1, 0, 20000)
				mustWrite(t, s, id, before, 0)
				if err := s.Sync(ctx, id); err != nil {
					t.Fatal(err)
				}
			} else if !strings.Contains(c.prefix, ": create: ") {
				ensure(t, s, id) // created, not synced
			}
			c.rule.Err = eio
			rule := &c.rule
			efs.Add(rule)
			wantErr(t, c.op(s), c.prefix, c.rule.Op.String())
			if efs.Injected(rule) != 1 {
				t.Fatalf("rule fired %d times", efs.Injected(rule))
			}
			efs.Clear()
			// What reached the file is there, and only that.
			want := append([]byte(nil), before...)
			if len(want) < c.partial {
				want = append(want, make([]byte, c.partial-len(want))...)
			}
			copy(want, data[:c.partial])
			if got := contents(t, s, id); !bytes.Equal(got, want) {
				t.Fatalf("after the failure the datafile has %d bytes, want %d", len(got), len(want))
			}
			// A failed write is not durable by accident, nor does it lose
			// the last sync.
			wantDurable(t, mem, id, before)
			// SyncAll covers whatever the failed call changed.
			if err := s.SyncAll(ctx); err != nil {
				t.Fatal(err)
			}
			wantDurable(t, mem, id, want)
			// The retry succeeds and its Sync makes it durable.
			if err := c.op(s); err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(ctx, id); err != nil {
				t.Fatal(err)
			}
			wantDurable(t, mem, id, contents(t, s, id))
		})
	}
}

// TestSyncFailures fails each sync the store does: a failed Sync or
// SyncAll reports the datafile or directory, and the next one redoes what
// failed, so that once it succeeds the data survives a crash.
func TestSyncFailures(t *testing.T) {
	const id = 0x3b2
	data := pattern(id, 0, 9000)
	sync := func(s *Store) error { return s.Sync(ctx, id) }
	syncAll := func(s *Store) error { return s.SyncAll(ctx) }
	for _, c := range []struct {
		name     string
		existing bool
		maxOpen  int
		rule     errorfs.Rule
		op       func(*Store) error
		prefix   string
	}{
		{"fdatasync of a new datafile", false, 0, errorfs.Rule{Op: errorfs.OpSync, Path: datafilePath(id)}, sync,
			"datafile 0x3b2: sync: "},
		{"fdatasync of an old datafile", true, 0, errorfs.Rule{Op: errorfs.OpSync, Path: datafilePath(id)}, sync,
			"datafile 0x3b2: sync: "},
		{"directory of a new datafile", false, 0, errorfs.Rule{Op: errorfs.OpSyncDir, Path: "df/b2"}, sync,
			"datafile 0x3b2: sync: sync directory df/b2: "},
		{"reopening an evicted datafile", false, 1, errorfs.Rule{Op: errorfs.OpOpen, Path: datafilePath(id)}, sync,
			"datafile 0x3b2: sync: "},
		{"SyncAll fdatasync", false, 0, errorfs.Rule{Op: errorfs.OpSync, Path: datafilePath(id)}, syncAll,
			"datafile 0x3b2: sync: "},
		{"SyncAll directory", false, 0, errorfs.Rule{Op: errorfs.OpSyncDir, Path: "df/b2"}, syncAll,
			"data: sync all: sync directory df/b2: "},
		{"SyncAll syncfs", false, 1, errorfs.Rule{Op: errorfs.OpSyncFS}, syncAll,
			"data: sync all: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, mem, efs := memStore(t, StoreOptions{MaxOpenFiles: c.maxOpen})
			var before []byte
			if c.existing {
				before = pattern(2, 0, 3000)
				mustWrite(t, s, id, before, 0)
				if err := s.Sync(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			mustWrite(t, s, id, data, 0)
			// Another datafile; with a 1-handle cache, writing it closes
			// id's dirty handle, so Sync must reopen id and only SyncAll's
			// syncfs reaches its data.
			mustWrite(t, s, 0x3b3, []byte("other"), 0)
			rule := &c.rule
			rule.Err = eio
			efs.Add(rule)
			wantErr(t, c.op(s), c.prefix, c.rule.Op.String())
			efs.Clear()
			// The failed sync did not make id durable (the last good sync
			// is all there is) ...
			if c.rule.Op != errorfs.OpSyncDir {
				wantDurable(t, mem, id, before)
			} else if got := contents(t, afterCrash(t, mem), id); got != nil {
				t.Fatalf("datafile whose directory sync failed survived a crash with %d bytes", len(got))
			}
			// ... and the next one does everything.
			if err := c.op(s); err != nil {
				t.Fatal(err)
			}
			want := append([]byte(nil), data...)
			if len(before) > len(want) {
				want = append(want, before[len(want):]...)
			}
			wantDurable(t, mem, id, want)
		})
	}
}

// TestRemoveFailures fails Remove: the error names the datafile, and the
// datafile, which is still there, keeps every durability promise: a later
// Sync or SyncAll makes what was written to it durable.
func TestRemoveFailures(t *testing.T) {
	const id = 0x4c3
	data := pattern(id, 0, 5000)
	for _, c := range []struct {
		name   string
		rule   errorfs.Rule
		sync   func(*Store) error
		prefix string
	}{
		{"unlink, then Sync", errorfs.Rule{Op: errorfs.OpRemove, Path: datafilePath(id)},
			func(s *Store) error { return s.Sync(ctx, id) }, "datafile 0x4c3: remove: "},
		{"unlink, then SyncAll", errorfs.Rule{Op: errorfs.OpRemove, Path: datafilePath(id)},
			func(s *Store) error { return s.SyncAll(ctx) }, "datafile 0x4c3: remove: "},
		{"shard, then Sync", errorfs.Rule{Op: errorfs.OpOpenRoot, Path: "df/c3"},
			func(s *Store) error { return s.Sync(ctx, id) }, "datafile 0x4c3: remove: shard df/c3: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, mem, efs := memStore(t, StoreOptions{})
			if c.rule.Op == errorfs.OpOpenRoot {
				// The shard is opened on first use; make Remove the first.
				rule := &c.rule
				rule.Err = eio
				efs.Add(rule)
				wantErr(t, s.Remove(ctx, id), c.prefix, "openroot")
				efs.Clear()
				mustWrite(t, s, id, data, 0)
				if err := c.sync(s); err != nil {
					t.Fatal(err)
				}
				wantDurable(t, mem, id, data)
				return
			}
			mustWrite(t, s, id, data, 0) // a new datafile, not yet synced
			rule := &c.rule
			rule.Err = eio
			efs.Add(rule)
			wantErr(t, s.Remove(ctx, id), c.prefix, "remove")
			efs.Clear()
			if got := contents(t, s, id); !bytes.Equal(got, data) {
				t.Fatal("a failed remove changed the datafile")
			}
			if err := c.sync(s); err != nil {
				t.Fatal(err)
			}
			wantDurable(t, mem, id, data)
			// Removing it for real works.
			if err := s.Remove(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Size(ctx, id); !errors.Is(err, ErrStale) {
				t.Fatalf("size after remove: %v, want ESTALE", err)
			}
		})
	}
}

// TestAcknowledgedSyncsSurviveCrash checks each sync on the write path is
// there: in every case the data is durable only if each fdatasync,
// directory fsync and syncfs the store does is done. Removing any one of
// them from store.go makes a case fail.
func TestAcknowledgedSyncsSurviveCrash(t *testing.T) {
	ids := []uint64{0x10, 0x110, 0x11, 0x5012}
	for _, c := range []struct {
		name    string
		maxOpen int
		sync    func(s *Store, id uint64) error
		old     bool // the datafiles exist and were synced before
	}{
		{"Sync new", 0, func(s *Store, id uint64) error { return s.Sync(ctx, id) }, false},
		{"Sync old", 0, func(s *Store, id uint64) error { return s.Sync(ctx, id) }, true},
		{"Sync new, evicted", 1, func(s *Store, id uint64) error { return s.Sync(ctx, id) }, false},
		{"SyncAll new", 0, func(s *Store, _ uint64) error { return s.SyncAll(ctx) }, false},
		{"SyncAll old", 0, func(s *Store, _ uint64) error { return s.SyncAll(ctx) }, true},
		{"SyncAll new, evicted", 2, func(s *Store, _ uint64) error { return s.SyncAll(ctx) }, false},
		{"SyncAll old, evicted", 2, func(s *Store, _ uint64) error { return s.SyncAll(ctx) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, mem, _ := memStore(t, StoreOptions{MaxOpenFiles: c.maxOpen})
			want := map[uint64][]byte{}
			if c.old {
				for _, id := range ids {
					mustWrite(t, s, id, pattern(id+1, 0, 3000), 0)
				}
				if err := s.SyncAll(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for i, id := range ids {
				want[id] = pattern(id, 0, 1000*(i+1))
				if i == 2 {
					// Truncate alone: down to nothing (for an old datafile)
					// and up again, to a hole.
					ensure(t, s, id)
					if err := s.Truncate(ctx, id, 0); err != nil {
						t.Fatal(err)
					}
					if err := s.Truncate(ctx, id, 1000*int64(i+1)); err != nil {
						t.Fatal(err)
					}
					want[id] = make([]byte, 1000*(i+1))
				} else {
					mustWrite(t, s, id, want[id], 0)
				}
				if c.old && i != 2 {
					if err := s.Truncate(ctx, id, 1000*int64(i+1)); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, id := range ids {
				if err := c.sync(s, id); err != nil {
					t.Fatal(err)
				}
			}
			crashed := afterCrash(t, mem)
			for _, id := range ids {
				if got := contents(t, crashed, id); !bytes.Equal(got, want[id]) {
					t.Errorf("datafile %#x: %d bytes after a crash, want %d (equal: %v)",
						id, len(got), len(want[id]), bytes.Equal(got, want[id]))
				}
			}
		})
	}
}

// TestOpenFailures fails each step of Open on a fresh directory: the error
// names the directory, and a later Open succeeds and is durable.
func TestOpenFailures(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpLock, errorfs.OpTruncate, errorfs.OpWrite,
		errorfs.OpMkdir, errorfs.OpOpenRoot, errorfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			rule := &errorfs.Rule{Op: op, Err: eio}
			efs := errorfs.Wrap(mem, rule)
			s, err := Open("memdir", StoreOptions{FS: efs})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, syscall.EIO) || !strings.HasPrefix(err.Error(), "data: open memdir: ") {
				t.Fatalf("error %q", err)
			}
			t.Log(err)
			efs.Clear()
			s, err = Open("memdir", StoreOptions{FS: efs})
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, 7, []byte("seven"), 0)
			if err := s.Sync(ctx, 7); err != nil {
				t.Fatal(err)
			}
			s.Close()
			wantDurable(t, mem, 7, []byte("seven"))
		})
	}
}

// TestMemStoreLocked: a second Store on the same in-memory directory is
// refused like on disk.
func TestMemStoreLocked(t *testing.T) {
	s, mem, _ := memStore(t, StoreOptions{})
	_, err := Open("again", StoreOptions{FS: mem})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Fatalf("second Open: %v", err)
	}
	s.Close()
	s2, err := Open("again", StoreOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

// TestReadAndStatFailures: reads, sizes and statfs report the datafile or
// the directory too.
func TestReadAndStatFailures(t *testing.T) {
	s, _, efs := memStore(t, StoreOptions{})
	mustWrite(t, s, 0x77, []byte("x"), 0)
	efs.Add(&errorfs.Rule{Op: errorfs.OpRead, Err: eio})
	_, err := s.ReadAt(ctx, 0x77, make([]byte, 1), 0)
	wantErr(t, err, "datafile 0x77: read at 0: ", "read")
	if err == io.EOF {
		t.Fatal("EOF")
	}
	efs.Add(&errorfs.Rule{Op: errorfs.OpStat, Err: eio})
	_, err = s.Size(ctx, 0x77)
	wantErr(t, err, "datafile 0x77: size: ", "stat")
	efs.Add(&errorfs.Rule{Op: errorfs.OpReadDir, Err: eio})
	_, err = s.Statfs(ctx)
	wantErr(t, err, "data: statfs: ", "readdir")
	efs.Clear()
	st, err := s.Statfs(ctx)
	if err != nil || st.Datafiles != 1 || st.Total != vfs.MemCapacity {
		t.Fatalf("Statfs = %+v, %v", st, err)
	}
}
