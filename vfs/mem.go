package vfs

import (
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemCapacity is the size a MemFS reports as its total space.
const MemCapacity = 1 << 40

// pageSize is the unit in which a MemFS stores file contents: pages never
// written are holes and cost nothing, so sparse files may be huge.
const pageSize = 4096

// MemFS is an in-memory FS that keeps, besides what the running system
// sees, what a crash would leave: a file's contents as of its last Sync (or
// SyncFS), and a directory's entries as of its last SyncDir (or SyncFS).
// Closing a file syncs nothing. [MemFS.CrashClone] returns that durable
// state as a new MemFS.
//
// This is the strict reading of POSIX that Linux file systems do not
// always need but may at any time exercise: a file that was written and
// fdatasynced but whose directory was never synced is gone after a crash;
// a removed file whose directory was not synced comes back with its
// synced contents.
//
// A MemFS returned by OpenRoot shares its parent's files. All methods are
// safe for concurrent use.
type MemFS struct {
	s    *memState
	dir  *memNode
	path string // of dir, for error messages; "." for the root
}

type memState struct {
	mu    sync.Mutex
	root  *memNode
	locks map[*memNode]*memFile
}

// memNode is a file or a directory, like an inode.
type memNode struct {
	mode fs.FileMode

	// Directories: entries as the running system sees them, and as of the
	// last sync of the directory.
	entries, durable map[string]*memNode

	// Files: contents as the running system sees them, and as of the last
	// Sync.
	data, synced memData
}

// memData is sparse file contents.
type memData struct {
	pages map[int64]*[pageSize]byte
	size  int64
}

func (d memData) clone() memData {
	c := memData{pages: make(map[int64]*[pageSize]byte, len(d.pages)), size: d.size}
	for i, p := range d.pages {
		q := *p
		c.pages[i] = &q
	}
	return c
}

func (d *memData) readAt(p []byte, off int64) int {
	if off >= d.size {
		return 0
	}
	p = p[:min(int64(len(p)), d.size-off)]
	for done := 0; done < len(p); {
		pos := off + int64(done)
		i, o := pos/pageSize, int(pos%pageSize)
		n := min(len(p)-done, pageSize-o)
		if pg := d.pages[i]; pg != nil {
			copy(p[done:done+n], pg[o:])
		} else {
			clear(p[done : done+n])
		}
		done += n
	}
	return len(p)
}

func (d *memData) writeAt(p []byte, off int64) {
	for done := 0; done < len(p); {
		pos := off + int64(done)
		i, o := pos/pageSize, int(pos%pageSize)
		pg := d.pages[i]
		if pg == nil {
			pg = new([pageSize]byte)
			d.pages[i] = pg
		}
		done += copy(pg[o:], p[done:])
	}
	d.size = max(d.size, off+int64(len(p)))
}

func (d *memData) truncate(size int64) {
	if size < d.size {
		for i, pg := range d.pages {
			switch {
			case i*pageSize >= size:
				delete(d.pages, i)
			case (i+1)*pageSize > size:
				// Shrinking then growing must expose zeros, not old bytes.
				clear(pg[size-i*pageSize:])
			}
		}
	}
	d.size = size
}

func newDir(perm fs.FileMode) *memNode {
	return &memNode{mode: fs.ModeDir | perm.Perm(), entries: map[string]*memNode{}, durable: map[string]*memNode{}}
}

func newFile(perm fs.FileMode) *memNode {
	return &memNode{
		mode:   perm.Perm(),
		data:   memData{pages: map[int64]*[pageSize]byte{}},
		synced: memData{pages: map[int64]*[pageSize]byte{}},
	}
}

func (n *memNode) isDir() bool { return n.mode.IsDir() }

// NewMem returns an empty MemFS whose root directory exists and is durable.
func NewMem() *MemFS {
	return &MemFS{s: &memState{root: newDir(0o755), locks: map[*memNode]*memFile{}}, dir: nil, path: "."}
}

func (m *MemFS) root() *memNode {
	if m.dir == nil {
		return m.s.root
	}
	return m.dir
}

func (m *MemFS) full(name string) string { return path.Join(m.path, name) }

func (m *MemFS) pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: m.full(name), Err: err}
}

// lookup resolves name. With parent, it resolves name's directory instead
// and returns it with the last element (name "." is not allowed then).
// Must hold m.s.mu.
func (m *MemFS) lookup(op, name string, parent bool) (*memNode, string, error) {
	if !fs.ValidPath(name) {
		return nil, "", m.pathErr(op, name, syscall.EINVAL)
	}
	n := m.root()
	if name == "." {
		if parent {
			return nil, "", m.pathErr(op, name, syscall.EINVAL)
		}
		return n, "", nil
	}
	elems := strings.Split(name, "/")
	last := len(elems)
	if parent {
		last--
	}
	for _, e := range elems[:last] {
		if !n.isDir() {
			return nil, "", m.pathErr(op, name, syscall.ENOTDIR)
		}
		c := n.entries[e]
		if c == nil {
			return nil, "", m.pathErr(op, name, syscall.ENOENT)
		}
		n = c
	}
	if parent {
		if !n.isDir() {
			return nil, "", m.pathErr(op, name, syscall.ENOTDIR)
		}
		return n, elems[last], nil
	}
	return n, "", nil
}

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.openLocked("open", name, flag, perm)
}

func (m *MemFS) openLocked(op, name string, flag int, perm fs.FileMode) (*memFile, error) {
	dir, base, err := m.lookup(op, name, true)
	if err != nil {
		return nil, err
	}
	n := dir.entries[base]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, m.pathErr(op, name, syscall.ENOENT)
	case n == nil:
		n = newFile(perm)
		dir.entries[base] = n
	case flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, m.pathErr(op, name, syscall.EEXIST)
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	if n.isDir() && (acc != os.O_RDONLY || flag&os.O_CREATE != 0) {
		return nil, m.pathErr(op, name, syscall.EISDIR)
	}
	f := &memFile{s: m.s, n: n, name: m.full(name), read: acc != os.O_WRONLY, write: acc != os.O_RDONLY}
	if flag&os.O_TRUNC != 0 && f.write {
		n.data.truncate(0)
	}
	return f, nil
}

// Mkdir implements FS.
func (m *MemFS) Mkdir(name string, perm fs.FileMode) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	dir, base, err := m.lookup("mkdir", name, true)
	if err != nil {
		return err
	}
	if dir.entries[base] != nil {
		return m.pathErr("mkdir", name, syscall.EEXIST)
	}
	dir.entries[base] = newDir(perm)
	return nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	dir, base, err := m.lookup("remove", name, true)
	if err != nil {
		return err
	}
	n := dir.entries[base]
	if n == nil {
		return m.pathErr("remove", name, syscall.ENOENT)
	}
	if n.isDir() && len(n.entries) > 0 {
		return m.pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.entries, base)
	return nil
}

// Rename implements FS for files. Like Remove and a create, it changes
// the entries a crash keeps only once the directories are synced.
func (m *MemFS) Rename(oldname, newname string) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	odir, obase, err := m.lookup("rename", oldname, true)
	if err != nil {
		return err
	}
	ndir, nbase, err := m.lookup("rename", newname, true)
	if err != nil {
		return err
	}
	n := odir.entries[obase]
	if n == nil {
		return m.pathErr("rename", oldname, syscall.ENOENT)
	}
	if n.isDir() {
		return m.pathErr("rename", oldname, syscall.EISDIR)
	}
	if t := ndir.entries[nbase]; t != nil && t.isDir() {
		return m.pathErr("rename", newname, syscall.EISDIR)
	}
	delete(odir.entries, obase)
	ndir.entries[nbase] = n
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	n, _, err := m.lookup("readdir", name, false)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, m.pathErr("readdir", name, syscall.ENOTDIR)
	}
	var ents []fs.DirEntry
	for _, e := range slices.Sorted(maps.Keys(n.entries)) {
		ents = append(ents, fs.FileInfoToDirEntry(n.entries[e].info(e)))
	}
	return ents, nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(name string) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	n, _, err := m.lookup("fsync", name, false)
	if err != nil {
		return err
	}
	if !n.isDir() {
		return m.pathErr("fsync", name, syscall.ENOTDIR)
	}
	n.durable = maps.Clone(n.entries)
	return nil
}

// SyncFS implements FS: everything reachable becomes durable.
func (m *MemFS) SyncFS() error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	var walk func(n *memNode)
	walk = func(n *memNode) {
		if !n.isDir() {
			n.synced = n.data.clone()
			return
		}
		n.durable = maps.Clone(n.entries)
		for _, c := range n.entries {
			walk(c)
		}
	}
	walk(m.s.root)
	return nil
}

// OpenRoot implements FS.
func (m *MemFS) OpenRoot(name string) (FS, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	n, _, err := m.lookup("openat", name, false)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, m.pathErr("openat", name, syscall.ENOTDIR)
	}
	return &MemFS{s: m.s, dir: n, path: m.full(name)}, nil
}

// Lock implements FS. Locks are per MemFS tree: a CrashClone starts with
// none held.
func (m *MemFS) Lock(name string) (File, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	f, err := m.openLocked("open", name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if m.s.locks[f.n] != nil {
		return nil, m.pathErr("flock", name, ErrLocked)
	}
	m.s.locks[f.n] = f
	return f, nil
}

// DiskUsage implements FS: a MemFS is MemCapacity bytes large, and the
// pages holding file data are used.
func (m *MemFS) DiskUsage() (DiskUsage, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	var used uint64
	var walk func(n *memNode)
	walk = func(n *memNode) {
		used += uint64(len(n.data.pages)) * pageSize
		for _, c := range n.entries {
			walk(c)
		}
	}
	walk(m.s.root)
	free := uint64(MemCapacity) - min(used, MemCapacity)
	return DiskUsage{Total: MemCapacity, Free: free, Avail: free}, nil
}

// Close implements FS; it does nothing.
func (m *MemFS) Close() error { return nil }

// CrashClone returns a new MemFS holding what a power cut at this instant
// would leave of m's whole tree (not only m's directory): the durable
// entries of every directory reachable from the root through durable
// entries, and every file's contents as of its last sync. In the clone,
// everything is durable and no lock is held.
func (m *MemFS) CrashClone() *MemFS {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	seen := map[*memNode]*memNode{}
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c := seen[n]; c != nil {
			return c
		}
		var c *memNode
		if n.isDir() {
			c = newDir(n.mode)
			seen[n] = c
			for name, e := range n.durable {
				c.entries[name] = clone(e)
			}
			c.durable = maps.Clone(c.entries)
		} else {
			c = &memNode{mode: n.mode, data: n.synced.clone(), synced: n.synced.clone()}
			seen[n] = c
		}
		return c
	}
	return &MemFS{s: &memState{root: clone(m.s.root), locks: map[*memNode]*memFile{}}, path: "."}
}

func (n *memNode) info(name string) fs.FileInfo {
	return memInfo{name: name, size: n.data.size, mode: n.mode}
}

type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }

// memFile is an open file of a MemFS. Like an open descriptor it keeps
// working on its file after the file was removed.
type memFile struct {
	s           *memState
	n           *memNode
	name        string
	read, write bool
	closed      bool // guarded by s.mu
}

func (f *memFile) err(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// check validates a call; it must hold f.s.mu.
func (f *memFile) check(op string, off int64, needRead, needWrite bool) error {
	switch {
	case f.closed:
		return f.err(op, fs.ErrClosed)
	case needRead && !f.read, needWrite && !f.write:
		return f.err(op, syscall.EBADF)
	case off < 0:
		return f.err(op, syscall.EINVAL)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("read", off, true, false); err != nil {
		return 0, err
	}
	if f.n.isDir() {
		return 0, f.err("read", syscall.EISDIR)
	}
	n := f.n.data.readAt(p, off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("write", off, false, true); err != nil {
		return 0, err
	}
	f.n.data.writeAt(p, off)
	return len(p), nil
}

func (f *memFile) Truncate(size int64) error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if !f.write && !f.closed {
		return f.err("truncate", syscall.EINVAL) // as ftruncate(2) on Linux
	}
	if err := f.check("truncate", size, false, true); err != nil {
		return err
	}
	f.n.data.truncate(size)
	return nil
}

func (f *memFile) Sync() error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("fdatasync", 0, false, false); err != nil {
		return err
	}
	if f.n.isDir() {
		f.n.durable = maps.Clone(f.n.entries)
	} else {
		f.n.synced = f.n.data.clone()
	}
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("stat", 0, false, false); err != nil {
		return nil, err
	}
	return f.n.info(path.Base(f.name)), nil
}

func (f *memFile) Close() error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.closed {
		return f.err("close", fs.ErrClosed)
	}
	f.closed = true
	if f.s.locks[f.n] == f {
		delete(f.s.locks, f.n)
	}
	return nil
}
