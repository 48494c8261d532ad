package meta

import (
	"context"
	"fmt"
	"syscall"

	"github.com/pario/pario/wire"
)

// Handler serves the metadata protocol over a Store: decode, call, encode.
type Handler struct {
	Store *Store
	// Servers is the cluster's I/O server list, in server-index order;
	// clients fetch it once and then talk to I/O servers directly.
	Servers []ServerInfo
	// RootSquash makes requests from root (uid 0) those of Nobody, as
	// NFS's root_squash does: a client host's root is not the file
	// system's.
	RootSquash bool
}

// as is ctx carrying the credentials of a request, root squashed if
// configured, and what it expects its path to resolve to.
func (h *Handler) as(ctx context.Context, c Cred, x Expect) context.Context {
	if h.RootSquash {
		c = c.Squash()
	}
	if x != (Expect{}) {
		ctx = WithExpect(ctx, x)
	}
	return WithCred(ctx, c)
}

var _ wire.Handler = (*Handler)(nil)

func attrResponse(a Attr, err error) (AttrResponse, error) { return AttrResponse{Attr: a}, err }

// ServeWire implements wire.Handler.
func (h *Handler) ServeWire(ctx context.Context, req *wire.Request) (wire.Response, error) {
	switch req.Op {
	case OpServers.Code:
		return wire.Serve(OpServers, req, func(ServersRequest) (ServersResponse, error) {
			return ServersResponse{Servers: h.Servers, Incarnation: h.Store.Incarnation()}, nil
		})
	case OpLookup.Code:
		return wire.Serve(OpLookup, req, func(r LookupRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Lookup(h.as(ctx, r.Cred, r.Expect), r.Path))
		})
	case OpCreate.Code:
		return wire.Serve(OpCreate, req, func(r CreateRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Create(h.as(ctx, r.Cred, r.Expect), r.Path, r.Mode, r.Layout))
		})
	case OpMkdir.Code:
		return wire.Serve(OpMkdir, req, func(r MkdirRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Mkdir(h.as(ctx, r.Cred, r.Expect), r.Path, r.Mode))
		})
	case OpReaddir.Code:
		return wire.Serve(OpReaddir, req, func(r ReaddirRequest) (ReaddirResponse, error) {
			ents, next, err := h.Store.ReaddirPage(h.as(ctx, r.Cred, r.Expect), r.Path, r.Cookie, int(r.Max))
			return ReaddirResponse{Entries: ents, Next: next}, err
		})
	case OpRename.Code:
		return wire.Serve(OpRename, req, func(r RenameRequest) (RenameResponse, error) {
			ctx := h.as(ctx, r.Cred, r.Expect)
			if r.KeepData {
				ctx = WithKeepData(ctx)
			}
			replaced, err := h.Store.Rename(ctx, r.OldPath, r.NewPath)
			return RenameResponse{Replaced: replaced}, err
		})
	case OpRemove.Code:
		return wire.Serve(OpRemove, req, func(r RemoveRequest) (AttrResponse, error) {
			ctx := h.as(ctx, r.Cred, r.Expect)
			if r.KeepData {
				ctx = WithKeepData(ctx)
			}
			return attrResponse(h.Store.Remove(ctx, r.Path))
		})
	case OpSetLayout.Code:
		return wire.Serve(OpSetLayout, req, func(r SetLayoutRequest) (AttrResponse, error) {
			return attrResponse(h.Store.SetLayout(h.as(ctx, r.Cred, r.Expect), r.Path, r.Layout, r.FileIsEmpty))
		})
	case OpUnstuff.Code:
		return wire.Serve(OpUnstuff, req, func(r UnstuffRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Unstuff(ctx, r.ID))
		})
	case OpSetAttr.Code:
		return wire.Serve(OpSetAttr, req, func(r SetAttrRequest) (AttrResponse, error) {
			return attrResponse(h.Store.SetAttr(h.as(ctx, r.Cred, r.Expect), r.Path, r.AttrChanges))
		})
	case OpGetByID.Code:
		return wire.Serve(OpGetByID, req, func(r GetByIDRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Access(h.as(ctx, r.Cred, Expect{}), r.ID, r.Want))
		})
	case OpSync.Code:
		return wire.Serve(OpSync, req, func(SyncRequest) (SyncResponse, error) {
			return SyncResponse{}, h.Store.Sync(ctx)
		})
	case OpStats.Code:
		return wire.Serve(OpStats, req, func(StatsRequest) (StatsResponse, error) {
			files, dirs, err := h.Store.Stats(ctx)
			return StatsResponse{Files: files, Dirs: dirs}, err
		})
	case OpScan.Code:
		return wire.Serve(OpScan, req, func(r ScanRequest) (ScanResponse, error) {
			p, err := h.Store.Scan(ctx, r.Cookie, int(r.Max))
			return ScanResponse{p}, err
		})
	case OpSymlink.Code:
		return wire.Serve(OpSymlink, req, func(r SymlinkRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Symlink(h.as(ctx, r.Cred, r.Expect), r.Target, r.Path))
		})
	case OpReadlink.Code:
		return wire.Serve(OpReadlink, req, func(r ReadlinkRequest) (ReadlinkResponse, error) {
			target, err := h.Store.Readlink(h.as(ctx, r.Cred, r.Expect), r.Path)
			return ReadlinkResponse{Target: target}, err
		})
	case OpLink.Code:
		return wire.Serve(OpLink, req, func(r LinkRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Link(h.as(ctx, r.Cred, r.Expect), r.ID, r.Path))
		})
	case OpMknod.Code:
		return wire.Serve(OpMknod, req, func(r MknodRequest) (AttrResponse, error) {
			return attrResponse(h.Store.Mknod(h.as(ctx, r.Cred, r.Expect), r.Path, r.Kind, r.Mode, r.Rdev))
		})
	case OpWatch.Code:
		return wire.Serve(OpWatch, req, func(r WatchRequest) (WatchResponse, error) {
			return h.Store.Watch(ctx, r)
		})
	case OpDelegate.Code:
		return wire.Serve(OpDelegate, req, func(r DelegateRequest) (DelegateResponse, error) {
			a, given, err := h.Store.Delegate(h.as(ctx, r.Cred, r.Expect), r.Path)
			return DelegateResponse{Attr: a, Given: given}, err
		})
	case OpMkdirHeld.Code:
		return wire.Serve(OpMkdirHeld, req, func(r MkdirHeldRequest) (MkdirHeldResponse, error) {
			a, given, ids, err := h.Store.MkdirHeld(h.as(ctx, r.Cred, r.Expect), r.Path, r.Mode, r.Owner, r.Count)
			return MkdirHeldResponse{Attr: a, Given: given, IDs: ids}, err
		})
	case OpReserve.Code:
		return wire.Serve(OpReserve, req, func(r ReserveRequest) (ReserveResponse, error) {
			ids, err := h.Store.Reserve(h.as(ctx, r.Cred, r.Expect), r.Path, r.Owner, r.Count)
			return ReserveResponse{IDs: ids}, err
		})
	case OpBatch.Code:
		return wire.Serve(OpBatch, req, func(r BatchRequest) (BatchResponse, error) {
			errs, err := h.Store.ApplyBatch(h.as(ctx, r.Cred, Expect{}), r.Ops)
			return BatchResponse{Errs: errs}, err
		})
	case OpUnlinkDangling.Code:
		return wire.Serve(OpUnlinkDangling, req, func(r UnlinkDanglingRequest) (UnlinkDanglingResponse, error) {
			return UnlinkDanglingResponse{}, h.Store.UnlinkDangling(ctx, r.Parent, r.Name, r.Child)
		})
	}
	return wire.Response{}, fmt.Errorf("unknown metadata operation %d: %w", req.Op, syscall.ENOSYS)
}
