package data

import (
	"context"
	"fmt"
	"io"
	"syscall"

	"github.com/pario/pario/wire"
)

// Handler serves the I/O server protocol over a Store. It is thin on
// purpose: decode, call the store, encode.
type Handler struct {
	Store *Store
}

var _ wire.Handler = (*Handler)(nil)

// ServeWire implements wire.Handler.
func (h *Handler) ServeWire(ctx context.Context, req *wire.Request) (wire.Response, error) {
	d := wire.NewDec(req.Args)
	bad := func(err error) (wire.Response, error) {
		return wire.Response{}, fmt.Errorf("%s request: %w: %w", OpName(req.Op), err, syscall.EINVAL)
	}
	switch req.Op {
	case OpWrite:
		id, off := d.U64("id"), d.Offset("offset")
		if err := d.Done(); err != nil {
			return bad(err)
		}
		return wire.Response{}, h.Store.WriteAt(ctx, id, req.Data, off)

	case OpRead:
		id, off, n := d.U64("id"), d.Offset("offset"), d.Offset("length")
		if err := d.Done(); err != nil {
			return bad(err)
		}
		if n > wire.MaxDataLen {
			return bad(fmt.Errorf("read of %d bytes exceeds the %d-byte frame limit", n, wire.MaxDataLen))
		}
		buf := wire.GetBuffer(int(n))
		got, err := h.Store.ReadAt(ctx, id, buf, off)
		if err != nil && err != io.EOF {
			wire.PutBuffer(buf)
			return wire.Response{}, err
		}
		return wire.Response{Data: [][]byte{buf[:got]}, Release: func() { wire.PutBuffer(buf) }}, nil

	case OpTruncate:
		id, size := d.U64("id"), d.Offset("size")
		if err := d.Done(); err != nil {
			return bad(err)
		}
		return wire.Response{}, h.Store.Truncate(ctx, id, size)

	case OpSize:
		id := d.U64("id")
		if err := d.Done(); err != nil {
			return bad(err)
		}
		size, err := h.Store.Size(ctx, id)
		if err != nil {
			return wire.Response{}, err
		}
		var e wire.Enc
		e.I64(size)
		return wire.Response{Args: e.Bytes()}, nil

	case OpSync:
		id := d.U64("id")
		if err := d.Done(); err != nil {
			return bad(err)
		}
		return wire.Response{}, h.Store.Sync(ctx, id)

	case OpRemove:
		id := d.U64("id")
		if err := d.Done(); err != nil {
			return bad(err)
		}
		return wire.Response{}, h.Store.Remove(ctx, id)

	case OpStatfs:
		if err := d.Done(); err != nil {
			return bad(err)
		}
		st, err := h.Store.Statfs(ctx)
		if err != nil {
			return wire.Response{}, err
		}
		var e wire.Enc
		e.U64(st.Total)
		e.U64(st.Free)
		e.U64(st.Avail)
		e.U64(st.Used)
		e.U64(st.Datafiles)
		return wire.Response{Args: e.Bytes()}, nil
	}
	return wire.Response{}, fmt.Errorf("unknown I/O server operation %d: %w", req.Op, syscall.ENOSYS)
}
