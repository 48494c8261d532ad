// Package fsck decides what is wrong with a pario store, from a view of
// it: every inode and directory entry of the metadata server and every
// datafile of every I/O server. It is pure: client/fsck.go gathers the
// view over the wire (metadata op scan, I/O op list), calls Check, and
// repairs; `pario fsck` (cmd/pario/cmd_fsck.go) prints the Report.
//
// Check reports only what is provably wrong. pario keeps no file size in
// the metadata (a file's size is computed from its datafiles, as PVFS2
// does), so a datafile shorter than its siblings is a hole by definition
// and never a finding. A datafile that does not exist is a finding only
// under Rules.DatafilesAtCreate: while datafiles are made by a file's
// first write to them, an absent one is a hole too.
//
// A view is not a snapshot: it is read page by page while clients go on
// working. Check therefore judges nothing that may be in flight: IDs at or
// above the metadata server's ID counter as of the scan's start (entries
// created during the scan), and datafiles or files younger than
// Rules.Grace (a create, write or remove under way). The caller re-checks
// each finding against the live store before acting on it.
package fsck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// RootID is the root directory's ID.
const RootID = 1

// Inode is one inode of the metadata server.
type Inode struct {
	ID  uint64
	Dir bool
	// Servers lists the I/O server of each datafile, in datafile order;
	// a Stuffed file keeps data on Servers[0] only.
	Servers []uint32
	Stuffed bool
	Ctime   int64 // unix ns, the metadata server's clock
	// Nlink is a file's count of its names (hard links); 0 when not
	// known, and for directories, which are not checked.
	Nlink uint32
}

// Dirent is one directory entry: Name in directory Parent names Child.
type Dirent struct {
	Parent uint64
	Name   string
	Child  uint64
}

// Datafile is one datafile of an I/O server.
type Datafile struct {
	ID    uint64
	Size  int64
	Mtime int64 // unix ns, the I/O server's clock
}

// Server is one I/O server's datafiles.
type Server struct {
	Name string
	// Err says why the server could not be listed; its datafiles are then
	// not judged, nor are files' datafiles on it.
	Err       error
	Datafiles []Datafile
	Now       int64 // the server's clock when it was listed, unix ns
}

// View is the store as fsck read it.
type View struct {
	// NextID is the metadata server's ID counter as of the scan's first
	// page: every ID below it was handed out before the scan began.
	NextID  uint64
	Now     int64 // the metadata server's time of the scan (unix ns), for inode ages
	Inodes  []Inode
	Dirents []Dirent
	// Bad lists metadata records that do not decode.
	Bad     []string
	Servers []Server // by server index
	// Pooled are the metadata server's precreated datafiles: ID to the
	// servers holding them. They belong to no file yet, and are no
	// orphans.
	Pooled map[uint64][]uint32
	// Pending are removed files whose datafiles the metadata server has
	// still to remove: those datafiles are not orphans.
	Pending []Pending
}

// Pending is a removed file whose datafiles on Servers are still to be
// removed by the metadata server.
type Pending struct {
	ID      uint64
	Servers []uint32
}

// Rules tune what Check reports.
type Rules struct {
	// Grace: a datafile modified, or a file created, less than Grace
	// before it was read is not judged (counted in Report.Young).
	Grace time.Duration
	// DatafilesAtCreate says a file's datafiles are made when it is
	// created, so a missing one is lost data rather than a hole.
	DatafilesAtCreate bool
}

// DefaultGrace is the default Rules.Grace: far longer than any create
// takes, so a datafile whose inode is not committed yet is left alone.
const DefaultGrace = 10 * time.Minute

// Kind is the kind of a finding.
type Kind uint8

const (
	// OrphanDatafile: a datafile that no file points to (its ID has no
	// inode, or the inode does not place a datafile on that server).
	// Repair removes it.
	OrphanDatafile Kind = iota + 1
	// DanglingEntry: a directory entry whose ID has no inode. Repair
	// removes the entry.
	DanglingEntry
	// MissingDatafile: a file's datafile is not on its server (only
	// under Rules.DatafilesAtCreate). Reported, not repaired: the bytes
	// are gone; the operator restores the server or removes the file.
	MissingDatafile
	// UnknownDatafile: a datafile whose ID the metadata server has not
	// handed out yet, which happens when the metadata went back in time
	// (a restored meta.db). Reported, never removed: it may be the only
	// copy of data.
	UnknownDatafile
	// Unreachable: an inode no path from the root leads to. Reported.
	Unreachable
	// BadRecord: a metadata record that does not decode. Reported.
	BadRecord
	// WrongLinkCount: a file's link count is not the number of entries
	// naming it (the metadata server keeps both in one transaction, so
	// this is damage or a bug). Reported: the file's data goes when the
	// count reaches 0, so a count too low could lose it early.
	WrongLinkCount
)

var kindNames = map[Kind]string{
	OrphanDatafile:  "orphan datafile",
	DanglingEntry:   "dangling entry",
	MissingDatafile: "missing datafile",
	UnknownDatafile: "unknown datafile",
	Unreachable:     "unreachable",
	BadRecord:       "bad record",
	WrongLinkCount:  "wrong link count",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind %d", k)
}

// Repairable says whether repair acts on findings of kind k.
func (k Kind) Repairable() bool { return k == OrphanDatafile || k == DanglingEntry }

// Finding is one thing wrong.
type Finding struct {
	Kind   Kind
	Server int    // index of the I/O server, -1 if none
	Name   string // the I/O server's name, if any
	ID     uint64 // the datafile's, file's or entry's target ID
	Path   string // the path of the file or entry, when it has one
	Bytes  int64  // a datafile's size
	Index  int    // the datafile's index in its file (MissingDatafile)
	// Parent is, for DanglingEntry, the directory holding the entry; for
	// Unreachable, the inode at the top of the unreachable chain (the
	// finding's own, or the directory above it whose entry the scan did
	// not see), whose ctime as scanned is Ctime.
	Parent uint64
	Entry  string // DanglingEntry: the entry's name
	Detail string // BadRecord: the record; WrongLinkCount: the counts
	// Ctime is, for WrongLinkCount, the file's ctime as scanned, and for
	// Unreachable, Parent's: the inode and the entries are read in
	// different transactions, so the caller drops the finding if a link,
	// unlink or rename (which set the ctime) came since.
	Ctime int64
}

// String is the finding on one line, for operators.
func (f Finding) String() string {
	switch f.Kind {
	case OrphanDatafile:
		return fmt.Sprintf("orphan datafile: server %s, ID %d, %d bytes: no file points to it", f.Name, f.ID, f.Bytes)
	case DanglingEntry:
		return fmt.Sprintf("dangling entry: %s names ID %d, which has no inode", f.Path, f.ID)
	case MissingDatafile:
		return fmt.Sprintf("missing datafile: %s (ID %d): datafile %d is not on server %s", f.Path, f.ID, f.Index, f.Name)
	case UnknownDatafile:
		return fmt.Sprintf("unknown datafile: server %s, ID %d, %d bytes: the metadata server has not handed this ID out (restored meta.db?); kept", f.Name, f.ID, f.Bytes)
	case Unreachable:
		return fmt.Sprintf("unreachable: inode %d is in no directory reachable from /", f.ID)
	case BadRecord:
		return "bad record: " + f.Detail
	case WrongLinkCount:
		return fmt.Sprintf("wrong link count: %s (ID %d): %s", f.Path, f.ID, f.Detail)
	}
	return fmt.Sprintf("%v: ID %d", f.Kind, f.ID)
}

// Report is what Check found.
type Report struct {
	Findings []Finding
	// What was looked at.
	Files, Dirs, Entries, Datafiles int
	DatafileBytes                   int64
	// Young counts datafiles and files not judged because they are
	// younger than Rules.Grace or were created during the scan.
	Young int
	// Unlisted names the I/O servers that could not be listed, with why.
	Unlisted []string
	// Pending counts the datafiles of removed files that the metadata
	// server is still to remove (a server was down, or it has not got
	// to them yet), and their bytes: not findings.
	Pending      int
	PendingBytes int64
}

// Clean says nothing is wrong and everything could be looked at.
func (r Report) Clean() bool { return len(r.Findings) == 0 && len(r.Unlisted) == 0 }

// Count returns the number of findings of kind k.
func (r Report) Count(k Kind) int {
	n := 0
	for _, f := range r.Findings {
		if f.Kind == k {
			n++
		}
	}
	return n
}

// Reclaimable is the bytes repair would free: the orphan datafiles' sizes.
func (r Report) Reclaimable() int64 {
	var n int64
	for _, f := range r.Findings {
		if f.Kind == OrphanDatafile {
			n += f.Bytes
		}
	}
	return n
}

// Check computes the findings of v under rules, in a stable order: by
// kind, then server, then ID, then path.
func Check(v View, rules Rules) Report {
	var r Report
	grace := rules.Grace.Nanoseconds()
	inodes := make(map[uint64]*Inode, len(v.Inodes))
	for i := range v.Inodes {
		in := &v.Inodes[i]
		inodes[in.ID] = in
		if in.Dir {
			r.Dirs++
		} else {
			r.Files++
		}
	}
	r.Entries = len(v.Dirents)
	paths := pathsOf(v.Dirents)

	// Directory entries that point nowhere, and what the root reaches.
	children := map[uint64][]uint64{}
	for _, d := range v.Dirents {
		if _, ok := inodes[d.Child]; ok {
			children[d.Parent] = append(children[d.Parent], d.Child)
			continue
		}
		if d.Child >= v.NextID {
			r.Young++ // created, and its inode scanned past, during the scan
			continue
		}
		r.Findings = append(r.Findings, Finding{
			Kind: DanglingEntry, Server: -1, ID: d.Child, Parent: d.Parent, Entry: d.Name,
			Path: join(paths.dir(d.Parent), d.Name),
		})
	}
	reached := map[uint64]bool{RootID: true}
	for queue := []uint64{RootID}; len(queue) > 0; queue = queue[1:] {
		if in := inodes[queue[0]]; in == nil || !in.Dir {
			continue
		}
		for _, c := range children[queue[0]] {
			if !reached[c] {
				reached[c] = true
				queue = append(queue, c)
			}
		}
	}
	for _, in := range v.Inodes {
		if !reached[in.ID] && in.ID < v.NextID {
			top := paths.top(in.ID)
			var ctime int64
			if t := inodes[top]; t != nil {
				ctime = t.Ctime
			}
			r.Findings = append(r.Findings, Finding{Kind: Unreachable, Server: -1, ID: in.ID, Parent: top, Ctime: ctime})
		}
	}
	for _, b := range v.Bad {
		r.Findings = append(r.Findings, Finding{Kind: BadRecord, Server: -1, Detail: b})
	}
	r.Findings = append(r.Findings, linkCounts(v, inodes, paths, grace)...)

	// Datafiles no file points to.
	pending := map[[2]uint64]bool{}
	for _, p := range v.Pending {
		for _, s := range p.Servers {
			pending[[2]uint64{p.ID, uint64(s)}] = true
		}
	}
	have := make([]map[uint64]bool, len(v.Servers))
	for s, srv := range v.Servers {
		if srv.Err != nil {
			r.Unlisted = append(r.Unlisted, fmt.Sprintf("%s: %v", srv.Name, srv.Err))
			continue
		}
		have[s] = make(map[uint64]bool, len(srv.Datafiles))
		for _, df := range srv.Datafiles {
			have[s][df.ID] = true
			r.Datafiles++
			r.DatafileBytes += df.Size
			if referenced(inodes[df.ID], s) || slices.Contains(v.Pooled[df.ID], uint32(s)) {
				continue
			}
			if pending[[2]uint64{df.ID, uint64(s)}] {
				r.Pending++
				r.PendingBytes += df.Size
				continue
			}
			if srv.Now-df.Mtime < grace {
				r.Young++
				continue
			}
			kind := OrphanDatafile
			if df.ID >= v.NextID {
				kind = UnknownDatafile
			}
			r.Findings = append(r.Findings, Finding{Kind: kind, Server: s, Name: srv.Name, ID: df.ID, Bytes: df.Size, Path: paths.of(df.ID)})
		}
	}

	// Files whose datafiles are missing.
	if rules.DatafilesAtCreate {
		for _, in := range v.Inodes {
			if in.Dir || in.ID >= v.NextID {
				continue
			}
			if v.Now-in.Ctime < grace {
				r.Young++
				continue
			}
			servers := in.Servers
			if in.Stuffed && len(servers) > 0 {
				servers = servers[:1]
			}
			for i, s := range servers {
				if int(s) >= len(v.Servers) || have[s] == nil || have[s][in.ID] {
					continue
				}
				r.Findings = append(r.Findings, Finding{
					Kind: MissingDatafile, Server: int(s), Name: v.Servers[s].Name, ID: in.ID, Index: i, Path: paths.of(in.ID),
				})
			}
		}
	}

	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Server, b.Server), cmp.Compare(a.ID, b.ID),
			strings.Compare(a.Path, b.Path), strings.Compare(a.Detail, b.Detail))
	})
	return r
}

// referenced says whether inode in places a datafile on server s.
func referenced(in *Inode, s int) bool {
	if in == nil || in.Dir {
		return false
	}
	for _, x := range in.Servers {
		if int(x) == s {
			return true
		}
	}
	return false
}

// pather names entries by path through the directory entries.
type pather struct {
	up map[uint64]Dirent // child -> the entry naming it
}

func pathsOf(ds []Dirent) pather {
	p := pather{up: make(map[uint64]Dirent, len(ds))}
	for _, d := range ds {
		if _, dup := p.up[d.Child]; !dup {
			p.up[d.Child] = d
		}
	}
	return p
}

// of returns id's path, or "" if no chain of entries leads to it from
// the root (a cycle or a missing directory ends the walk).
func (p pather) of(id uint64) string {
	var names []string
	seen := map[uint64]bool{}
	for id != RootID {
		d, ok := p.up[id]
		if !ok || seen[id] {
			return ""
		}
		seen[id] = true
		names = append(names, d.Name)
		id = d.Parent
	}
	slices.Reverse(names)
	return "/" + strings.Join(names, "/")
}

// top returns the inode at the top of id's chain of entries: the first,
// going up, that no entry names (a file or directory renamed into a
// directory whose entries the scan had read), or the root.
func (p pather) top(id uint64) uint64 {
	seen := map[uint64]bool{}
	for id != RootID && !seen[id] {
		seen[id] = true
		d, ok := p.up[id]
		if !ok {
			return id
		}
		id = d.Parent
	}
	return id
}

// dir names directory id for an entry in it: its path, or "#id" when it
// has none.
func (p pather) dir(id uint64) string {
	if id == RootID {
		return "/"
	}
	if s := p.of(id); s != "" {
		return s
	}
	return fmt.Sprintf("#%d", id)
}

func join(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// linkCounts compares each file's link count with the entries naming it.
// A file changed within grace is left alone: the scan reads inodes and
// entries in separate transactions, so a link or unlink meanwhile would
// look like a wrong count (both set the file's ctime). That covers a link
// the inode as scanned shows; one made after the inode was read, however
// old the file, the caller's re-check finds (Finding.Ctime).
func linkCounts(v View, inodes map[uint64]*Inode, paths pather, grace int64) []Finding {
	names := map[uint64]uint32{}
	for _, d := range v.Dirents {
		names[d.Child]++
	}
	var out []Finding
	for id, n := range names {
		in := inodes[id]
		if in == nil || in.Dir || in.Nlink == 0 || in.Nlink == n || v.Now-in.Ctime < grace {
			continue
		}
		out = append(out, Finding{
			Kind: WrongLinkCount, Server: -1, ID: id, Path: paths.of(id), Ctime: in.Ctime,
			Detail: fmt.Sprintf("%d entries name it, its count says %d", n, in.Nlink),
		})
	}
	return out
}
