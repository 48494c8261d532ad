package data

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/pario/pario/wire"
)

// Handler serves the I/O server protocol over a Store. It is thin on
// purpose: decode, call the store, encode.
type Handler struct {
	Store *Store
}

var _ wire.Handler = (*Handler)(nil)

// ServeWire implements wire.Handler. Write and read decode their request in
// place rather than through wire.Serve: they are the hot path, and a
// request decoded through a type parameter is allocated on the heap.
func (h *Handler) ServeWire(ctx context.Context, req *wire.Request) (wire.Response, error) {
	switch req.Op {
	case OpClaim.Code:
		return wire.Serve(OpClaim, req, func(r ClaimRequest) (ClaimResponse, error) {
			if err := h.Store.CheckName(r.Name); err != nil {
				return ClaimResponse{}, err
			}
			res, err := h.Store.Claim(ctx, r.Incarnation, r.Adopt)
			return ClaimResponse{res}, err
		})
	case OpStatfs.Code:
		return wire.Serve(OpStatfs, req, func(StatfsRequest) (StatfsResponse, error) {
			st, err := h.Store.Statfs(ctx)
			return StatfsResponse{st}, err
		})
	}
	// Datafiles of an unknown incarnation are nobody's to touch until a
	// metadata server claims them.
	if err := h.Store.Refusing(); err != nil {
		return wire.Response{}, err
	}
	switch req.Op {
	case OpCreate.Code:
		return wire.Serve(OpCreate, req, func(r CreateRequest) (CreateResponse, error) {
			if err := h.Store.CheckIncarnation(r.Incarnation); err != nil {
				return CreateResponse{}, err
			}
			return CreateResponse{}, h.Store.Create(ctx, r.ID)
		})
	case OpCreateBatch.Code:
		return wire.Serve(OpCreateBatch, req, func(r CreateBatchRequest) (CreateBatchResponse, error) {
			if err := h.Store.CheckIncarnation(r.Incarnation); err != nil {
				return CreateBatchResponse{}, err
			}
			var resp CreateBatchResponse
			var err error
			if r.RemoveIfEmpty {
				resp.Kept, err = h.Store.RemoveIfEmpty(ctx, r.IDs)
			} else {
				resp.Kept, err = h.Store.CreateBatch(ctx, r.IDs)
			}
			return resp, err
		})

	case OpWrite.Code:
		var r WriteRequest
		if err := r.Decode(wire.NewDec(req.Args)); err != nil {
			return wire.Response{}, OpWrite.BadRequest(err)
		}
		return wire.Response{}, h.Store.WriteAt(withOrigin(ctx, r.Origin), r.ID, req.Data, r.Offset)

	case OpWriteList.Code:
		var r WriteListRequest
		if err := r.Decode(wire.NewDec(req.Args)); err != nil {
			return wire.Response{}, OpWriteList.BadRequest(err)
		}
		return wire.Response{}, h.writeList(withOrigin(ctx, r.Origin), r, req.Data)

	case OpRead.Code:
		var r ReadRequest
		if err := r.Decode(wire.NewDec(req.Args)); err != nil {
			return wire.Response{}, OpRead.BadRequest(err)
		}
		buf := wire.GetBuffer(int(r.Length))
		got, err := h.Store.ReadAt(ctx, r.ID, buf, r.Offset)
		if err != nil && err != io.EOF {
			wire.PutBuffer(buf)
			return wire.Response{}, err
		}
		return wire.Response{Data: [][]byte{buf[:got]}, Release: func() { wire.PutBuffer(buf) }}, nil

	case OpTruncate.Code:
		return wire.Serve(OpTruncate, req, func(r TruncateRequest) (TruncateResponse, error) {
			return TruncateResponse{}, h.Store.Truncate(ctx, r.ID, r.Size)
		})

	case OpSize.Code:
		return wire.Serve(OpSize, req, func(r SizeRequest) (SizeResponse, error) {
			size, allocated, err := h.Store.Usage(ctx, r.ID)
			return SizeResponse{Size: size, Allocated: allocated}, err
		})

	case OpUsageBatch.Code:
		return wire.Serve(OpUsageBatch, req, func(r UsageBatchRequest) (UsageBatchResponse, error) {
			return h.usageBatch(ctx, r)
		})

	case OpSync.Code:
		return wire.Serve(OpSync, req, func(r SyncRequest) (SyncResponse, error) {
			return SyncResponse{}, h.Store.Sync(ctx, r.ID)
		})

	case OpRemove.Code:
		return wire.Serve(OpRemove, req, func(r RemoveRequest) (RemoveResponse, error) {
			if err := h.Store.CheckIncarnation(r.Incarnation); err != nil {
				return RemoveResponse{}, err
			}
			return RemoveResponse{}, h.Store.Remove(ctx, r.ID)
		})

	case OpRemoveBatch.Code:
		return wire.Serve(OpRemoveBatch, req, func(r RemoveBatchRequest) (RemoveBatchResponse, error) {
			if err := h.Store.CheckIncarnation(r.Incarnation); err != nil {
				return RemoveBatchResponse{}, err
			}
			return RemoveBatchResponse{}, h.Store.RemoveBatch(ctx, r.IDs)
		})

	case OpList.Code:
		return wire.Serve(OpList, req, func(r ListRequest) (ListResponse, error) {
			ents, next, done, err := h.Store.List(ctx, r.From, int(r.Max))
			return ListResponse{Datafiles: ents, Next: next, Done: done, Now: time.Now().UnixNano()}, err
		})
	}
	return wire.Response{}, fmt.Errorf("unknown I/O server operation %d: %w", req.Op, syscall.ENOSYS)
}

// writeList writes data to r's ranges of one datafile, in order. The
// ranges must account for data exactly; nothing is written otherwise.
func (h *Handler) writeList(ctx context.Context, r WriteListRequest, data []byte) error {
	var n int64
	for _, x := range r.Ranges {
		n += x.Length
		if n > int64(len(data)) {
			break
		}
	}
	if n != int64(len(data)) {
		return OpWriteList.BadRequest(fmt.Errorf("ranges of %d bytes or more for %d bytes of data", n, len(data)))
	}
	for _, x := range r.Ranges {
		if err := h.Store.WriteAt(ctx, r.ID, data[:x.Length], x.Offset); err != nil {
			return err
		}
		data = data[x.Length:]
	}
	return nil
}

// usageBatch answers each datafile as a size request would. A failed
// datafile is that entry's errno; only a cancelled context fails the
// whole batch, since the caller is gone.
func (h *Handler) usageBatch(ctx context.Context, r UsageBatchRequest) (UsageBatchResponse, error) {
	out := UsageBatchResponse{Usages: make([]DatafileUsage, len(r.IDs))}
	for i, id := range r.IDs {
		if err := ctx.Err(); err != nil {
			return UsageBatchResponse{}, fmt.Errorf("usage batch at datafile %d of %d: %w", i, len(r.IDs), err)
		}
		size, alloc, err := h.Store.Usage(ctx, id)
		if err != nil {
			out.Usages[i] = DatafileUsage{Errno: wire.ErrnoOf(err)}
			continue
		}
		out.Usages[i] = DatafileUsage{Size: size, Allocated: alloc}
	}
	return out, nil
}
