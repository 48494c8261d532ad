package rank

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	const n = 7
	// color r%3, except rank 6 which joins no group; key -r reverses the
	// order inside each group.
	err := RunLocal(testCtx(t), n, func(ctx context.Context, c *Comm) error {
		me := c.Rank()
		color := me % 3
		if me == 6 {
			color = -1
		}
		g, err := c.Split(ctx, color, -me)
		if err != nil {
			return err
		}
		if color < 0 {
			if g != nil {
				return fmt.Errorf("color -1 gave a group of %d", g.Size())
			}
			return secondSplit(ctx, c)
		}
		defer g.Close()
		var members []int // world ranks of the group, by key
		for r := n - 1; r >= 0; r-- {
			if r%3 == color && r != 6 {
				members = append(members, r)
			}
		}
		if g.Size() != len(members) || members[g.Rank()] != me {
			return fmt.Errorf("group %d: rank %d of %d, want %d of %d (members %v)", color, g.Rank(), g.Size(), indexOf(members, me), len(members), members)
		}
		// Each group runs a different number of collectives: they are
		// the group's own, not the world's.
		for i := range color + 1 {
			if err := g.Barrier(ctx); err != nil {
				return err
			}
			root := i % g.Size()
			b, err := g.Broadcast(ctx, root, []byte(fmt.Sprintf("group %d from %d", color, members[root])))
			if err != nil {
				return err
			}
			if want := fmt.Sprintf("group %d from %d", color, members[root]); string(b) != want {
				return fmt.Errorf("Broadcast: %q, want %q", b, want)
			}
			list, err := g.Gather(ctx, root, []byte(fmt.Sprint(me)))
			if err != nil {
				return err
			}
			if g.Rank() == root {
				for k, p := range list {
					if string(p) != fmt.Sprint(members[k]) {
						return fmt.Errorf("Gather: part %d is %q, want %d", k, p, members[k])
					}
				}
			}
			sum, err := g.AllreduceUint64(ctx, uint64(me), Sum)
			if err != nil {
				return err
			}
			var want uint64
			for _, m := range members {
				want += uint64(m)
			}
			if sum != want {
				return fmt.Errorf("Allreduce: %d, want %d", sum, want)
			}
		}
		return secondSplit(ctx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// secondSplit checks the world still works after a split, and that a
// second split is separate from the first.
func secondSplit(ctx context.Context, c *Comm) error {
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	g, err := c.Split(ctx, 0, c.Rank())
	if err != nil {
		return err
	}
	defer g.Close()
	if g.Size() != c.Size() || g.Rank() != c.Rank() {
		return fmt.Errorf("split into one group: rank %d of %d", g.Rank(), g.Size())
	}
	return g.Barrier(ctx)
}

// TestSplitDeadMemberNamed: a group member that dies is named in its
// group's errors.
func TestSplitDeadMemberNamed(t *testing.T) {
	ctx := testCtx(t)
	comms := newLocal(t, 4, Config{})
	groups := make([]*Comm, 4)
	errs := inParallel(comms, func(c *Comm) error {
		g, err := c.Split(ctx, c.Rank()/2, 0)
		groups[c.Rank()] = g
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	crash(groups[1])
	err := groups[0].Barrier(ctx)
	wantRankError(t, "group rank 0", err, 1, "died")
	// The other group is untouched.
	errs = inParallel([]*Comm{groups[2], groups[3]}, func(c *Comm) error { return c.Barrier(ctx) })
	for r, err := range errs {
		if err != nil {
			t.Errorf("other group, rank %d: %v", r, err)
		}
	}
	for _, g := range groups {
		g.Close()
	}
}

func indexOf(v []int, x int) int {
	for i, y := range v {
		if y == x {
			return i
		}
	}
	return -1
}

// TestResultBeatsFailure: a collective whose result arrived before the
// communicator failed returns the result (rank 0 answers, then closes: a
// select picking at random between the two made TestClose flaky).
func TestResultBeatsFailure(t *testing.T) {
	for i := range 200 {
		c := newComm(Info{Rank: 0, Size: 2}, "h", 1, time.Second, time.Second)
		c.results <- result{data: []byte("done")}
		close(c.failed)
		r, err := c.do(context.Background(), kindBarrier, 0, 0, nil)
		if err != nil || string(r.data) != "done" {
			t.Fatalf("try %d: result %q, error %v; want the result", i, r.data, err)
		}
	}
}
