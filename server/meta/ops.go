package meta

import (
	"fmt"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
)

// The metadata server's ops. Each request and response type below is the
// whole layout of its argument section. Paths are strings, layouts travel
// in their text form (dist.Layout.String, "" for none), attributes in the
// versioned encoding the database uses. An op is idempotent when a second
// execution leaves the namespace as the first did: creating, removing and
// renaming are not (the second attempt would fail with EEXIST or ENOENT
// after the first succeeded unseen).
var (
	OpServers   = wire.NewOp[ServersRequest, ServersResponse](1, "servers", true)
	OpLookup    = wire.NewOp[LookupRequest, AttrResponse](2, "lookup", true)
	OpCreate    = wire.NewOp[CreateRequest, AttrResponse](3, "create", false)
	OpMkdir     = wire.NewOp[MkdirRequest, AttrResponse](4, "mkdir", false)
	OpReaddir   = wire.NewOp[ReaddirRequest, ReaddirResponse](5, "readdir", true)
	OpRename    = wire.NewOp[RenameRequest, RenameResponse](6, "rename", false)
	OpRemove    = wire.NewOp[RemoveRequest, AttrResponse](7, "remove", false)
	OpSetLayout = wire.NewOp[SetLayoutRequest, AttrResponse](8, "setlayout", true)
	OpUnstuff   = wire.NewOp[UnstuffRequest, AttrResponse](9, "unstuff", true)
	OpSetAttr   = wire.NewOp[SetAttrRequest, AttrResponse](10, "setattr", true)
	OpGetByID   = wire.NewOp[GetByIDRequest, AttrResponse](11, "getbyid", true)
	OpStats     = wire.NewOp[StatsRequest, StatsResponse](12, "stats", true)
	OpScan      = wire.NewOp[ScanRequest, ScanResponse](13, "scan", true)
	// OpUnlinkDangling is idempotent in effect (a second try finds the
	// entry gone), but the answer differs (ENOENT), so it is not retried.
	OpUnlinkDangling = wire.NewOp[UnlinkDanglingRequest, UnlinkDanglingResponse](14, "unlinkdangling", false)
	OpMknod          = wire.NewOp[MknodRequest, AttrResponse](15, "mknod", false)
	OpSymlink        = wire.NewOp[SymlinkRequest, AttrResponse](16, "symlink", false)
	OpReadlink       = wire.NewOp[ReadlinkRequest, ReadlinkResponse](17, "readlink", true)
	OpLink           = wire.NewOp[LinkRequest, AttrResponse](18, "link", false)
	// OpSync answers once every change answered before it is durable
	// (durable.go): what fsync asks of the namespace. A server from before
	// it answers ENOSYS, and needs nothing: it synced every change before
	// answering it.
	OpSync = wire.NewOp[SyncRequest, SyncResponse](20, "sync", true)
)

// Ops is the metadata server's op table.
var Ops = wire.OpTable{
	OpServers.OpInfo, OpLookup.OpInfo, OpCreate.OpInfo, OpMkdir.OpInfo,
	OpReaddir.OpInfo, OpRename.OpInfo, OpRemove.OpInfo, OpSetLayout.OpInfo,
	OpUnstuff.OpInfo, OpSetAttr.OpInfo, OpGetByID.OpInfo, OpStats.OpInfo,
	OpScan.OpInfo, OpUnlinkDangling.OpInfo, OpMknod.OpInfo, OpSymlink.OpInfo,
	OpReadlink.OpInfo, OpLink.OpInfo, OpWatch.OpInfo, OpSync.OpInfo,
	OpDelegate.OpInfo, OpBatch.OpInfo, OpReserve.OpInfo, OpMkdirHeld.OpInfo,
}

// OpName names an op code for logs and errors.
func OpName(code uint8) string { return Ops.Name(code) }

// ServerInfo names one I/O server of the cluster.
type ServerInfo struct {
	Name string // e.g. "data0"
	Addr string // host:port clients dial
}

// maxListLen bounds counts read off the wire before anything is allocated.
const maxListLen = 1 << 20

func putAttr(e *wire.Enc, a *Attr) { e.Blob(encodeAttr(a)) }

func getAttr(d *wire.Dec, field string) Attr {
	b := d.Blob(field)
	if d.Err() != nil {
		return Attr{}
	}
	a, err := decodeAttr(b)
	if err != nil {
		d.Fail(field, err)
	}
	return a
}

// mountOnly marks an encoded watcher ID as Cred.Mount alone (Watcher 0).
// Watcher IDs keep their top two bits clear (startHubLocked), so a
// server from before Cred.Mount reads the mark as a watcher it does not
// know, which is what Watcher 0 means to it: the change is sent to every
// mount.
const mountOnly = 1 << 62

// putCred writes who asks: uid, gid, the supplementary groups and the
// asking mount's watcher ID, as Watcher (and Mount) or as Mount alone.
func putCred(e *wire.Enc, c Cred) {
	e.U32(c.Uid)
	e.U32(c.Gid)
	e.Uvarint(uint64(len(c.Groups)))
	for _, g := range c.Groups {
		e.U32(g)
	}
	w := c.Watcher
	if w == 0 && c.Mount != 0 && c.Mount < mountOnly {
		w = c.Mount | mountOnly
	}
	e.Uvarint(w)
}

func getCred(d *wire.Dec) Cred {
	c := Cred{Uid: d.U32("uid"), Gid: d.U32("gid")}
	n := d.Int("group count", MaxGroups)
	if n > 0 && d.Err() == nil {
		c.Groups = make([]uint32, 0, n)
		for i := 0; i < n && d.Err() == nil; i++ {
			c.Groups = append(c.Groups, d.U32("group"))
		}
	}
	if w := d.Uvarint("watcher"); w&mountOnly != 0 {
		c.Mount = w &^ mountOnly
	} else {
		c.Watcher, c.Mount = w, w
	}
	return c
}

func putLayout(e *wire.Enc, l dist.Layout) {
	if l.IsZero() {
		e.String("")
	} else {
		e.String(l.String())
	}
}

func getLayout(d *wire.Dec, field string) dist.Layout {
	s := d.String(field)
	if s == "" || d.Err() != nil {
		return dist.Layout{}
	}
	l, err := dist.ParseLayout(s)
	if err != nil {
		d.Fail(field, err)
	}
	return l
}

// ServersRequest is empty: it asks for the cluster's I/O servers.
type ServersRequest struct{}

func (ServersRequest) Encode(*wire.Enc)          {}
func (*ServersRequest) Decode(d *wire.Dec) error { return d.Done() }

// ServersResponse lists the I/O servers in server-index order, and the
// cluster incarnation, which a client's datafile removes carry (the I/O
// servers refuse those of another incarnation).
type ServersResponse struct {
	Servers     []ServerInfo
	Incarnation uint64
}

func (r ServersResponse) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Servers)))
	for _, s := range r.Servers {
		e.String(s.Name)
		e.String(s.Addr)
	}
	e.U64(r.Incarnation)
}

func (r *ServersResponse) Decode(d *wire.Dec) error {
	n := d.Int("server count", maxListLen)
	r.Servers = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Servers = append(r.Servers, ServerInfo{Name: d.String("server name"), Addr: d.String("server address")})
	}
	r.Incarnation = d.U64("incarnation")
	return d.Done()
}

// AttrResponse is the attributes of the entry an op looked up, created,
// changed or removed.
type AttrResponse struct{ Attr Attr }

func (r AttrResponse) Encode(e *wire.Enc) { putAttr(e, &r.Attr) }

func (r *AttrResponse) Decode(d *wire.Dec) error {
	r.Attr = getAttr(d, "attr")
	return d.Done()
}

// LookupRequest asks for the attributes of Path on behalf of Cred.
//
// Every request that names a path carries the caller's credentials last;
// the server checks them (search permission on every directory of the
// path, and what the op needs), squashing root if configured. Before
// them comes what the caller expects the path to resolve to (Expect:
// zero from the native client), checked in the same transaction.
type LookupRequest struct {
	Path   string
	Expect Expect
	Cred   Cred
}

func (r LookupRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *LookupRequest) Decode(d *wire.Dec) error {
	r.Path = d.String("path")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// CreateRequest creates a file. A zero Layout inherits the directory's
// default, else the server's.
type CreateRequest struct {
	Path   string
	Mode   uint32
	Layout dist.Layout
	Expect Expect
	Cred   Cred
}

func (r CreateRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	e.U32(r.Mode)
	putLayout(e, r.Layout)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *CreateRequest) Decode(d *wire.Dec) error {
	r.Path, r.Mode = d.String("path"), d.U32("mode")
	r.Layout = getLayout(d, "layout")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// MkdirRequest creates a directory.
type MkdirRequest struct {
	Path   string
	Mode   uint32
	Expect Expect
	Cred   Cred
}

func (r MkdirRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	e.U32(r.Mode)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *MkdirRequest) Decode(d *wire.Dec) error {
	r.Path, r.Mode = d.String("path"), d.U32("mode")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// MknodRequest creates a special file (FIFO, socket, device node).
type MknodRequest struct {
	Path   string
	Kind   Kind
	Mode   uint32
	Rdev   uint64
	Expect Expect
	Cred   Cred
}

func (r MknodRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	e.U8(uint8(r.Kind))
	e.U32(r.Mode)
	e.U64(r.Rdev)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *MknodRequest) Decode(d *wire.Dec) error {
	r.Path, r.Kind, r.Mode, r.Rdev = d.String("path"), Kind(d.U8("kind")), d.U32("mode"), d.U64("rdev")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	if err := d.Done(); err != nil {
		*r = MknodRequest{}
		return err
	}
	if !r.Kind.Special() {
		k := r.Kind
		*r = MknodRequest{}
		return fmt.Errorf("field %q: %d is not a special file", "kind", k)
	}
	return nil
}

// ReaddirRequest asks for one page of the directory Path: the entries
// whose names come after Cookie in byte order ("" for the first page), at
// most Max of them (0, or more than MaxPageEntries, means MaxPageEntries).
// The cookie is the Next of the page before; it stays valid whatever is
// created or removed meanwhile.
type ReaddirRequest struct {
	Path   string
	Cookie string
	Max    uint32
	Expect Expect
	Cred   Cred
}

func (r ReaddirRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	e.String(r.Cookie)
	e.U32(r.Max)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *ReaddirRequest) Decode(d *wire.Dec) error {
	r.Path, r.Cookie, r.Max = d.String("path"), d.String("cookie"), d.U32("max")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// ReaddirResponse is one page of a directory's entries, in byte order of
// their names, and the cookie that asks for the next page: "" when this
// page ends the directory. A page never holds more than PageBytes of
// entries, so it fits a frame whatever the names.
type ReaddirResponse struct {
	Entries []DirEntry
	Next    string
}

func (r ReaddirResponse) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Entries)))
	for i := range r.Entries {
		e.String(r.Entries[i].Name)
		putAttr(e, &r.Entries[i].Attr)
	}
	e.String(r.Next)
}

func (r *ReaddirResponse) Decode(d *wire.Dec) error {
	n := d.Int("entry count", MaxPageEntries)
	r.Entries = nil
	if n > 0 {
		r.Entries = make([]DirEntry, 0, n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		name := d.String("entry name")
		r.Entries = append(r.Entries, DirEntry{Name: name, Attr: getAttr(d, "entry attr")})
	}
	r.Next = d.String("next cookie")
	if err := d.Done(); err != nil {
		r.Entries, r.Next = nil, ""
		return err
	}
	return nil
}

// RenameRequest moves OldPath to NewPath; KeepData as in RemoveRequest,
// for a replaced file.
type RenameRequest struct {
	OldPath, NewPath string
	Expect           Expect
	Cred             Cred
	KeepData         bool
}

func (r RenameRequest) Encode(e *wire.Enc) {
	e.String(r.OldPath)
	e.String(r.NewPath)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
	e.Bool(r.KeepData)
}

func (r *RenameRequest) Decode(d *wire.Dec) error {
	r.OldPath, r.NewPath = d.String("old path"), d.String("new path")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	r.KeepData = d.Bool("keep data")
	return d.Done()
}

// RenameResponse holds the attributes of the file NewPath named before, if
// the rename replaced one (its datafiles go with its last name: see
// RemoveRequest).
type RenameResponse struct{ Replaced *Attr }

func (r RenameResponse) Encode(e *wire.Enc) {
	e.Bool(r.Replaced != nil)
	if r.Replaced != nil {
		putAttr(e, r.Replaced)
	}
}

func (r *RenameResponse) Decode(d *wire.Dec) error {
	r.Replaced = nil
	if d.Bool("replaced") {
		a := getAttr(d, "replaced attr")
		r.Replaced = &a
	}
	if err := d.Done(); err != nil {
		r.Replaced = nil
		return err
	}
	return nil
}

// RemoveRequest removes a file's entry or an empty directory. The
// metadata server removes a file's datafiles with its last name, unless
// KeepData says the caller will (a mount holding the file open).
type RemoveRequest struct {
	Path     string
	Expect   Expect
	Cred     Cred
	KeepData bool
}

func (r RemoveRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
	e.Bool(r.KeepData)
}

func (r *RemoveRequest) Decode(d *wire.Dec) error {
	r.Path = d.String("path")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	r.KeepData = d.Bool("keep data")
	return d.Done()
}

// SetLayoutRequest sets a directory's default layout (zero clears it) or
// the layout of a file the client found empty.
type SetLayoutRequest struct {
	Path        string
	Layout      dist.Layout
	FileIsEmpty bool
	Expect      Expect
	Cred        Cred
}

func (r SetLayoutRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	putLayout(e, r.Layout)
	e.Bool(r.FileIsEmpty)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *SetLayoutRequest) Decode(d *wire.Dec) error {
	r.Path = d.String("path")
	r.Layout = getLayout(d, "layout")
	r.FileIsEmpty = d.Bool("file is empty")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// UnstuffRequest spreads the stuffed file ID to its full layout.
type UnstuffRequest struct{ ID FileID }

func (r UnstuffRequest) Encode(e *wire.Enc) { e.U64(uint64(r.ID)) }

func (r *UnstuffRequest) Decode(d *wire.Dec) error {
	r.ID = FileID(d.U64("id"))
	return d.Done()
}

// SetAttrRequest changes the attributes of Path; nil fields stay.
type SetAttrRequest struct {
	Path string
	AttrChanges
	Expect Expect
	Cred   Cred
}

// Each optional field travels as a presence byte and a fixed-size value
// (zero when absent), so the section's size does not depend on which are
// set.
func (r SetAttrRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	e.Bool(r.Mode != nil)
	if r.Mode != nil {
		e.U32(*r.Mode)
	} else {
		e.U32(0)
	}
	e.Bool(r.Mtime != nil)
	if r.Mtime != nil {
		e.I64(*r.Mtime)
	} else {
		e.I64(0)
	}
	e.Bool(r.Size != nil)
	if r.Size != nil {
		e.I64(*r.Size)
	} else {
		e.I64(0)
	}
	e.Bool(r.Atime != nil)
	if r.Atime != nil {
		e.I64(*r.Atime)
	} else {
		e.I64(0)
	}
	e.Bool(r.Access)
	for _, id := range []*uint32{r.Uid, r.Gid} {
		e.Bool(id != nil)
		if id != nil {
			e.U32(*id)
		} else {
			e.U32(0)
		}
	}
	e.Bool(r.KillPriv)
	e.Bool(r.Now)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *SetAttrRequest) Decode(d *wire.Dec) error {
	*r = SetAttrRequest{Path: d.String("path")}
	if d.Bool("has mode") {
		m := d.U32("mode")
		r.Mode = &m
	} else {
		d.U32("mode")
	}
	if d.Bool("has mtime") {
		t := d.I64("mtime")
		r.Mtime = &t
	} else {
		d.I64("mtime")
	}
	if d.Bool("has size") {
		s := d.Offset("size")
		r.Size = &s
	} else {
		d.I64("size")
	}
	if d.Bool("has atime") {
		t := d.I64("atime")
		r.Atime = &t
	} else {
		d.I64("atime")
	}
	r.Access = d.Bool("access")
	if d.Bool("has uid") {
		r.Uid = new(d.U32("uid"))
	} else {
		d.U32("uid")
	}
	if d.Bool("has gid") {
		r.Gid = new(d.U32("gid"))
	} else {
		d.U32("gid")
	}
	r.KillPriv = d.Bool("kill privileges")
	r.Now = d.Bool("times now")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	if err := d.Done(); err != nil {
		*r = SetAttrRequest{}
		return err
	}
	return nil
}

// GetByIDRequest asks for the attributes of entry ID, wherever it is now.
// A non-zero Want (MayRead, MayWrite, MayExec) also checks that Cred may
// access the entry so (EACCES otherwise): what open(2) and access(2) ask
// of an entry the kernel has already looked up.
type GetByIDRequest struct {
	ID   FileID
	Want uint32
	Cred Cred
}

func (r GetByIDRequest) Encode(e *wire.Enc) {
	e.U64(uint64(r.ID))
	e.U32(r.Want)
	putCred(e, r.Cred)
}

func (r *GetByIDRequest) Decode(d *wire.Dec) error {
	r.ID = FileID(d.U64("id"))
	r.Want = d.U32("want")
	r.Cred = getCred(d)
	return d.Done()
}

// StatsRequest is empty: it asks how many files and directories exist.
type StatsRequest struct{}

// SyncRequest asks for every answered change to be durable (OpSync).
type SyncRequest struct{}

func (SyncRequest) Encode(*wire.Enc)          {}
func (*SyncRequest) Decode(d *wire.Dec) error { return d.Done() }

// SyncResponse is OpSync's empty answer.
type SyncResponse struct{}

func (SyncResponse) Encode(*wire.Enc)          {}
func (*SyncResponse) Decode(d *wire.Dec) error { return d.Done() }

func (StatsRequest) Encode(*wire.Enc)          {}
func (*StatsRequest) Decode(d *wire.Dec) error { return d.Done() }

// StatsResponse counts the namespace's entries.
type StatsResponse struct{ Files, Dirs int64 }

func (r StatsResponse) Encode(e *wire.Enc) {
	e.I64(r.Files)
	e.I64(r.Dirs)
}

func (r *StatsResponse) Decode(d *wire.Dec) error {
	r.Files, r.Dirs = d.I64("files"), d.I64("dirs")
	return d.Done()
}

// ScanRequest asks for the next page of a scan of every inode and
// directory entry (Store.Scan): Cookie is empty to start, else the
// previous page's; Max bounds the page (the server caps it).
type ScanRequest struct {
	Cookie []byte
	Max    uint32
}

func (r ScanRequest) Encode(e *wire.Enc) {
	e.Blob(r.Cookie)
	e.U32(r.Max)
}

func (r *ScanRequest) Decode(d *wire.Dec) error {
	r.Cookie, r.Max = d.Blob("cookie"), d.U32("max")
	if len(r.Cookie) == 0 {
		r.Cookie = nil // one form for "start"
	}
	return d.Done()
}

// ScanResponse is one page of a scan.
type ScanResponse struct{ ScanPage }

func (r ScanResponse) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Inodes)))
	for i := range r.Inodes {
		putAttr(e, &r.Inodes[i])
	}
	e.Uvarint(uint64(len(r.Dirents)))
	for _, de := range r.Dirents {
		e.U64(uint64(de.Parent))
		e.String(de.Name)
		e.U64(uint64(de.Child))
	}
	e.Uvarint(uint64(len(r.Bad)))
	for _, b := range r.Bad {
		e.String(b)
	}
	e.Uvarint(uint64(len(r.Pending)))
	for _, p := range r.Pending {
		e.U64(uint64(p.ID))
		e.Uvarint(uint64(len(p.Servers)))
		for _, s := range p.Servers {
			e.U32(s)
		}
	}
	e.U64(uint64(r.NextID))
	e.Blob(r.Cookie)
	e.Bool(r.Done)
	e.Uvarint(uint64(len(r.Pooled)))
	for _, pl := range r.Pooled {
		e.U64(uint64(pl.ID))
		e.Uvarint(uint64(len(pl.Servers)))
		for _, srv := range pl.Servers {
			e.U32(srv)
		}
	}
}

func (r *ScanResponse) Decode(d *wire.Dec) error {
	*r = ScanResponse{}
	n := d.Int("inode count", MaxScanPage)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Inodes = append(r.Inodes, getAttr(d, "inode"))
	}
	n = d.Int("directory entry count", MaxScanPage)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Dirents = append(r.Dirents, Dirent{Parent: FileID(d.U64("parent")), Name: d.String("name"), Child: FileID(d.U64("child"))})
	}
	n = d.Int("bad record count", MaxScanPage)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Bad = append(r.Bad, d.String("bad record"))
	}
	n = d.Int("pending removal count", MaxScanPage)
	for i := 0; i < n && d.Err() == nil; i++ {
		p := PendingRemoval{ID: FileID(d.U64("pending id"))}
		m := d.Int("pending server count", maxPendingServers)
		for j := 0; j < m && d.Err() == nil; j++ {
			p.Servers = append(p.Servers, d.U32("pending server"))
		}
		r.Pending = append(r.Pending, p)
	}
	r.NextID = FileID(d.U64("next id"))
	if r.Cookie = d.Blob("cookie"); len(r.Cookie) == 0 {
		r.Cookie = nil
	}
	r.Done = d.Bool("done")
	n = d.Int("pooled count", MaxScanPage)
	for i := 0; i < n && d.Err() == nil; i++ {
		pl := Pooled{ID: FileID(d.U64("pooled id"))}
		m := d.Int("pooled server count", maxListLen)
		for j := 0; j < m && d.Err() == nil; j++ {
			pl.Servers = append(pl.Servers, d.U32("pooled server"))
		}
		r.Pooled = append(r.Pooled, pl)
	}
	return d.Done()
}

// maxPendingServers bounds the servers of one pending removal as decoded
// (far more I/O servers than any cluster has).
const maxPendingServers = 1 << 16

// UnlinkDanglingRequest asks to remove the entry Name of directory
// Parent if it still names Child and Child has no inode
// (Store.UnlinkDangling).
type UnlinkDanglingRequest struct {
	Parent FileID
	Name   string
	Child  FileID
}

func (r UnlinkDanglingRequest) Encode(e *wire.Enc) {
	e.U64(uint64(r.Parent))
	e.String(r.Name)
	e.U64(uint64(r.Child))
}

func (r *UnlinkDanglingRequest) Decode(d *wire.Dec) error {
	r.Parent, r.Name, r.Child = FileID(d.U64("parent")), d.String("name"), FileID(d.U64("child"))
	return d.Done()
}

// UnlinkDanglingResponse is empty.
type UnlinkDanglingResponse struct{}

func (UnlinkDanglingResponse) Encode(*wire.Enc)          {}
func (*UnlinkDanglingResponse) Decode(d *wire.Dec) error { return d.Done() }
