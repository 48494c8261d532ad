package data

import (
	"fmt"
	"syscall"

	"github.com/pario/pario/wire"
)

// The I/O server's ops. Each request and response type below is the whole
// layout of its argument section; the bulk data of a write or of a read's
// answer travels in the frame's data section, beside the types. Every op
// but create is idempotent: writes and truncates are positioned, removing
// a datafile twice removes it once, and a claim records the same
// incarnation again. Create is exclusive, so a retried create whose first
// attempt succeeded would fail with EEXIST: the metadata server does not
// retry it but treats the ID as spent.
var (
	OpWrite    = wire.NewOp[WriteRequest, WriteResponse](1, "write", true)
	OpRead     = wire.NewOp[ReadRequest, ReadResponse](2, "read", true)
	OpTruncate = wire.NewOp[TruncateRequest, TruncateResponse](3, "truncate", true)
	OpSize     = wire.NewOp[SizeRequest, SizeResponse](4, "size", true)
	OpSync     = wire.NewOp[SyncRequest, SyncResponse](5, "sync", true)
	OpRemove   = wire.NewOp[RemoveRequest, RemoveResponse](6, "remove", true)
	OpStatfs   = wire.NewOp[StatfsRequest, StatfsResponse](7, "statfs", true)
	OpCreate   = wire.NewOp[CreateRequest, CreateResponse](8, "create", false)
	OpList     = wire.NewOp[ListRequest, ListResponse](9, "list", true)
	OpClaim    = wire.NewOp[ClaimRequest, ClaimResponse](10, "claim", true)
)

// OpWriteList writes many ranges of one datafile in one request (a
// client's noncontiguous view, client.File.WriteList).
var OpWriteList = wire.NewOp[WriteListRequest, WriteResponse](11, "writeList", true)

// OpCreateBatch makes many datafiles in one request: the metadata server's
// precreate pools (server/meta/pool.go) fill up with it, and throw a pool
// away with its RemoveIfEmpty form. Like create it is not idempotent (a
// retry of a batch that happened finds every datafile existing), so it is
// not retried.
var OpCreateBatch = wire.NewOp[CreateBatchRequest, CreateBatchResponse](12, "createBatch", false)

// OpRemoveBatch removes many datafiles in one request: the metadata
// server's reaper deleting what removed files left (code 12 is
// createBatch's).
var OpRemoveBatch = wire.NewOp[RemoveBatchRequest, RemoveBatchResponse](13, "removeBatch", true)

// OpUsageBatch asks for the usage of many datafiles in one request: a
// listing with sizes (ls -l, a mount's READDIRPLUS) would otherwise cost
// one size request per datafile. (Codes 12 and 13: the pools and the reaper.)
var OpUsageBatch = wire.NewOp[UsageBatchRequest, UsageBatchResponse](14, "usageBatch", true)

// Ops is the I/O server's op table.
var Ops = wire.OpTable{
	OpWrite.OpInfo, OpRead.OpInfo, OpTruncate.OpInfo, OpSize.OpInfo,
	OpSync.OpInfo, OpRemove.OpInfo, OpStatfs.OpInfo, OpCreate.OpInfo,
	OpList.OpInfo, OpClaim.OpInfo, OpWriteList.OpInfo, OpCreateBatch.OpInfo,
	OpRemoveBatch.OpInfo, OpUsageBatch.OpInfo,
}

// OpName names an op code for logs and errors.
func OpName(code uint8) string { return Ops.Name(code) }

// WriteRequest writes the frame's data section at Offset of datafile ID.
// Origin names the writer, as a Lustre extent lock names its client: a
// client's own value, or one per process writing through a mount (0: none
// named). Only an emulated disk with lock revocations uses it
// (extentlock.go); it costs nothing otherwise.
type WriteRequest struct {
	ID     uint64
	Offset int64
	Origin uint64
}

func (r WriteRequest) Encode(e *wire.Enc) {
	e.U64(r.ID)
	e.I64(r.Offset)
	e.U64(r.Origin)
}

func (r *WriteRequest) Decode(d *wire.Dec) error {
	r.ID, r.Offset, r.Origin = d.U64("id"), d.Offset("offset"), d.U64("origin")
	return d.Done()
}

// MaxWriteRanges bounds the ranges of one list write.
const MaxWriteRanges = 1 << 14

// Range is a byte range of a datafile.
type Range struct{ Offset, Length int64 }

// WriteListRequest writes the frame's data section to Ranges of datafile
// ID, in order: the data holds the ranges' bytes one after the other, and
// their lengths must add up to it. It is a client's noncontiguous view of
// one datafile in one request (the MPI_File_write of an hindexed view).
// Origin is WriteRequest's.
type WriteListRequest struct {
	ID     uint64
	Origin uint64
	Ranges []Range
}

func (r WriteListRequest) Encode(e *wire.Enc) {
	e.U64(r.ID)
	e.U64(r.Origin)
	e.Uvarint(uint64(len(r.Ranges)))
	for _, x := range r.Ranges {
		e.I64(x.Offset)
		e.I64(x.Length)
	}
}

func (r *WriteListRequest) Decode(d *wire.Dec) error {
	r.ID, r.Origin = d.U64("id"), d.U64("origin")
	n := d.Int("range count", MaxWriteRanges)
	r.Ranges = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Ranges = append(r.Ranges, Range{Offset: d.Offset("range offset"), Length: d.Offset("range length")})
	}
	return d.Done()
}

// WriteResponse is empty: a write either happened or failed.
type WriteResponse struct{}

func (WriteResponse) Encode(*wire.Enc)          {}
func (*WriteResponse) Decode(d *wire.Dec) error { return d.Done() }

// ReadRequest asks for up to Length bytes at Offset; they come back in the
// response's data section, short at the datafile's end.
type ReadRequest struct {
	ID     uint64
	Offset int64
	Length int64
}

func (r ReadRequest) Encode(e *wire.Enc) {
	e.U64(r.ID)
	e.I64(r.Offset)
	e.I64(r.Length)
}

func (r *ReadRequest) Decode(d *wire.Dec) error {
	r.ID, r.Offset, r.Length = d.U64("id"), d.Offset("offset"), d.Offset("length")
	if err := d.Done(); err != nil {
		return err
	}
	if r.Length > wire.MaxDataLen {
		return fmt.Errorf("field %q: read of %d bytes exceeds the %d-byte frame limit", "length", r.Length, wire.MaxDataLen)
	}
	return nil
}

// ReadResponse is empty: the bytes are the frame's data section.
type ReadResponse struct{}

func (ReadResponse) Encode(*wire.Enc)          {}
func (*ReadResponse) Decode(d *wire.Dec) error { return d.Done() }

// TruncateRequest cuts or extends datafile ID to Size bytes.
type TruncateRequest struct {
	ID   uint64
	Size int64
}

func (r TruncateRequest) Encode(e *wire.Enc) {
	e.U64(r.ID)
	e.I64(r.Size)
}

func (r *TruncateRequest) Decode(d *wire.Dec) error {
	r.ID, r.Size = d.U64("id"), d.Offset("size")
	return d.Done()
}

// TruncateResponse is empty.
type TruncateResponse struct{}

func (TruncateResponse) Encode(*wire.Enc)          {}
func (*TruncateResponse) Decode(d *wire.Dec) error { return d.Done() }

// SizeRequest asks for the physical size of datafile ID.
type SizeRequest struct{ ID uint64 }

func (r SizeRequest) Encode(e *wire.Enc) { e.U64(r.ID) }

func (r *SizeRequest) Decode(d *wire.Dec) error {
	r.ID = d.U64("id")
	return d.Done()
}

// SizeResponse is a datafile's size and the bytes allocated to it on
// disk (holes take none); both 0 for one never written.
type SizeResponse struct{ Size, Allocated int64 }

func (r SizeResponse) Encode(e *wire.Enc) { e.I64(r.Size); e.I64(r.Allocated) }

func (r *SizeResponse) Decode(d *wire.Dec) error {
	r.Size, r.Allocated = d.Offset("size"), d.Offset("allocated")
	return d.Done()
}

// MaxUsageBatch bounds the datafiles of one usage batch, so that a
// request and its answer stay small (24 bytes an entry) whatever the
// caller lists.
const MaxUsageBatch = 4096

// UsageBatchRequest asks for the usage of each datafile of IDs.
type UsageBatchRequest struct{ IDs []uint64 }

func (r UsageBatchRequest) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.IDs)))
	for _, id := range r.IDs {
		e.U64(id)
	}
}

func (r *UsageBatchRequest) Decode(d *wire.Dec) error {
	n := d.Int("id count", MaxUsageBatch)
	r.IDs = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.IDs = append(r.IDs, d.U64("id"))
	}
	return d.Done()
}

// DatafileUsage is one datafile's answer in a usage batch: what a size
// request would have answered, or the errno it would have failed with.
// A datafile never written is size 0 as for a size request, not an
// error; an errno fails that datafile alone, not the batch.
type DatafileUsage struct {
	Size, Allocated int64
	Errno           syscall.Errno
}

// UsageBatchResponse holds one DatafileUsage per requested ID, in order.
type UsageBatchResponse struct{ Usages []DatafileUsage }

func (r UsageBatchResponse) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Usages)))
	for _, u := range r.Usages {
		e.U32(uint32(u.Errno))
		e.I64(u.Size)
		e.I64(u.Allocated)
	}
}

func (r *UsageBatchResponse) Decode(d *wire.Dec) error {
	n := d.Int("usage count", MaxUsageBatch)
	r.Usages = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		errno := syscall.Errno(d.U32("errno"))
		r.Usages = append(r.Usages, DatafileUsage{Errno: errno, Size: d.Offset("size"), Allocated: d.Offset("allocated")})
	}
	return d.Done()
}

// SyncRequest makes datafile ID durable (fdatasync, and its directory
// for a new one).
type SyncRequest struct{ ID uint64 }

func (r SyncRequest) Encode(e *wire.Enc) { e.U64(r.ID) }

func (r *SyncRequest) Decode(d *wire.Dec) error {
	r.ID = d.U64("id")
	return d.Done()
}

// SyncResponse is empty.
type SyncResponse struct{}

func (SyncResponse) Encode(*wire.Enc)          {}
func (*SyncResponse) Decode(d *wire.Dec) error { return d.Done() }

// RemoveRequest deletes datafile ID for a client or metadata server of
// cluster incarnation Incarnation: a remove sent by one of another
// cluster (a stale client, a metadata server started on a database of
// another store) is refused, as creates are, and removes nothing.
type RemoveRequest struct {
	ID          uint64
	Incarnation uint64
}

func (r RemoveRequest) Encode(e *wire.Enc) {
	e.U64(r.ID)
	e.U64(r.Incarnation)
}

func (r *RemoveRequest) Decode(d *wire.Dec) error {
	r.ID, r.Incarnation = d.U64("id"), d.U64("incarnation")
	return d.Done()
}

// RemoveResponse is empty.
type RemoveResponse struct{}

func (RemoveResponse) Encode(*wire.Enc)          {}
func (*RemoveResponse) Decode(d *wire.Dec) error { return d.Done() }

// MaxRemoveBatch bounds the IDs of one removeBatch request.
const MaxRemoveBatch = 4096

// RemoveBatchRequest deletes datafiles IDs for the metadata server of
// cluster incarnation Incarnation (EREMCHG if the I/O server belongs to
// another: a metadata database restored elsewhere must not reap a
// stranger's datafiles). A missing datafile is not an error.
type RemoveBatchRequest struct {
	Incarnation uint64
	IDs         []uint64
}

func (r RemoveBatchRequest) Encode(e *wire.Enc) {
	e.U64(r.Incarnation)
	e.Uvarint(uint64(len(r.IDs)))
	for _, id := range r.IDs {
		e.U64(id)
	}
}

func (r *RemoveBatchRequest) Decode(d *wire.Dec) error {
	r.Incarnation = d.U64("incarnation")
	n := d.Int("id count", MaxRemoveBatch)
	r.IDs = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.IDs = append(r.IDs, d.U64("id"))
	}
	return d.Done()
}

// RemoveBatchResponse is empty: every datafile named is gone.
type RemoveBatchResponse struct{}

func (RemoveBatchResponse) Encode(*wire.Enc)          {}
func (*RemoveBatchResponse) Decode(d *wire.Dec) error { return d.Done() }

// StatfsRequest is empty: it asks for the server's capacity and usage.
type StatfsRequest struct{}

func (StatfsRequest) Encode(*wire.Enc)          {}
func (*StatfsRequest) Decode(d *wire.Dec) error { return d.Done() }

// StatfsResponse is the Statfs of the server's store.
type StatfsResponse struct{ Statfs }

func (r StatfsResponse) Encode(e *wire.Enc) {
	e.U64(r.Total)
	e.U64(r.Free)
	e.U64(r.Avail)
	e.U64(r.Used)
	e.U64(r.Datafiles)
	e.U64(r.FSID)
}

func (r *StatfsResponse) Decode(d *wire.Dec) error {
	r.Total, r.Free, r.Avail = d.U64("total"), d.U64("free"), d.U64("avail")
	r.Used, r.Datafiles, r.FSID = d.U64("used"), d.U64("datafiles"), d.U64("fsid")
	return d.Done()
}

// ListRequest asks for up to Max datafiles (the server caps it at
// MaxListPage) from position From on; positions are ListPos of an id, and
// a listing starts at 0 and goes on from the response's Next.
type ListRequest struct {
	From uint64
	Max  uint32
}

func (r ListRequest) Encode(e *wire.Enc) {
	e.U64(r.From)
	e.U32(r.Max)
}

func (r *ListRequest) Decode(d *wire.Dec) error {
	r.From, r.Max = d.U64("from"), d.U32("max")
	return d.Done()
}

// ListResponse is one page of datafiles; Done says it is the last, else
// the listing goes on from Next. Now is the server's clock when it
// answered, so that a caller can judge a datafile's age by the clock that
// stamped its Mtime.
type ListResponse struct {
	Datafiles []DatafileInfo
	Next      uint64
	Done      bool
	Now       int64
}

func (r ListResponse) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Datafiles)))
	for _, df := range r.Datafiles {
		e.U64(df.ID)
		e.I64(df.Size)
		e.I64(df.Mtime)
	}
	e.U64(r.Next)
	e.Bool(r.Done)
	e.I64(r.Now)
}

func (r *ListResponse) Decode(d *wire.Dec) error {
	n := d.Int("datafile count", MaxListPage)
	r.Datafiles = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Datafiles = append(r.Datafiles, DatafileInfo{ID: d.U64("datafile id"), Size: d.Offset("datafile size"), Mtime: d.I64("datafile mtime")})
	}
	r.Next, r.Done, r.Now = d.U64("next"), d.Bool("done"), d.I64("now")
	return d.Done()
}

// CreateRequest makes datafile ID, exclusively (EEXIST if it exists), for
// the metadata server of cluster incarnation Incarnation (EREMCHG if the
// I/O server belongs to another).
type CreateRequest struct {
	ID          uint64
	Incarnation uint64
}

func (r CreateRequest) Encode(e *wire.Enc) {
	e.U64(r.ID)
	e.U64(r.Incarnation)
}

func (r *CreateRequest) Decode(d *wire.Dec) error {
	r.ID, r.Incarnation = d.U64("id"), d.U64("incarnation")
	return d.Done()
}

// CreateResponse is empty.
type CreateResponse struct{}

func (CreateResponse) Encode(*wire.Enc)          {}
func (*CreateResponse) Decode(d *wire.Dec) error { return d.Done() }

// ClaimRequest is the metadata server's first word to an I/O server: the
// cluster incarnation it serves, and whether the I/O server may adopt
// datafiles of another one (see Store.Claim).
type ClaimRequest struct {
	Incarnation uint64
	Adopt       Adopt
	// Name is the server's name in the metadata server's cluster file
	// (data0): an I/O server of another name refuses the claim (ENXIO),
	// since the file's name and address disagree (Store.CheckName).
	Name string
}

func (r ClaimRequest) Encode(e *wire.Enc) {
	e.U64(r.Incarnation)
	e.U8(uint8(r.Adopt))
	e.String(r.Name)
}

func (r *ClaimRequest) Decode(d *wire.Dec) error {
	r.Incarnation, r.Adopt, r.Name = d.U64("incarnation"), Adopt(d.U8("adopt")), d.String("name")
	if err := d.Done(); err != nil {
		return err
	}
	if r.Adopt > AdoptAny {
		return fmt.Errorf("field %q: unknown value %d", "adopt", r.Adopt)
	}
	return nil
}

// ClaimResponse is the ClaimResult: the highest datafile ID held and how
// many datafiles there are.
type ClaimResponse struct{ ClaimResult }

func (r ClaimResponse) Encode(e *wire.Enc) {
	e.U64(r.MaxID)
	e.U64(r.Datafiles)
}

func (r *ClaimResponse) Decode(d *wire.Dec) error {
	r.MaxID, r.Datafiles = d.U64("max id"), d.U64("datafiles")
	return d.Done()
}
