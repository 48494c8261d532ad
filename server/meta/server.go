package meta

import (
	"context"
	"fmt"
	"syscall"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
)

// Handler serves the metadata protocol over a Store: decode, call, encode.
type Handler struct {
	Store *Store
	// Servers is the cluster's I/O server list, in server-index order;
	// clients fetch it once and then talk to I/O servers directly.
	Servers []ServerInfo
}

var _ wire.Handler = (*Handler)(nil)

// ServeWire implements wire.Handler.
func (h *Handler) ServeWire(_ context.Context, req *wire.Request) (wire.Response, error) {
	d := wire.NewDec(req.Args)
	var e wire.Enc
	attrReply := func(a Attr, err error) (wire.Response, error) {
		if err != nil {
			return wire.Response{}, err
		}
		PutAttr(&e, &a)
		return wire.Response{Args: e.Bytes()}, nil
	}
	done := func() error {
		if err := d.Done(); err != nil {
			return fmt.Errorf("%s request: %w: %w", OpName(req.Op), err, syscall.EINVAL)
		}
		return nil
	}
	layout := func(field string) (dist.Layout, error) {
		s := d.String(field)
		if s == "" || d.Err() != nil {
			return dist.Layout{}, nil
		}
		l, err := dist.ParseLayout(s)
		if err != nil {
			return dist.Layout{}, fmt.Errorf("%w: %w", err, syscall.EINVAL)
		}
		return l, nil
	}

	switch req.Op {
	case OpServers:
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return wire.Response{Args: EncodeServers(h.Servers)}, nil

	case OpLookup:
		path := d.String("path")
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.Lookup(path))

	case OpCreate:
		path, mode := d.String("path"), d.U32("mode")
		l, err := layout("layout")
		if err != nil {
			return wire.Response{}, err
		}
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.Create(path, mode, l))

	case OpMkdir:
		path, mode := d.String("path"), d.U32("mode")
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.Mkdir(path, mode))

	case OpReaddir:
		path := d.String("path")
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		ents, err := h.Store.Readdir(path)
		if err != nil {
			return wire.Response{}, err
		}
		return wire.Response{Args: EncodeDirEntries(ents)}, nil

	case OpRename:
		oldpath, newpath := d.String("old path"), d.String("new path")
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		replaced, err := h.Store.Rename(oldpath, newpath)
		if err != nil {
			return wire.Response{}, err
		}
		e.Bool(replaced != nil)
		if replaced != nil {
			PutAttr(&e, replaced)
		}
		return wire.Response{Args: e.Bytes()}, nil

	case OpRemove:
		path := d.String("path")
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.Remove(path))

	case OpSetLayout:
		path := d.String("path")
		l, err := layout("layout")
		if err != nil {
			return wire.Response{}, err
		}
		empty := d.Bool("file is empty")
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.SetLayout(path, l, empty))

	case OpUnstuff:
		id := FileID(d.U64("id"))
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.Unstuff(id))

	case OpSetAttr:
		path := d.String("path")
		var set SetAttrRequest
		if d.Bool("has mode") {
			m := d.U32("mode")
			set.Mode = &m
		} else {
			d.U32("mode")
		}
		if d.Bool("has mtime") {
			t := d.I64("mtime")
			set.Mtime = &t
		} else {
			d.I64("mtime")
		}
		if d.Bool("has size") {
			s := d.Offset("size")
			set.Size = &s
		} else {
			d.I64("size")
		}
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.SetAttr(path, set))

	case OpGetByID:
		id := FileID(d.U64("id"))
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		return attrReply(h.Store.GetByID(id))

	case OpStats:
		if err := done(); err != nil {
			return wire.Response{}, err
		}
		files, dirs, err := h.Store.Stats()
		if err != nil {
			return wire.Response{}, err
		}
		e.I64(files)
		e.I64(dirs)
		return wire.Response{Args: e.Bytes()}, nil
	}
	return wire.Response{}, fmt.Errorf("unknown metadata operation %d: %w", req.Op, syscall.ENOSYS)
}
