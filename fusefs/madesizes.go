package fusefs

import (
	"sync"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// Sizes of the files this mount made, after their last close.
//
// ls -l and rm -rf of a tree tar x has just made through the mount list
// each directory with READDIRPLUS, whose attributes need every file's
// size: a usageBatch request to each I/O server per page, and a size
// request per datafile for each name the kernel looks up. A file this
// mount made in a directory it holds, closed with its size known
// (wroteHere: written from its start without a gap), keeps that size for
// as long as the mount holds the directory under the same lease: no other
// client can open it without first recalling the directory, and this
// mount's own truncates, renames and links drop it, and each last close
// keeps it afresh or drops it. Listings and lookups in that directory take
// it from here, and an open of the file starts from it.

// maxMadeSizes bounds the sizes kept (some 4 MiB); past it, those kept
// more than madeSizeAge ago go, then all (makeRoom).
const (
	maxMadeSizes = 1 << 16
	madeSizeAge  = time.Minute
)

type madeSizes struct {
	mu sync.Mutex
	m  map[meta.FileID]madeSize
}

type madeSize struct {
	dir  meta.FileID // the directory it was made in, held when it was kept
	gen  uint64      // the lease the directory was held under
	u    client.Usage
	kept time.Time
}

// keepMadeSize records, at the last close of a file, the usage the mount
// knows for it, if it made the file in a directory it holds and that
// usage is current; else it forgets what was kept.
func (fsys *fileSystem) keepMadeSize(of *openFile) {
	dir := meta.FileID(of.madeIn.Load())
	k, ok := fsys.current(of) // current under the lease held now
	ok = ok && dir != 0 && fsys.holds(dir)
	// Under the open files' lock, which retain opens under: an open that
	// came since this last close has its own last close to come.
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if fsys.open[of.id] != nil {
		return
	}
	s := &fsys.made
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.m, of.id)
		return
	}
	if s.m == nil {
		s.m = map[meta.FileID]madeSize{}
	}
	makeRoom(s.m, maxMadeSizes, madeSizeAge, func(e madeSize) time.Time { return e.kept })
	s.m[of.id] = madeSize{dir: dir, gen: k.gen, u: k.u, kept: time.Now()}
}

// keptFor returns the usage kept for node n's file, and the directory the
// kernel has it in, if there is one to use now.
func (fsys *fileSystem) keptFor(n *node) (client.Usage, meta.FileID, bool) {
	_, parent := n.Parent()
	if parent == nil {
		return client.Usage{}, 0, false
	}
	dir := meta.FileID(parent.StableAttr().Ino)
	u, ok := fsys.madeSize(n.id, dir)
	return u, dir, ok
}

// madeSize returns the usage kept for file id, listed or looked up in
// directory dir, while the mount still holds dir under the lease it was
// kept under and the file is not open here.
func (fsys *fileSystem) madeSize(id, dir meta.FileID) (client.Usage, bool) {
	s := &fsys.made
	s.mu.Lock()
	e, ok := s.m[id]
	s.mu.Unlock()
	if !ok || e.dir != dir || e.gen != fsys.leaseGen() || !fsys.holds(dir) || fsys.openFile(id) != nil {
		return client.Usage{}, false
	}
	return e.u, true
}

// dropMadeSize forgets the size kept for file id: it is being truncated
// by name, or renamed or linked (it may be known elsewhere from then on).
func (fsys *fileSystem) dropMadeSize(id meta.FileID) {
	s := &fsys.made
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}
