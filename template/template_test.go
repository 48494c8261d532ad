package template

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/rank"
	"github.com/pario/pario/template/annot"
)

const nRanks = 4

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ann(t *testing.T, line string) annot.Annotation {
	t.Helper()
	f, err := annot.Parse("test", []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return f.Lines[0]
}

// recorder notes, in the order they happen, which rank read or wrote
// through its files: the order the templates promise, seen from the file.
type recorder struct {
	mu     sync.Mutex
	writes []int
	reads  []int
}

type recFile struct {
	*os.File
	rec *recorder
	who int
}

func (f recFile) WriteAt(p []byte, off int64) (int, error) {
	f.rec.mu.Lock()
	f.rec.writes = append(f.rec.writes, f.who)
	f.rec.mu.Unlock()
	return f.File.WriteAt(p, off)
}

func (f recFile) ReadAt(p []byte, off int64) (int, error) {
	f.rec.mu.Lock()
	f.rec.reads = append(f.rec.reads, f.who)
	f.rec.mu.Unlock()
	return f.File.ReadAt(p, off)
}

// runRanks runs body on n goroutine ranks (rank.RunLocal: real rendezvous
// and TCP), each with a Group and its own handle on the file at path.
func runRanks(t *testing.T, n int, path string, rec *recorder, body func(ctx context.Context, g *Group, f File) error) {
	t.Helper()
	var wrap func(int, *os.File) File
	if rec != nil {
		wrap = func(r int, f *os.File) File { return recFile{f, rec, r} }
	}
	runRanksWrapped(t, n, path, wrap, body)
}

// runRanksWrapped is runRanks with each rank's file made by wrap (nil: the
// file itself).
func runRanksWrapped(t *testing.T, n int, path string, wrap func(rank int, f *os.File) File, body func(ctx context.Context, g *Group, f File) error) {
	t.Helper()
	err := rank.RunLocal(testCtx(t), n, func(ctx context.Context, c *rank.Comm) error {
		g, err := NewGroup(ctx, c)
		if err != nil {
			return err
		}
		osf, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		defer osf.Close()
		var f File = osf
		if wrap != nil {
			f = wrap(c.Rank(), osf)
		}
		if err := body(ctx, g, f); err != nil {
			return err
		}
		return g.Close(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// jitter makes higher ranks faster, so that an order the template does
// not enforce would not come out right by chance.
func jitter(r, k int) { time.Sleep(time.Duration((nRanks-r)*(k%3+1)) * 300 * time.Microsecond) }

// record is "<rank>.<k>:" then a body of a size varying with both, then
// "\n": whole records parse back; torn ones do not.
func record(r, k int) []byte {
	body := bytes.Repeat([]byte{byte('a' + r)}, 1+(r*7+k*13)%50)
	return []byte(fmt.Sprintf("%d.%d:%s\n", r, k, body))
}

type rec struct{ r, k int }

func parseRecords(t *testing.T, data []byte) []rec {
	t.Helper()
	var out []rec
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		var r, k int
		if _, err := fmt.Sscanf(line, "%d.%d:", &r, &k); err != nil || line != string(record(r, k)) {
			t.Fatalf("torn or interleaved record %q in %q", line, data)
		}
		out = append(out, rec{r, k})
	}
	return out
}

// checkOrder checks the records' order against the write order: ordered,
// rank after rank in every round; relaxed, rounds never going back;
// chaotic, each record once.
func checkOrder(t *testing.T, o annot.Order, recs []rec, n, rounds int) {
	t.Helper()
	if len(recs) != n*rounds {
		t.Fatalf("%d records, want %d: %v", len(recs), n*rounds, recs)
	}
	seen := map[rec]bool{}
	for i, x := range recs {
		if seen[x] {
			t.Fatalf("record %v twice", x)
		}
		seen[x] = true
		switch o {
		case annot.Ordered:
			if want := (rec{i % n, i / n}); x != want {
				t.Fatalf("ordered: record %d is %v, want %v (all: %v)", i, x, want, recs)
			}
		case annot.Relaxed:
			if x.k != i/n {
				t.Fatalf("relaxed: record %d is of round %d, want %d (all: %v)", i, x.k, i/n, recs)
			}
		}
	}
}

func checkRankOrder(t *testing.T, o annot.Order, who []int, n, rounds int) {
	t.Helper()
	recs := make([]rec, len(who))
	count := map[int]int{}
	for i, r := range who {
		recs[i] = rec{r, count[r]}
		count[r]++
	}
	checkOrder(t, o, recs, n, rounds)
}

var orders = []struct {
	o    annot.Order
	r, w string
}{{annot.Ordered, "ro", "wo"}, {annot.Relaxed, "rr", "wr"}, {annot.Chaotic, "rc", "wc"}}

// TestLogAtomicOrders: concurrent appends never interleave inside a
// record, and land in the write order's order.
func TestLogAtomicOrders(t *testing.T) {
	const rounds = 12
	for _, o := range orders {
		t.Run(o.w, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			a := ann(t, "out LOG rc "+o.w+" a main=0")
			runRanks(t, nRanks, path, nil, func(ctx context.Context, g *Group, f File) error {
				s, err := g.Open(ctx, a, f, Bounds{})
				if err != nil {
					return err
				}
				defer s.Close()
				me := g.Comm().Rank()
				for k := range rounds {
					jitter(me, k)
					if _, err := s.Append(ctx, record(me, k)); err != nil {
						return err
					}
				}
				return nil
			})
			data, _ := os.ReadFile(path)
			checkOrder(t, o.o, parseRecords(t, data), nRanks, rounds)
		})
	}
}

// TestLogBlockAllOrNothing: a block of appends is seen whole or not at
// all by a reader polling the end of file while the writers work, and
// blocks never interleave.
func TestLogBlockAllOrNothing(t *testing.T) {
	const blocks, per = 10, 3
	path := filepath.Join(t.TempDir(), "log")
	a := ann(t, "out LOG rc wc b main=0")
	var polls atomic.Int64
	runRanks(t, nRanks, path, nil, func(ctx context.Context, g *Group, f File) error {
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		defer s.Close()
		me := g.Comm().Rank()
		if me == 0 { // the reader
			var last int64
			for last < int64((nRanks-1)*blocks*per*60) {
				end, err := s.EOF(ctx)
				if err != nil {
					return err
				}
				buf := make([]byte, end)
				if n, err := s.ReadAt(ctx, buf, 0); n != len(buf) {
					return fmt.Errorf("read %d of %d bytes below the end of file: %v", n, end, err)
				}
				if err := wholeBlocks(buf, per); err != nil {
					return fmt.Errorf("reader at end of file %d: %v", end, err)
				}
				polls.Add(1)
				if end == last {
					time.Sleep(200 * time.Microsecond)
				}
				last = end
				if allBlocks(buf, per) == (nRanks-1)*blocks {
					break
				}
			}
			return nil
		}
		for b := range blocks {
			if err := s.Begin(ctx); err != nil {
				return err
			}
			for i := range per {
				if _, err := s.Append(ctx, record(me, b*per+i)); err != nil {
					return err
				}
				time.Sleep(100 * time.Microsecond) // give a torn view its chance
			}
			if err := s.End(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	data, _ := os.ReadFile(path)
	if err := wholeBlocks(data, per); err != nil {
		t.Fatal(err)
	}
	if got := allBlocks(data, per); got != (nRanks-1)*blocks {
		t.Fatalf("%d blocks, want %d", got, (nRanks-1)*blocks)
	}
	t.Logf("%d polls", polls.Load())
}

// wholeBlocks checks data is whole blocks of per records each, from one
// rank, consecutive.
func wholeBlocks(data []byte, per int) error {
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] != "" {
		return fmt.Errorf("a torn record at the end: %q", lines[len(lines)-1])
	}
	lines = lines[:len(lines)-1]
	if len(lines)%per != 0 {
		return fmt.Errorf("%d records: a block seen in part", len(lines))
	}
	for i := 0; i < len(lines); i += per {
		var r0, k0 int
		fmt.Sscanf(lines[i], "%d.%d:", &r0, &k0)
		for j := range per {
			if lines[i+j] != string(record(r0, k0+j)) || k0%per != 0 {
				return fmt.Errorf("block at record %d: %q is not record %d.%d", i, lines[i+j], r0, k0+j)
			}
		}
	}
	return nil
}

func allBlocks(data []byte, per int) int { return strings.Count(string(data), "\n") / per }

// TestMeeting: never two ranks in control; the floor passes in the order
// the attribute says (for writes and for reads); a Do's writes are
// contiguous at the global pointer.
func TestMeeting(t *testing.T) {
	const rounds = 8
	for _, o := range orders {
		for _, tx := range []string{"a", "b"} {
			t.Run(o.w+"_"+tx, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "meeting")
				a := ann(t, "m MEETING "+o.r+" "+o.w+" "+tx+" main=0")
				rc := &recorder{}
				var inside, most atomic.Int64
				runRanks(t, nRanks, path, rc, func(ctx context.Context, g *Group, f File) error {
					s, err := g.Open(ctx, a, f, Bounds{})
					if err != nil {
						return err
					}
					defer s.Close()
					me := g.Comm().Rank()
					for k := range rounds {
						jitter(me, k)
						err := s.Do(ctx, func(c *Control) error {
							if v := inside.Add(1); v > most.Load() {
								most.Store(v)
							}
							defer inside.Add(-1)
							r := record(me, k)
							h := len(r) / 2
							if _, err := c.Write(r[:h]); err != nil {
								return err
							}
							time.Sleep(100 * time.Microsecond)
							_, err := c.Write(r[h:])
							return err
						})
						if err != nil {
							return err
						}
					}
					if err := g.Comm().Barrier(ctx); err != nil {
						return err
					}
					if me == 0 { // rewind, for the reads
						if err := s.Do(ctx, func(c *Control) error { c.SetPos(0); return nil }); err != nil {
							return err
						}
					}
					if err := g.Comm().Barrier(ctx); err != nil {
						return err
					}
					for k := range rounds {
						jitter(me, k)
						if err := s.DoRead(ctx, func(c *Control) error {
							_, err := c.Read(make([]byte, 1))
							return err
						}); err != nil {
							return err
						}
					}
					return nil
				})
				if most.Load() != 1 {
					t.Fatalf("%d ranks in control at once", most.Load())
				}
				data, _ := os.ReadFile(path)
				checkOrder(t, o.o, parseRecords(t, data), nRanks, rounds)
				checkRankOrder(t, o.o, rc.reads, nRanks, rounds)
			})
		}
	}
}

// TestPhotocopyOrders: writes go through the owner (rank 0's file sees
// them all) in the write order; reads happen in the read order.
func TestPhotocopyOrders(t *testing.T) {
	const rounds = 6
	for _, o := range orders {
		t.Run(o.w, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "photo")
			a := ann(t, "p PHOTOCOPY "+o.r+" "+o.w+" a main=0")
			rc := &recorder{}
			runRanks(t, nRanks, path, rc, func(ctx context.Context, g *Group, f File) error {
				s, err := g.Open(ctx, a, f, Bounds{})
				if err != nil {
					return err
				}
				defer s.Close()
				me := g.Comm().Rank()
				for k := range rounds {
					jitter(me, k)
					if err := s.WriteAt(ctx, []byte{byte('0' + me)}, int64(k*nRanks+me)); err != nil {
						return err
					}
				}
				if err := g.Comm().Barrier(ctx); err != nil {
					return err
				}
				for k := range rounds {
					jitter(me, k)
					b := make([]byte, 1)
					if _, err := s.ReadAt(ctx, b, int64(k*nRanks+me)); err != nil {
						return err
					}
					if b[0] != byte('0'+me) {
						return fmt.Errorf("read back %q at %d, want %q", b, k*nRanks+me, string(rune('0'+me)))
					}
				}
				return nil
			})
			// The owner wrote everything, and read each write back.
			for _, w := range rc.writes {
				if w != 0 {
					t.Fatalf("rank %d wrote the file itself; writes go through the owner", w)
				}
			}
			if len(rc.writes) != nRanks*rounds {
				t.Fatalf("owner wrote %d times, want %d", len(rc.writes), nRanks*rounds)
			}
			data, _ := os.ReadFile(path)
			if want := strings.Repeat("0123", rounds); string(data) != want {
				t.Fatalf("file %q, want %q", data, want)
			}
			// The owner's read-backs are interleaved with the reads; keep
			// the ranks' own.
			checkRankOrder(t, o.o, ownReads(rc.reads, nRanks*rounds), nRanks, rounds)
		})
	}
}

// ownReads drops the owner's verification reads: the first n entries of
// rank 0 are those (the write phase ends, behind a barrier, before any
// rank reads).
func ownReads(reads []int, n int) []int {
	var out []int
	skip := n
	for _, r := range reads {
		if r == 0 && skip > 0 {
			skip--
			continue
		}
		out = append(out, r)
	}
	return out
}

// TestPhotocopyBlock: a block of writes to three places is seen by a
// block reader all or nothing.
func TestPhotocopyBlock(t *testing.T) {
	const blocks = 15
	path := filepath.Join(t.TempDir(), "photo")
	a := ann(t, "p PHOTOCOPY rc wc b main=0")
	runRanks(t, nRanks, path, nil, func(ctx context.Context, g *Group, f File) error {
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		defer s.Close()
		me := g.Comm().Rank()
		if me == 0 {
			return nil
		}
		if me == 1 { // reader
			for range 200 {
				// ReadAt takes the permission per call; three reads are
				// one transaction only inside Begin/End.
				var got [3]byte
				if err := s.Begin(ctx); err != nil {
					return err
				}
				for i := range got {
					if _, err := s.ReadAt(ctx, got[i:i+1], int64(i*100)); err != nil && !errors.Is(err, io.EOF) {
						return err
					}
				}
				if err := s.End(ctx); err != nil {
					return err
				}
				if got[0] != got[1] || got[1] != got[2] {
					return fmt.Errorf("a block seen in part: %q", got[:])
				}
			}
			return nil
		}
		for b := range blocks {
			if err := s.Begin(ctx); err != nil {
				return err
			}
			v := []byte{byte('A' + me*blocks + b)}
			for i := range 3 {
				if err := s.WriteAt(ctx, v, int64(i*100)); err != nil {
					return err
				}
			}
			if err := s.End(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

func fastaInput(t *testing.T, n int) (string, []string) {
	var recs []string
	var b strings.Builder
	for i := range n {
		r := fmt.Sprintf(">q%d\n%s\n", i, strings.Repeat("ACGT"[i%4:i%4+1], 1+i*37%200))
		recs = append(recs, r)
		b.WriteString(r)
	}
	path := filepath.Join(t.TempDir(), "in.fa")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, recs
}

// TestNewspaper: FASTA records handed out by the parent's segmentation
// function, each exactly once; results in an unknown-extent output
// newspaper placed whole by the parent, in index order (wo), by rounds
// (wr) or as they come (wc).
func TestNewspaper(t *testing.T) {
	const nrec = 23
	in, recs := fastaInput(t, nrec)
	for _, o := range orders {
		t.Run(o.w, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			fin := ann(t, "fin NEWSPAPER ro wo b main=FASTA")
			fout := ann(t, "fout NEWSPAPER rc "+o.w+" b main=0")
			runRanks(t, nRanks, out, nil, func(ctx context.Context, g *Group, f File) error {
				inf, err := os.Open(in)
				if err != nil {
					return err
				}
				defer inf.Close()
				si, err := g.Open(ctx, fin, inf, Bounds{})
				if err != nil {
					return err
				}
				defer si.Close()
				so, err := g.Open(ctx, fout, f, Bounds{})
				if err != nil {
					return err
				}
				defer so.Close()
				for {
					sg, err := si.Next(ctx)
					if errors.Is(err, io.EOF) {
						return nil
					}
					if err != nil {
						return err
					}
					data := make([]byte, sg.Extent)
					if _, err := sg.ReadAt(data, 0); err != nil {
						return err
					}
					jitter(g.Comm().Rank(), sg.Index)
					sc, err := so.Scratch(sg.Index)
					if err != nil {
						return err
					}
					// The result's size is known only once written.
					fmt.Fprintf(sc, "result %d (%d bytes) by rank %d\n%s", sg.Index, sg.Extent, g.Comm().Rank(), strings.ToLower(string(data)))
					if _, err := sc.Close(ctx); err != nil {
						return err
					}
				}
			})
			data, _ := os.ReadFile(out)
			parts := strings.SplitAfter(string(data), "result ")
			var idx []int
			for _, p := range parts[1:] {
				var i, n, r int
				if _, err := fmt.Sscanf(p, "%d (%d bytes) by rank %d\n", &i, &n, &r); err != nil {
					t.Fatalf("torn result %q", p)
				}
				body := p[strings.IndexByte(p, '\n')+1:]
				body = strings.TrimSuffix(body, "result ")
				if body != strings.ToLower(recs[i]) {
					t.Fatalf("result %d: %q, want %q", i, body, strings.ToLower(recs[i]))
				}
				idx = append(idx, i)
			}
			seen := map[int]bool{}
			for k, i := range idx {
				if seen[i] {
					t.Fatalf("segment %d twice", i)
				}
				seen[i] = true
				switch o.o {
				case annot.Ordered:
					if i != k {
						t.Fatalf("ordered: result %d at place %d: %v", i, k, idx)
					}
				case annot.Relaxed:
					if i/nRanks != k/nRanks {
						t.Fatalf("relaxed: result %d (round %d) at place %d: %v", i, i/nRanks, k, idx)
					}
				}
			}
			if len(seen) != nrec {
				t.Fatalf("%d results, want %d", len(seen), nrec)
			}
		})
	}
}

// TestNewspaperConstant: constant extents in and out; every segment once,
// each output segment in its place.
func TestNewspaperConstant(t *testing.T) {
	const ext, nseg = 10, 17
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	var want bytes.Buffer
	for i := range nseg {
		fmt.Fprintf(&want, "seg%06d\n", i)
	}
	os.WriteFile(in, want.Bytes(), 0o644)
	out := filepath.Join(dir, "out")
	fin := ann(t, "fin NEWSPAPER ro wo a main=10")
	fout := ann(t, "fout NEWSPAPER rc wc a main=10")
	runRanks(t, nRanks, out, nil, func(ctx context.Context, g *Group, f File) error {
		inf, err := os.Open(in)
		if err != nil {
			return err
		}
		defer inf.Close()
		si, err := g.Open(ctx, fin, inf, Bounds{Max: ext * nseg})
		if err != nil {
			return err
		}
		so, err := g.Open(ctx, fout, f, Bounds{})
		if err != nil {
			return err
		}
		for {
			sg, err := si.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			b := make([]byte, ext)
			if _, err := sg.ReadAt(b, 0); err != nil {
				return err
			}
			o, err := so.Out(sg.Index)
			if err != nil {
				return err
			}
			if _, err := o.WriteAt(bytes.ToUpper(b), 0); err != nil {
				return err
			}
			if _, err := o.WriteAt([]byte("x"), ext); err == nil {
				return errors.New("a write past the segment's extent was let through")
			}
		}
		si.Close()
		so.Close()
		return nil
	})
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, bytes.ToUpper(want.Bytes())) {
		t.Fatalf("output %q, want %q", got, bytes.ToUpper(want.Bytes()))
	}
}

// TestReport: a rank reaches segments it was not given by asking the
// parent; the parent grants the same bounds it handed out.
func TestReport(t *testing.T) {
	in, recs := fastaInput(t, 11)
	for _, o := range orders {
		t.Run(o.r, func(t *testing.T) {
			a := ann(t, "fin REPORT "+o.r+" "+o.w+" a main=FASTA")
			runRanks(t, nRanks, in, nil, func(ctx context.Context, g *Group, f File) error {
				s, err := g.Open(ctx, a, f, Bounds{})
				if err != nil {
					return err
				}
				defer s.Close()
				me := g.Comm().Rank()
				if me == 0 {
					// Rank 0 takes nothing; it reads every segment by
					// asking, from the last backwards.
					if err := g.Comm().Barrier(ctx); err != nil {
						return err
					}
					for i := len(recs) - 1; i >= 0; i-- {
						sg, err := s.Segment(ctx, i)
						if err != nil {
							return err
						}
						b := make([]byte, sg.Extent)
						if _, err := sg.ReadAt(b, 0); err != nil || string(b) != recs[i] {
							return fmt.Errorf("segment %d: %q (%v), want %q", i, b, err, recs[i])
						}
					}
					if _, err := s.Segment(ctx, len(recs)); !errors.Is(err, io.EOF) {
						return fmt.Errorf("segment past the last: %v, want io.EOF", err)
					}
					return nil
				}
				for {
					sg, err := s.Next(ctx)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						return err
					}
					b := make([]byte, sg.Extent)
					sg.ReadAt(b, 0)
					if string(b) != recs[sg.Index] {
						return fmt.Errorf("segment %d: %q", sg.Index, b)
					}
				}
				return g.Comm().Barrier(ctx)
			})
		})
	}
}

// TestWrongCall: a call the stream's template does not have names the
// stream, its template and its annotation line.
func TestWrongCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a := ann(t, "\n\nfin NEWSPAPER ro wo b main=FASTA")
	runRanks(t, 1, path, nil, func(ctx context.Context, g *Group, f File) error {
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		defer s.Close()
		_, err = s.Append(ctx, []byte("x"))
		if err == nil || !strings.Contains(err.Error(), "fin is a NEWSPAPER (annotation line 3)") {
			return fmt.Errorf("Append on a newspaper: %v", err)
		}
		return nil
	})
	bad := ann(t, "fin NEWSPAPER ro wo b main=NoSuchFunction")
	err := rank.RunLocal(testCtx(t), 2, func(ctx context.Context, c *rank.Comm) error {
		g, err := NewGroup(ctx, c)
		if err != nil {
			return err
		}
		defer g.Close(ctx)
		_, err = g.Open(ctx, bad, nil, Bounds{})
		if err == nil || !strings.Contains(err.Error(), `"NoSuchFunction"`) {
			return fmt.Errorf("open with an unknown function: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHolderGoneReleases: a rank whose connection goes away in the middle
// of a block (its Stream closed, as when it dies) gives the permission
// back; its block is never published, and the others go on.
func TestHolderGoneReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	a := ann(t, "out LOG rc wc b main=0")
	runRanks(t, 3, path, nil, func(ctx context.Context, g *Group, f File) error {
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		me := g.Comm().Rank()
		if me == 1 {
			if err := s.Begin(ctx); err != nil {
				return err
			}
			if _, err := s.Append(ctx, []byte("never published\n")); err != nil {
				return err
			}
			s.Close()
			return g.Comm().Barrier(ctx)
		}
		defer s.Close()
		if err := g.Comm().Barrier(ctx); err != nil {
			return err
		}
		if err := s.Begin(ctx); err != nil {
			return err
		}
		if _, err := s.Append(ctx, record(me, 0)); err != nil {
			return err
		}
		return s.End(ctx)
	})
	data, _ := os.ReadFile(path)
	recs := parseRecords(t, data[:bytes.LastIndexByte(data, '\n')+1])
	if len(recs) != 2 {
		t.Fatalf("file %q: want the two published records", data)
	}
}
