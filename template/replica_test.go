package template

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/pario/pario/rank"
	"github.com/pario/pario/template/annot"
)

// corrupting is the owner's file with a faulty device: a write whose data
// starts with 'X' lands as 'Y's, so the owner's read-back fails.
type corrupting struct{ *os.File }

func (c corrupting) WriteAt(p []byte, off int64) (int, error) {
	if len(p) > 0 && p[0] == 'X' {
		return c.File.WriteAt(bytes.Repeat([]byte{'Y'}, len(p)), off)
	}
	return c.File.WriteAt(p, off)
}

// untouchable is the file at a rank that reads from its replica: any
// access to it is a read or write that was not local.
type untouchable struct{ touched *atomic.Int64 }

func (u untouchable) ReadAt(p []byte, off int64) (int, error) {
	u.touched.Add(1)
	return 0, fmt.Errorf("read of the file at %d, not the replica", off)
}

func (u untouchable) WriteAt(p []byte, off int64) (int, error) {
	u.touched.Add(1)
	return 0, fmt.Errorf("write of the file at %d by a rank", off)
}

// TestPhotocopyReplicas: reads are served by each rank's replica, never
// by the file; a write the owner could not verify reaches no replica (so no
// reader ever sees it); every verified write reaches every replica, which
// ends equal to the file's verified contents.
func TestPhotocopyReplicas(t *testing.T) {
	for _, line := range []string{"f PHOTOCOPY rc wc a main=0", "f PHOTOCOPY ro wo a main=0", "f PHOTOCOPY rc wc b main=0"} {
		t.Run(line, func(t *testing.T) {
			af, err := annot.Parse("io.ann", []byte(line))
			if err != nil {
				t.Fatal(err)
			}
			a := af.Lines[0]
			const rounds, rec = 12, 4
			good := func(r, k int) []byte { return []byte(fmt.Sprintf("%c%d%02d", 'a'+r, r, k)) }
			goodOff := func(r, k int) int64 { return int64((r*rounds + k) * rec) }
			badOff := int64(nRanks * rounds * rec) // a region only bad writes go to
			size := badOff + nRanks*rec
			dir := t.TempDir()
			path := filepath.Join(dir, "file")
			initial := bytes.Repeat([]byte{'.'}, int(size))
			if err := os.WriteFile(path, initial, 0o644); err != nil {
				t.Fatal(err)
			}
			var touched atomic.Int64
			var seen atomic.Value // the first unverified byte a reader saw
			check := func(who string, b []byte) {
				if i := bytes.IndexAny(b, "XY"); i >= 0 {
					seen.CompareAndSwap(nil, fmt.Sprintf("%s read %q at %d", who, b[i], i))
				}
			}
			replicas := make([]string, nRanks)
			err = rank.RunLocal(testCtx(t), nRanks, func(ctx context.Context, c *rank.Comm) error {
				me := c.Rank()
				g, err := NewGroup(ctx, c)
				if err != nil {
					return err
				}
				defer g.Close(ctx)
				replicas[me] = filepath.Join(dir, fmt.Sprint("replica", me))
				if err := os.WriteFile(replicas[me], initial, 0o644); err != nil {
					return err
				}
				rep, err := os.OpenFile(replicas[me], os.O_RDWR, 0)
				if err != nil {
					return err
				}
				defer rep.Close()
				var f File = untouchable{&touched}
				if me == 0 {
					mf, err := os.OpenFile(path, os.O_RDWR, 0)
					if err != nil {
						return err
					}
					defer mf.Close()
					f = corrupting{mf}
				}
				s, err := g.OpenReplica(ctx, a, f, rep)
				if err != nil {
					return err
				}
				defer s.Close()
				buf := make([]byte, size)
				write := func(p []byte, off int64) error {
					if a.Tx != annot.Block {
						return s.WriteAt(ctx, p, off)
					}
					if err := s.Begin(ctx); err != nil {
						return err
					}
					werr := s.WriteAt(ctx, p, off)
					if err := s.End(ctx); werr == nil {
						werr = err
					}
					return werr
				}
				for k := range rounds {
					if err := write(good(me, k), goodOff(me, k)); err != nil {
						return fmt.Errorf("good write %d: %w", k, err)
					}
					if a.Write == annot.Chaotic || a.Tx == annot.Block {
						if err := write([]byte("XXXX"), badOff+int64(me*rec)); err == nil {
							return fmt.Errorf("round %d: a write the owner could not verify succeeded", k)
						}
					}
					if _, err := s.ReadAt(ctx, buf, 0); err != nil {
						return err
					}
					check(fmt.Sprintf("rank %d, round %d", me, k), buf)
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if err := s.Sync(ctx); err != nil {
					return err
				}
				// ReadAt with a block read order would take the
				// permission; the replica itself is what is checked.
				if _, err := rep.ReadAt(buf, 0); err != nil {
					return err
				}
				check(fmt.Sprintf("rank %d after Sync", me), buf)
				want := bytes.Clone(initial)
				for r := range nRanks {
					for k := range rounds {
						copy(want[goodOff(r, k):], good(r, k))
					}
				}
				if !bytes.Equal(buf, want) {
					return fmt.Errorf("replica after Sync:\n%s\nwant\n%s", buf, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if v := seen.Load(); v != nil {
				t.Fatalf("a reader saw an unverified write: %s", v)
			}
			if n := touched.Load(); n > 0 {
				t.Fatalf("ranks touched the file itself %d times rather than their replicas", n)
			}
		})
	}
}
