package meta

import (
	"syscall"

	"github.com/pario/pario/wire"
)

// OpDelegate asks for a directory's delegation (Store.Delegate). Asking
// again for one held is answered the same, so it is retried.
var OpDelegate = wire.NewOp[DelegateRequest, DelegateResponse](21, "delegate", true)

// OpRemoveBatch sends a delegation holder's unlinks (Store.ApplyRemoves).
// It is retried: a second run finds each name gone (ENOENT) or naming
// another file (ESTALE), and removes nothing else, which the holder takes
// as done.
var OpRemoveBatch = wire.NewOp[RemoveBatchRequest, RemoveBatchResponse](22, "removebatch", true)

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

// RemoveBatchRequest is a batch of unlinks made on behalf of Cred.
type RemoveBatchRequest struct {
	Ops  []BatchRemove
	Cred Cred
}

func (r RemoveBatchRequest) Encode(e *wire.Enc) {
	e.Uvarint(uint64(len(r.Ops)))
	for _, op := range r.Ops {
		e.Uvarint(uint64(op.Dir))
		e.String(op.Name)
		e.Uvarint(uint64(op.Self))
		e.Bool(op.Rmdir)
	}
	putCred(e, r.Cred)
}

func (r *RemoveBatchRequest) Decode(d *wire.Dec) error {
	n := d.Int("operation count", maxBatch)
	r.Ops = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Ops = append(r.Ops, BatchRemove{
			Dir:   FileID(d.Uvarint("directory")),
			Name:  d.String("name"),
			Self:  FileID(d.Uvarint("expected entry")),
			Rmdir: d.Bool("rmdir"),
		})
	}
	r.Cred = getCred(d)
	return d.Done()
}

// RemoveBatchResponse is each unlink's outcome, in order: nil or an
// error with the errno and message the server gave.
type RemoveBatchResponse struct {
	Errs []error
}

// BatchError is one operation's failure in a batch's answer.
type BatchError struct {
	Errno syscall.Errno
	Msg   string
}

func (e *BatchError) Error() string { return e.Msg }
func (e *BatchError) Unwrap() error { return e.Errno }

func (r RemoveBatchResponse) Encode(e *wire.Enc) {
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

func (r *RemoveBatchResponse) Decode(d *wire.Dec) error {
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
