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
