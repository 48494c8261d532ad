package meta

import (
	"fmt"
	"syscall"

	"github.com/pario/pario/wire"
)

// OpDelegate asks for a directory's delegation (Store.Delegate). Asking
// again for one held is answered the same, so it is retried.
var OpDelegate = wire.NewOp[DelegateRequest, DelegateResponse](21, "delegate", true)

// OpBatch sends a delegation holder's unlinks, rmdirs and attribute
// changes (Store.ApplyBatch). It is retried: a second run finds each name
// gone (ENOENT) or naming another file (ESTALE), and removes nothing
// else, which the holder takes as done; an attribute change sets the same
// values again.
var OpBatch = wire.NewOp[BatchRequest, BatchResponse](22, "batch", true)

// OpReserve reserves IDs for the creates a mount answers in a directory
// it holds (Store.Reserve). It is not retried: a second run would reserve
// more, which only expiry gives back.
var OpReserve = wire.NewOp[ReserveRequest, ReserveResponse](23, "reserve", false)

// OpMkdirHeld makes a directory, delegates it to the asking mount and
// reserves IDs in it, in one commit (Store.MkdirHeld). Not retried, as a
// mkdir.
var OpMkdirHeld = wire.NewOp[MkdirHeldRequest, MkdirHeldResponse](24, "mkdirheld", false)

// DelegateRequest asks for the delegation of the directory at Path, which
// Expect.Self says the caller means, for the mount that Cred.Mount names.
type DelegateRequest struct {
	Path   string
	Expect Expect
	Cred   Cred
}

func (r DelegateRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *DelegateRequest) Decode(d *wire.Dec) error {
	r.Path = d.String("path")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// DelegateResponse is the directory's attributes and whether the caller
// holds its delegation now.
type DelegateResponse struct {
	Attr  Attr
	Given bool
}

func (r DelegateResponse) Encode(e *wire.Enc) {
	putAttr(e, &r.Attr)
	e.Bool(r.Given)
}

func (r *DelegateResponse) Decode(d *wire.Dec) error {
	r.Attr = getAttr(d, "attr")
	r.Given = d.Bool("given")
	return d.Done()
}

// BatchRequest is a batch of unlinks, rmdirs and attribute changes made
// on behalf of Cred.
type BatchRequest struct {
	Ops  []BatchOp
	Cred Cred
}

// A batch operation's kind on the wire, and which attributes a change
// sets.
const (
	batchUnlink  uint8 = 0
	batchRmdir   uint8 = 1
	batchSetAttr uint8 = 2
	batchCreate  uint8 = 3
	batchUnres   uint8 = 4

	batchMode  uint8 = 1 << 0
	batchAtime uint8 = 1 << 1
	batchMtime uint8 = 1 << 2
)

func (r BatchRequest) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Ops)))
	for _, op := range r.Ops {
		e.Uvarint(uint64(op.Dir))
		e.String(op.Name)
		e.Uvarint(uint64(op.Self))
		switch {
		case op.Create != nil:
			e.U8(batchCreate)
			e.U64(op.Owner)
			e.U32(op.Create.Mode)
			e.I64(op.Create.Time)
		case op.Unreserve:
			e.U8(batchUnres)
			e.U64(op.Owner)
		case op.SetAttr != nil:
			e.U8(batchSetAttr)
			putBatchAttrs(e, op.SetAttr)
		case op.Rmdir:
			e.U8(batchRmdir)
		default:
			e.U8(batchUnlink)
		}
	}
	putCred(e, r.Cred)
}

func putBatchAttrs(e *wire.Enc, a *BatchAttrs) {
	var set uint8
	if a.Mode != nil {
		set |= batchMode
	}
	if a.Atime != nil {
		set |= batchAtime
	}
	if a.Mtime != nil {
		set |= batchMtime
	}
	e.U8(set)
	if a.Mode != nil {
		e.U32(*a.Mode)
	}
	if a.Atime != nil {
		e.I64(*a.Atime)
	}
	if a.Mtime != nil {
		e.I64(*a.Mtime)
	}
	e.I64(a.Ctime)
}

func (r *BatchRequest) Decode(d *wire.Dec) error {
	n := d.Int("operation count", maxBatch)
	r.Ops = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		op := BatchOp{
			Dir:  FileID(d.Uvarint("directory")),
			Name: d.String("name"),
			Self: FileID(d.Uvarint("expected entry")),
		}
		switch kind := d.U8("kind"); kind {
		case batchUnlink:
		case batchRmdir:
			op.Rmdir = true
		case batchSetAttr:
			op.SetAttr = getBatchAttrs(d)
		case batchCreate:
			op.Owner = d.U64("owner")
			op.Create = &BatchCreate{Mode: d.U32("mode"), Time: d.I64("time")}
		case batchUnres:
			op.Owner = d.U64("owner")
			op.Unreserve = true
		default:
			d.Fail("kind", fmt.Errorf("unknown batch operation %d", kind))
		}
		r.Ops = append(r.Ops, op)
	}
	r.Cred = getCred(d)
	return d.Done()
}

func getBatchAttrs(d *wire.Dec) *BatchAttrs {
	a := &BatchAttrs{}
	set := d.U8("attributes set")
	if set&^(batchMode|batchAtime|batchMtime) != 0 {
		d.Fail("attributes set", fmt.Errorf("unknown attribute bits %#x", set))
		return a
	}
	if set&batchMode != 0 {
		a.Mode = new(d.U32("mode"))
	}
	if set&batchAtime != 0 {
		a.Atime = new(d.I64("atime"))
	}
	if set&batchMtime != 0 {
		a.Mtime = new(d.I64("mtime"))
	}
	a.Ctime = d.I64("ctime")
	return a
}

// BatchResponse is each operation's outcome, in order: nil or an
// error with the errno and message the server gave.
type BatchResponse struct {
	Errs []error
}

// BatchError is one operation's failure in a batch's answer.
type BatchError struct {
	Errno syscall.Errno
	Msg   string
}

func (e *BatchError) Error() string { return e.Msg }
func (e *BatchError) Unwrap() error { return e.Errno }

func (r BatchResponse) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Errs)))
	for _, err := range r.Errs {
		if err == nil {
			e.U32(0)
			continue
		}
		e.U32(uint32(wire.ErrnoOf(err)))
		e.String(err.Error())
	}
}

func (r *BatchResponse) Decode(d *wire.Dec) error {
	n := d.Int("outcome count", maxBatch)
	r.Errs = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		errno := syscall.Errno(d.U32("errno"))
		if errno == 0 {
			r.Errs = append(r.Errs, nil)
			continue
		}
		r.Errs = append(r.Errs, &BatchError{Errno: errno, Msg: d.String("message")})
	}
	return d.Done()
}

// ReserveRequest asks for Count IDs for new files in the directory at
// Path (Expect.Self says which), for the mount whose owner token is
// Owner, holding the directory's delegation as Cred.Mount.
type ReserveRequest struct {
	Path   string
	Owner  uint64
	Count  int
	Expect Expect
	Cred   Cred
}

func (r ReserveRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	e.U64(r.Owner)
	e.Uvarint(uint64(r.Count))
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *ReserveRequest) Decode(d *wire.Dec) error {
	r.Path = d.String("path")
	r.Owner = d.U64("owner")
	r.Count = d.Int("count", maxReserve)
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// MkdirHeldRequest makes the directory at Path with Mode for the mount
// Cred.Mount names, and reserves Count IDs in it for Owner.
type MkdirHeldRequest struct {
	Path   string
	Mode   uint32
	Owner  uint64
	Count  int
	Expect Expect
	Cred   Cred
}

func (r MkdirHeldRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	e.U32(r.Mode)
	e.U64(r.Owner)
	e.Uvarint(uint64(r.Count))
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *MkdirHeldRequest) Decode(d *wire.Dec) error {
	r.Path, r.Mode = d.String("path"), d.U32("mode")
	r.Owner = d.U64("owner")
	r.Count = d.Int("count", maxReserve)
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// MkdirHeldResponse is the new directory's attributes, whether the
// caller holds it, and the IDs reserved in it (none unless it does).
type MkdirHeldResponse struct {
	Attr  Attr
	Given bool
	IDs   ReservedIDs
}

func (r MkdirHeldResponse) Encode(e *wire.Enc) {
	putAttr(e, &r.Attr)
	e.Bool(r.Given)
	putReserved(e, &r.IDs)
}

func (r *MkdirHeldResponse) Decode(d *wire.Dec) error {
	r.Attr = getAttr(d, "attr")
	r.Given = d.Bool("given")
	r.IDs = getReserved(d)
	return d.Done()
}

// ReserveResponse is the reserved IDs: the new files' layout and each
// ID's servers.
type ReserveResponse struct {
	IDs ReservedIDs
}

func (r ReserveResponse) Encode(e *wire.Enc) { putReserved(e, &r.IDs) }

func (r *ReserveResponse) Decode(d *wire.Dec) error {
	r.IDs = getReserved(d)
	return d.Done()
}

// putReserved writes whether the files' template (Layout) is set, then
// it if so, then the count of IDs and each ID.
func putReserved(e *wire.Enc, r *ReservedIDs) {
	e.Bool(r.Layout.Kind != 0)
	if r.Layout.Kind != 0 {
		putAttr(e, &r.Layout)
	}
	e.Uvarint(uint64(len(r.Slots)))
	for _, sl := range r.Slots {
		e.U64(uint64(sl.ID))
		e.Uvarint(uint64(len(sl.Servers)))
		for _, srv := range sl.Servers {
			e.U32(srv)
		}
	}
}

func getReserved(d *wire.Dec) ReservedIDs {
	var r ReservedIDs
	if d.Bool("has layout") {
		r.Layout = getAttr(d, "layout")
	}
	n := d.Int("slot count", maxReserve)
	for i := 0; i < n && d.Err() == nil; i++ {
		sl := Slot{ID: FileID(d.U64("id"))}
		m := d.Int("server count", maxListLen)
		for j := 0; j < m && d.Err() == nil; j++ {
			sl.Servers = append(sl.Servers, d.U32("server"))
		}
		r.Slots = append(r.Slots, sl)
	}
	return r
}
