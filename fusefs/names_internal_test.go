package fusefs

import (
	"strconv"
	"testing"
	"time"

	"github.com/pario/pario/server/meta"
)

// knowsAbsent answers only while every condition holds; each case breaks
// one (the cases a second mount can cause are tested through two mounts
// in names_test.go).
func TestKnowsAbsentConditions(t *testing.T) {
	const dir = meta.FileID(9)
	cases := []struct {
		name  string
		setup func(fsys *fileSystem, start *time.Time)
		ask   string
		want  bool
	}{
		{name: "made here, name absent", ask: "x", want: true},
		{name: "a name made here", ask: "made"},
		{name: "a name made and removed here", ask: "gone", want: true},
		{name: "another lease", ask: "x", setup: func(fsys *fileSystem, _ *time.Time) { fsys.lease.gen++ }},
		{name: "no lease", ask: "x", setup: func(fsys *fileSystem, _ *time.Time) { fsys.lease.until = time.Time{} }},
		{name: "changed elsewhere during the mkdir", ask: "x", setup: func(fsys *fileSystem, start *time.Time) {
			fsys.lease.changed[dir] = start.Add(time.Microsecond)
		}},
		{name: "changed elsewhere before the mkdir", ask: "x", want: true, setup: func(fsys *fileSystem, start *time.Time) {
			fsys.lease.changed[dir] = start.Add(-time.Millisecond)
		}},
		{name: "mkdir too slow to know", ask: "x", setup: func(fsys *fileSystem, start *time.Time) {
			*start = start.Add(-freshWindow)
		}},
		{name: "made under another lease", ask: "x", setup: func(fsys *fileSystem, _ *time.Time) { fsys.lease.gen = 2 }},
		{name: "forgotten", ask: "x"},
		{name: "another directory forgotten", ask: "x", want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := leasedFS(3)
			start := time.Now()
			gen := fsys.leaseGen()
			if tc.setup != nil {
				tc.setup(fsys, &start)
			}
			fsys.madeDir(dir, start, gen)
			fsys.addedName(dir, "made", false)
			fsys.addedName(dir, "gone", true)
			fsys.removedName(dir, "gone")
			switch tc.name {
			case "forgotten":
				fsys.forgetNames(dir)
			case "another directory forgotten":
				fsys.forgetNames(dir + 1)
			}
			if got := fsys.knowsAbsent(dir, tc.ask); got != tc.want {
				t.Errorf("knowsAbsent(%q) = %v, want %v", tc.ask, got, tc.want)
			}
		})
	}
}

// The directories and names kept are bounded.
func TestKnownNamesBounded(t *testing.T) {
	fsys := leasedFS(1)
	for id := meta.FileID(1); id <= maxKnownDirs+10; id++ {
		fsys.madeDir(id, time.Now(), 1)
	}
	if n := len(fsys.lease.names); n != maxKnownDirs {
		t.Errorf("%d directories kept, want %d", n, maxKnownDirs)
	}
	if fsys.knowsAbsent(1, "x") || !fsys.knowsAbsent(maxKnownDirs+10, "x") {
		t.Errorf("the oldest directory made should go first")
	}
	for i := range maxKnownNames + 1 {
		fsys.addedName(maxKnownDirs+10, strconv.Itoa(i), false)
	}
	if fsys.knowsAbsent(maxKnownDirs+10, "x") {
		t.Errorf("a directory past %d names is still answered for", maxKnownNames)
	}
	// All directories together: filled one after the other, the total
	// never passes maxKnownTotal, and matches the names held.
	for id := meta.FileID(1); id <= maxKnownDirs; id++ {
		fsys.madeDir(id, time.Now(), 1)
		for i := range 1000 {
			fsys.addedName(id, strconv.Itoa(i), i%2 == 0)
		}
		if fsys.lease.namesTotal > maxKnownTotal {
			t.Fatalf("%d names kept, bound %d", fsys.lease.namesTotal, maxKnownTotal)
		}
	}
	held := 0
	for _, d := range fsys.lease.names {
		held += len(d.names)
	}
	if held != fsys.lease.namesTotal {
		t.Errorf("namesTotal %d, names held %d", fsys.lease.namesTotal, held)
	}
}

// What was known under one lease is of no use under the next (knowsAbsent
// checks the lease): it must not keep holding the bounds, or after a
// metadata server restart or a lapsed lease the directories made under the
// new one are forgotten at their first name, for as long as the mount lives.
func TestKnownNamesOfAnOldLeaseLetGo(t *testing.T) {
	fsys := leasedFS(1)
	// An mdtest under lease 1 fills the bound in a few directories.
	for id := meta.FileID(1); id <= maxKnownTotal/maxKnownNames; id++ {
		fsys.madeDir(id, time.Now(), 1)
		for i := range maxKnownNames {
			fsys.addedName(id, strconv.Itoa(i), i%2 == 0)
		}
	}
	fsys.lease.gen++ // a new lease (watch)
	const dir = meta.FileID(1000)
	fsys.madeDir(dir, time.Now(), fsys.leaseGen())
	fsys.addedName(dir, "made", false)
	if !fsys.knowsAbsent(dir, "x") {
		t.Errorf("a directory made under the new lease is not known after its first name: the old lease's %d names still count (%d directories kept)",
			fsys.lease.namesTotal, len(fsys.lease.names))
	}
}

// knownShape counts a directory's subdirectories (its link count is two
// more) and every name added or removed, while the mount knows them all.
func TestKnownShape(t *testing.T) {
	const dir = meta.FileID(9)
	fsys := leasedFS(1)
	if _, _, ok := fsys.knownShape(dir); ok {
		t.Fatal("the shape of a directory the mount did not make is known")
	}
	fsys.madeDir(dir, time.Now(), 1)
	steps := []struct {
		do      func()
		nlink   uint32
		changes uint64
	}{
		{func() {}, 2, 0},
		{func() { fsys.addedName(dir, "sub", true) }, 3, 1},
		{func() { fsys.addedName(dir, "file", false) }, 3, 2},
		{func() { fsys.addedName(dir, "sub", true) }, 3, 2}, // already there: nothing
		{func() { fsys.addedName(dir, "sub2", true) }, 4, 3},
		{func() { fsys.removedName(dir, "sub") }, 3, 4},
		{func() { fsys.removedName(dir, "file") }, 3, 5},
		{func() { fsys.removedName(dir, "absent") }, 3, 5},
	}
	for i, s := range steps {
		s.do()
		nlink, changes, ok := fsys.knownShape(dir)
		if !ok || nlink != s.nlink || changes != s.changes {
			t.Fatalf("step %d: knownShape = %d links, %d changes, %v; want %d, %d, true", i, nlink, changes, ok, s.nlink, s.changes)
		}
	}
	fsys.forgetNames(dir)
	if _, _, ok := fsys.knownShape(dir); ok {
		t.Fatal("the shape is known after the names were forgotten")
	}
}

// leasedFS is a file system that holds lease gen for the next minute,
// with nothing changed under it.
func leasedFS(gen uint64) *fileSystem {
	fsys := &fileSystem{}
	fsys.lease.until = time.Now().Add(time.Minute)
	fsys.lease.gen = gen
	fsys.lease.changed = map[meta.FileID]time.Time{}
	return fsys
}
