package data

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/pario/pario/vfs"
	"github.com/pario/pario/vfs/errorfs"
)

// crashModel is what a test knows of one datafile.
type crashModel struct {
	cur    []byte // contents now; nil with !exists
	exists bool
	// synced is the contents an acknowledged Sync or SyncAll made durable,
	// and clean says nothing changed the datafile since: a crash must
	// then leave exactly synced.
	synced []byte
	clean  bool
	// had[i] has bit v set if byte i ever held v; maxSize is the largest
	// size it ever had. A crash may leave any mix of old states, but no
	// byte a position never held and no size it never had.
	had     [][4]uint64
	maxSize int
}

func (m *crashModel) write(p []byte, off int) {
	if end := off + len(p); end > len(m.cur) {
		m.resize(end)
	}
	copy(m.cur[off:], p)
	for i, b := range p {
		m.had[off+i][b>>6] |= 1 << (b & 63)
	}
	m.exists, m.clean = true, false
}

func (m *crashModel) resize(n int) {
	if n <= len(m.cur) {
		m.cur = m.cur[:n]
	} else {
		m.cur = append(m.cur, make([]byte, n-len(m.cur))...)
	}
	for len(m.had) < n {
		m.had = append(m.had, [4]uint64{1}) // zero: a hole
	}
	m.maxSize = max(m.maxSize, n)
	m.exists, m.clean = true, false
}

func (m *crashModel) markSynced() {
	m.synced = append([]byte(nil), m.cur...)
	m.clean = true
}

// TestCrashRandomWorkload runs a random mix of writes, gathered writes,
// truncates, syncs, SyncAlls, removes and their durable batches (the
// unwritten datafiles of CreateBatch, RemoveBatch) over a few datafiles (some
// sharing a shard directory, through a 3-handle cache so handles are
// evicted dirty), with some syncs failing, and at random points takes what
// a power cut would leave, opens a Store on it and checks that every
// acknowledged sync reads back exactly and no datafile holds a byte or a
// size it never had.
func TestCrashRandomWorkload(t *testing.T) {
	ids := []uint64{0x01, 0x101, 0x201, 0x02, 0x1ff, 0xabcdef00}
	const ops, crashes, maxLen, maxOff = 400, 12, 9000, 30000
	for seed := range uint64(40) {
		t.Run("", func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 17))
			s, mem, efs := memStore(t, StoreOptions{MaxOpenFiles: 3, WriteBehind: 16 << 10})
			model := map[uint64]*crashModel{}
			for _, id := range ids {
				model[id] = &crashModel{}
			}
			crashAt := map[int]bool{}
			for len(crashAt) < crashes {
				crashAt[r.IntN(ops)] = true
			}
			gen := uint64(0)
			for op := range ops {
				if crashAt[op] {
					checkCrash(t, mem, model, op)
				}
				id := ids[r.IntN(len(ids))]
				m := model[id]
				gen++
				switch k := r.IntN(20); {
				case k < 7: // write
					off, n := r.IntN(maxOff), 1+r.IntN(maxLen)
					p := pattern(id^gen<<32, int64(off), n)
					mustWrite(t, s, id, p, int64(off))
					m.write(p, off)
				case k < 9: // gathered write
					off, n := r.IntN(maxOff), 2+r.IntN(maxLen)
					p := pattern(id^gen<<32, int64(off), n)
					cut := 1 + r.IntN(n-1)
					ensure(t, s, id)
					if err := s.WriteAtv(ctx, id, [][]byte{p[:cut], p[cut:]}, int64(off)); err != nil {
						t.Fatal(err)
					}
					m.write(p, off)
				case k < 11: // truncate
					n := r.IntN(maxOff + maxLen)
					ensure(t, s, id)
					if err := s.Truncate(ctx, id, int64(n)); err != nil {
						t.Fatal(err)
					}
					m.resize(n)
				case k < 16: // sync, sometimes failing
					fail := maybeFail(r, efs)
					err := s.Sync(ctx, id)
					efs.Clear()
					switch {
					case !m.exists:
						if !errors.Is(err, syscall.ESTALE) {
							t.Fatalf("sync of a missing datafile: %v, want ESTALE", err)
						}
					case err == nil:
						m.markSynced()
					case err != nil && !fail:
						t.Fatal(err)
					}
				case k < 17: // sync all, sometimes failing
					fail := maybeFail(r, efs)
					err := s.SyncAll(ctx)
					efs.Clear()
					switch {
					case err == nil:
						for _, m := range model {
							if m.exists {
								m.markSynced()
							} else {
								m.clean = false
							}
						}
					case !fail:
						t.Fatal(err)
					}
				case k < 19 && r.IntN(2) == 0: // create batch (unwritten, durable)
					existed, err := s.CreateBatch(ctx, []uint64{id})
					if err != nil {
						t.Fatal(err)
					}
					if len(existed) != 0 != m.exists {
						t.Fatalf("create batch of %#x: existed %#x, but the datafile exists: %v", id, existed, m.exists)
					}
					if !m.exists {
						m.resize(0)
						m.markSynced()
					}
				case k < 19: // remove batch (durable)
					if err := s.RemoveBatch(ctx, []uint64{id}); err != nil {
						t.Fatal(err)
					}
					m.cur, m.exists = nil, false
					m.markSynced()
				default: // remove
					if err := s.Remove(ctx, id); err != nil {
						t.Fatal(err)
					}
					m.cur, m.exists, m.clean = nil, false, false
				}
			}
			checkCrash(t, mem, model, ops)
		})
	}
}

// maybeFail makes, one time in four, one of the next syncs fail, and
// reports whether it did.
func maybeFail(r *rand.Rand, efs *errorfs.FS) bool {
	if r.IntN(4) != 0 {
		return false
	}
	op := []errorfs.Op{errorfs.OpSync, errorfs.OpSyncDir, errorfs.OpSyncFS}[r.IntN(3)]
	efs.Add(&errorfs.Rule{Op: op, Nth: 1 + r.IntN(2), Err: eio})
	return true
}

// checkCrash checks what a power cut now would leave against the model.
func checkCrash(t *testing.T, mem *vfs.MemFS, model map[uint64]*crashModel, op int) {
	t.Helper()
	s, err := Open("crashed", StoreOptions{FS: mem.CrashClone()})
	if err != nil {
		t.Fatalf("crash before op %d: %v", op, err)
	}
	defer s.Close()
	for id, m := range model {
		got := contents(t, s, id)
		if m.clean {
			if !bytes.Equal(got, m.synced) {
				t.Fatalf("crash before op %d: datafile %#x has %d bytes, want the %d synced (equal: %v)",
					op, id, len(got), len(m.synced), bytes.Equal(got, m.synced))
			}
			continue
		}
		if len(got) > m.maxSize {
			t.Fatalf("crash before op %d: datafile %#x has %d bytes, never more than %d before", op, id, len(got), m.maxSize)
		}
		for i, b := range got {
			if m.had[i][b>>6]&(1<<(b&63)) == 0 {
				t.Fatalf("crash before op %d: datafile %#x has %#x at %d, which it never had", op, id, b, i)
			}
		}
	}
}
