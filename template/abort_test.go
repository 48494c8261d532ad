package template

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAbortReleasesWaiters: segment 0's worker fails and aborts; rank 1,
// whose ordered placement of segment 1 waits for segment 0's turn through a
// Dup, gets the abort's reason instead of waiting forever, and a later
// Next fails too.
func TestAbortReleasesWaiters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	a := ann(t, "out NEWSPAPER rc wo b farm=0")
	runRanks(t, 2, path, nil, func(ctx context.Context, g *Group, f File) error {
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		defer s.Close()
		if err := g.Comm().Barrier(ctx); err != nil {
			return err
		}
		if g.Comm().Rank() == 0 {
			// Let rank 1's placement reach the parent and wait first.
			for {
				if _, _, ok := s.Handed(); !ok {
					return errors.New("Handed at the parent's rank: not ok")
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if waiting(g) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			return s.Abort(ctx, "segment 0 failed: tool exited 1")
		}
		d, err := s.Dup(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		sc, err := d.Scratch(1)
		if err != nil {
			return err
		}
		if _, err := sc.Write([]byte("result 1\n")); err != nil {
			return err
		}
		_, err = sc.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), "segment 0 failed: tool exited 1") {
			return errors.New("placement after an abort: want the abort's reason, got " + errString(err))
		}
		if _, _, ok := s.Handed(); ok {
			return errors.New("Handed away from the parent's rank: ok")
		}
		return nil
	})
}

// waiting reports whether a placement waits at the parent: one connection
// per rank per stream is open, plus rank 1's Dup.
func waiting(g *Group) bool {
	g.co.mu.Lock()
	defer g.co.mu.Unlock()
	return len(g.co.conns) == 3
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
