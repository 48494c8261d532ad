package template

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pario/pario/template/annot"
)

// maxWrite is a File noting the largest single write made through it.
type maxWrite struct {
	*os.File
	mu  *sync.Mutex
	max *int
}

func (f maxWrite) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	*f.max = max(*f.max, len(p))
	f.mu.Unlock()
	return f.File.WriteAt(p, off)
}

// placed is segment i's output in TestPlaceLargeSegments: a header and a
// body of a few placement pieces.
func placed(i int) []byte {
	body := bytes.Repeat([]byte{byte('a' + i%26)}, 2*placeChunk+1000*i+17)
	return append(fmt.Appendf(nil, "seg %d:", i), body...)
}

// TestPlaceLargeSegments: unknown-extent segments of several placement
// pieces, from every rank at once, land whole (no other segment's piece
// inside one) and in the write order, and the parent never writes (so
// never holds) more than a piece at a time. Before, a segment went to the
// parent in one request and was written in one piece: a farm over 800 MB
// on 2 ranks peaked at 2.4 GB resident, the placements waiting for their
// turn all held in the parent's memory.
func TestPlaceLargeSegments(t *testing.T) {
	const perRank = 2
	n := nRanks * perRank
	for _, o := range orders {
		t.Run(o.w, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			fout := ann(t, "fout NEWSPAPER rc "+o.w+" b main=0")
			var mu sync.Mutex
			largest := 0
			wrap := func(r int, f *os.File) File {
				if r == 0 {
					return maxWrite{f, &mu, &largest}
				}
				return f
			}
			runRanksWrapped(t, nRanks, out, wrap, func(ctx context.Context, g *Group, f File) error {
				so, err := g.Open(ctx, fout, f, Bounds{})
				if err != nil {
					return err
				}
				defer so.Close()
				// Every placement of this rank at once, each on a
				// connection of its own, as pario farm does.
				r := g.Comm().Rank()
				errs := make(chan error, perRank)
				for k := range perRank {
					i := k*nRanks + (nRanks - 1 - r) // high ranks' segments first
					go func() {
						d, err := so.Dup(ctx)
						if err != nil {
							errs <- err
							return
						}
						defer d.Close()
						sc, err := d.Scratch(i)
						if err == nil {
							_, err = sc.Write(placed(i))
						}
						if err == nil {
							_, err = sc.Close(ctx)
						}
						errs <- err
					}()
				}
				for range perRank {
					if err := <-errs; err != nil {
						return err
					}
				}
				return nil
			})
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var idx []int
			for len(data) > 0 {
				var i int
				if _, err := fmt.Sscanf(string(data[:min(len(data), 20)]), "seg %d:", &i); err != nil || i < 0 || i >= n {
					t.Fatalf("after segments %v: %.40q is not a segment's start", idx, data)
				}
				want := placed(i)
				if !bytes.HasPrefix(data, want) {
					t.Fatalf("after segments %v: segment %d is not whole", idx, i)
				}
				data = data[len(want):]
				idx = append(idx, i)
			}
			if len(idx) != n {
				t.Fatalf("segments %v, want %d", idx, n)
			}
			for k, i := range idx {
				if o.o == annot.Ordered && i != k || o.o == annot.Relaxed && i/nRanks != k/nRanks {
					t.Fatalf("%s: segments in the order %v", o.o, idx)
				}
			}
			if largest > placeChunk {
				t.Fatalf("the parent wrote %d bytes at once, more than a piece (%d)", largest, placeChunk)
			}
		})
	}
}

// stallSecond is the parent's File for TestPlacerGoneFailsStream: its
// second write says so on mid and waits for release.
type stallSecond struct {
	*os.File
	n            *int
	mid, release chan struct{}
}

func (f stallSecond) WriteAt(p []byte, off int64) (int, error) {
	*f.n++ // the parent writes one piece at a time
	if *f.n == 2 {
		close(f.mid)
		<-f.release
	}
	return f.File.WriteAt(p, off)
}

// TestPlacerGoneFailsStream: a rank that goes away (its context ends)
// while its segment is half placed fails the stream, and the placement
// waiting for the turn after it gets why, instead of waiting for ever.
func TestPlacerGoneFailsStream(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	fout := ann(t, "fout NEWSPAPER rc wo b main=0")
	writes := 0
	mid, release := make(chan struct{}), make(chan struct{})
	wrap := func(r int, f *os.File) File {
		if r == 0 {
			return stallSecond{f, &writes, mid, release}
		}
		return f
	}
	var mu sync.Mutex
	errs := map[int]error{}
	runRanksWrapped(t, 3, out, wrap, func(ctx context.Context, g *Group, f File) error {
		so, err := g.Open(ctx, fout, f, Bounds{})
		if err != nil {
			return err
		}
		defer so.Close()
		r := g.Comm().Rank()
		if r == 0 {
			return nil
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if r == 1 {
			go func() {
				<-mid
				cancel() // rank 1 goes away in the middle of segment 0
				close(release)
			}()
		}
		sc, err := so.Scratch(r - 1)
		if err != nil {
			return err
		}
		if _, err := sc.Write(placed(r - 1)); err != nil {
			return err
		}
		_, err = sc.Close(sctx)
		mu.Lock()
		errs[r] = err
		mu.Unlock()
		return nil
	})
	if errs[1] == nil {
		t.Errorf("rank 1's cancelled placement succeeded")
	}
	if err := errs[2]; err == nil || !strings.Contains(err.Error(), "went away placing a segment") {
		t.Errorf("rank 2's placement after it: %v, want the stream failed by the rank gone", err)
	}
}
