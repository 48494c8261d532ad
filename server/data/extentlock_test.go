package data

import (
	"testing"

	"pgregory.net/rapid"
)

// lockWrite is one write in a lock table test: datafile, origin, strip.
type lockWrite struct {
	id, origin uint64
	strip      int64
}

// revokes plays writes of one strip each and returns the revocations of
// each write.
func revokes(l *extentLocks, strip int64, ws []lockWrite) []int {
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = l.write(w.id, w.origin, w.strip*strip, strip)
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestExtentLocksPatterns: the thesis' access patterns on one datafile,
// each with the revocations Lustre's policy makes of it.
func TestExtentLocksPatterns(t *testing.T) {
	const strip = 256 << 10
	var alone, lockstep, ahead, disjoint, twoFiles, anonymous []lockWrite
	for k := range int64(40) {
		// The same strips, one writer four strips ahead of the other.
		if k >= 2 {
			ahead = append(ahead, lockWrite{1, 2, 2*(k-2) + 1})
		}
		ahead = append(ahead, lockWrite{1, 1, 2 * k})
		alone = append(alone, lockWrite{1, 7, k})
		// 2-OST: ranks r and r+5 on strips 2k and 2k+1 of one datafile.
		lockstep = append(lockstep, lockWrite{1, 1, 2 * k}, lockWrite{1, 2, 2*k + 1})
		// Two writers, each on a datafile of its own.
		twoFiles = append(twoFiles, lockWrite{1, 1, k}, lockWrite{2, 2, k})
		anonymous = append(anonymous, lockWrite{1, 0, 2 * k}, lockWrite{1, 0, 2*k + 1})
	}
	// Disjoint: ten ranks, each its own region of ten strips, writing their
	// k-th strips in turn.
	for k := range int64(10) {
		for r := range int64(10) {
			disjoint = append(disjoint, lockWrite{1, uint64(r + 1), 10*r + k})
		}
	}
	for _, c := range []struct {
		name  string
		ws    []lockWrite
		total int
	}{
		{"one writer", alone, 0},
		{"two writers, each on its own datafile", twoFiles, 0},
		{"writers that name no origin", anonymous, 0},
		// Every write but the first takes the lock from the other writer.
		{"two writers alternating strips", lockstep, 79},
		// The leader's grants start past the follower's last write and
		// hold; every write of the follower takes the lock back.
		{"two writers alternating strips, one ahead", ahead, 38},
		// Each rank's first write revokes the lock of the one before, and
		// the last rank's lock, grown down to the one before's last
		// write, is revoked once more; after that every rank writes
		// inside its own.
		{"ten writers in disjoint regions", disjoint, 10},
	} {
		got := revokes(&extentLocks{}, strip, c.ws)
		if n := sum(got); n != c.total {
			t.Errorf("%s: %d revocations (%v), want %d", c.name, n, got, c.total)
		}
	}
}

// TestExtentLocksDisjointSettles: in the disjoint pattern, whatever order
// the ranks' writes come in, the revocations are a few per rank and do not
// grow with the writes: at most three for each pair of neighbouring regions.
func TestExtentLocksDisjointSettles(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ranks := rapid.IntRange(2, 12).Draw(t, "ranks")
		strips := rapid.IntRange(1, 40).Draw(t, "strips per rank")
		l := &extentLocks{}
		done := make([]int, ranks)
		total := 0
		for left := ranks * strips; left > 0; left-- {
			var ready []int // ranks with strips left; any goes next
			for r, d := range done {
				if d < strips {
					ready = append(ready, r)
				}
			}
			r := ready[rapid.IntRange(0, len(ready)-1).Draw(t, "next")]
			total += l.write(1, uint64(r+1), int64(r*strips+done[r])*100, 100)
			done[r]++
		}
		if bound := 3 * (ranks - 1); total > bound {
			t.Fatalf("%d ranks of %d strips each: %d revocations, more than %d", ranks, strips, total, bound)
		}
	})
}

// TestExtentLocksInvariants: whatever the writes, granted locks of
// different origins never overlap, a writer's lock covers its last write,
// and a write revokes at most one lock per other writer, none when it
// falls inside its writer's lock.
func TestExtentLocksInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := &extentLocks{}
		for i := range rapid.IntRange(1, 200).Draw(t, "writes") {
			id := rapid.Uint64Range(1, 3).Draw(t, "datafile")
			origin := rapid.Uint64Range(1, 6).Draw(t, "origin")
			off := rapid.Int64Range(0, 1<<20).Draw(t, "offset")
			n := rapid.Int64Range(1, 1<<16).Draw(t, "length")
			var inside bool
			others := 0
			for _, h := range l.files[id] {
				if h.origin == origin {
					inside = h.lock.contains(span{off, off + n})
				} else {
					others++
				}
			}
			got := l.write(id, origin, off, n)
			if got > others || inside && got != 0 {
				t.Fatalf("write %d: %d revocations with %d other writers (inside its lock: %v)", i, got, others, inside)
			}
			hs := l.files[id]
			for a := range hs {
				if hs[a].origin == origin && !hs[a].lock.contains(span{off, off + n}) {
					t.Fatalf("write %d: origin %d's lock %v does not cover its write [%d, %d)", i, origin, hs[a].lock, off, off+n)
				}
				for b := a + 1; b < len(hs); b++ {
					if !hs[a].lock.empty() && !hs[b].lock.empty() && hs[a].lock.overlaps(hs[b].lock) {
						t.Fatalf("write %d: locks %v (origin %d) and %v (origin %d) overlap", i, hs[a].lock, hs[a].origin, hs[b].lock, hs[b].origin)
					}
				}
			}
		}
	})
}

// TestExtentLocksBounded: the table forgets rather than grows past its
// bounds.
func TestExtentLocksBounded(t *testing.T) {
	l := &extentLocks{}
	for id := range uint64(3 * maxLockedFiles) {
		l.write(id, 1, 0, 1)
		l.write(id, 2, 10, 1)
	}
	if n := len(l.files); n > maxLockedFiles {
		t.Errorf("%d datafiles remembered, bound %d", n, maxLockedFiles)
	}
	for o := range uint64(3 * maxLockHolders) {
		l.write(1, o+1, int64(o)*10, 1)
	}
	if n := len(l.files[1]); n > maxLockHolders {
		t.Errorf("%d writers of one datafile remembered, bound %d", n, maxLockHolders)
	}
}
