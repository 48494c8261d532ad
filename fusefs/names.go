package fusefs

import (
	"time"

	"github.com/pario/pario/server/meta"
)

// Negative lookups answered by the mount (docs/mount.md, "Names the mount
// knows").
//
// Before the kernel creates a name it looks it up (FUSE LOOKUP, then
// CREATE or MKDIR): a round trip to the metadata server that answers
// ENOENT, for every file mdtest or tar x makes. The mount can answer it
// itself for a directory whose every name it knows:
//
//   - a directory this mount made (mkdir) under its lease starts known,
//     and empty, when no change to it arrived from elsewhere while the
//     mkdir was under way;
//   - every change to the directory made elsewhere (a name added,
//     removed or renamed, its attributes changed) reaches the mount
//     through the lease before it is acknowledged (lease.go), and makes
//     the mount forget the directory's names (invalidate calls
//     forgetNames);
//   - this mount's own changes are not sent back, so each request that
//     adds or removes a name here records it before its answer: the
//     kernel holds the directory's lock over the request, so they are
//     recorded in the order they happened. One that fails, whose outcome
//     is then unknown, makes the mount forget the directory;
//   - what was known under one lease is not used under another, nor once
//     the lease has lapsed (changes made meanwhile were never sent here).
//
// Only an absent name is answered here: a name the set holds is looked up
// at the server as before. A kernel that forgot an entry under memory
// pressure therefore costs a round trip, never a wrong answer.
//
// Like the names the kernel keeps under the lease, the answer does not
// check the caller's search permission on the directory's ancestors
// again (without default_permissions the kernel does not check it for a
// kept name either): a chmod elsewhere of a directory above changes what
// the server would answer (EACCES) before it changes this one (ENOENT).

const (
	// maxKnownDirs bounds the directories whose names the mount keeps;
	// past it, the oldest made are forgotten.
	maxKnownDirs = 1024
	// maxKnownNames bounds the names kept of one directory, and
	// maxKnownTotal those of all together (some 20 MiB); a directory that
	// would grow past either is forgotten (its lookups go to the server).
	maxKnownNames = 1 << 16
	maxKnownTotal = 1 << 18
)

// dirNames is every name of one directory, as of now.
type dirNames struct {
	gen   uint64          // the lease they were learnt under
	names map[string]bool // true for a directory
	// subdirs counts the directories among names (the directory's link
	// count is two more); changes counts the names added and removed
	// since the mount made it (dirtimes.go).
	subdirs int
	changes uint64
	seq     uint64 // order of making, for eviction
}

// knowsAbsent reports whether name is not in directory dir, as far as
// this mount knows for certain now.
func (fsys *fileSystem) knowsAbsent(dir meta.FileID, name string) bool {
	return fsys.knownNames(dir, func(d *dirNames) bool {
		_, ok := d.names[name]
		return !ok
	})
}

// knowsEmpty reports whether directory dir has no names, as far as this
// mount knows for certain now.
func (fsys *fileSystem) knowsEmpty(dir meta.FileID) bool {
	return fsys.knownNames(dir, func(d *dirNames) bool { return len(d.names) == 0 })
}

// knownNames answers f about the names of directory dir, under the lock,
// if the mount knows them all under the lease it holds now; false if not.
func (fsys *fileSystem) knownNames(dir meta.FileID, f func(d *dirNames) bool) bool {
	if fsys.ttl() <= 0 {
		return false
	}
	l := &fsys.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.names[dir]
	return d != nil && d.gen == l.gen && f(d)
}

// madeDir records that this mount made directory id, empty, with a
// request that started at start under lease gen.
func (fsys *fileSystem) madeDir(id meta.FileID, start time.Time, gen uint64) {
	if gen == 0 {
		return
	}
	l := &fsys.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen != gen || time.Since(start) > freshWindow/2 {
		// Another lease, or too long ago for changed to still hold
		// every change since start (invalidate prunes it).
		return
	}
	if c, ok := l.changed[id]; ok && !c.Before(start) {
		return // changed elsewhere meanwhile: not known empty
	}
	if l.names == nil || l.namesGen != gen {
		// What an earlier lease knew is never answered from again
		// (knowsAbsent): let it go rather than hold the bounds.
		l.names, l.namesTotal, l.namesGen = map[meta.FileID]*dirNames{}, 0, gen
	}
	if len(l.names) >= maxKnownDirs {
		var oldest meta.FileID
		var seq uint64
		for d, n := range l.names {
			if oldest == 0 || n.seq < seq {
				oldest, seq = d, n.seq
			}
		}
		l.forgetNamesLocked(oldest)
	}
	l.namesSeq++
	l.names[id] = &dirNames{gen: gen, names: map[string]bool{}, seq: l.namesSeq}
}

// addedName records that this mount gave directory dir the name, of a
// directory if isDir.
func (fsys *fileSystem) addedName(dir meta.FileID, name string, isDir bool) {
	l := &fsys.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.names[dir]
	if d == nil {
		return
	}
	if _, ok := d.names[name]; ok {
		return
	}
	if len(d.names) >= maxKnownNames || l.namesTotal >= maxKnownTotal {
		l.forgetNamesLocked(dir)
		return
	}
	d.names[name] = isDir
	if isDir {
		d.subdirs++
	}
	d.changes++
	l.namesTotal++
}

// removedName records that this mount removed name from directory dir.
func (fsys *fileSystem) removedName(dir meta.FileID, name string) {
	l := &fsys.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.names[dir]; d != nil {
		if isDir, ok := d.names[name]; ok {
			delete(d.names, name)
			if isDir {
				d.subdirs--
			}
			d.changes++
			l.namesTotal--
		}
	}
}

// forgetNames forgets the names of directories dirs (zero IDs skipped).
func (fsys *fileSystem) forgetNames(dirs ...meta.FileID) {
	l := &fsys.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetNamesLocked(dirs...)
}

func (l *leaseState) forgetNamesLocked(dirs ...meta.FileID) {
	for _, d := range dirs {
		if n := l.names[d]; n != nil {
			l.namesTotal -= len(n.names)
			delete(l.names, d)
		}
	}
}
