package client

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// oldServer is an I/O server from before usageBatch: it answers ENOSYS to
// it, as to any op it does not know, and counts what it was asked.
type oldServer struct {
	data.Handler
	batches, sizes atomic.Int64
}

func (h *oldServer) ServeWire(ctx context.Context, req *wire.Request) (wire.Response, error) {
	switch req.Op {
	case data.OpUsageBatch.Code:
		h.batches.Add(1)
		return wire.Response{}, syscall.ENOSYS
	case data.OpSize.Code:
		h.sizes.Add(1)
	}
	return h.Handler.ServeWire(ctx, req)
}

// Against an I/O server that answers ENOSYS to usageBatch (an older one),
// UsagesOf asks one size per datafile instead, and answers what the batch
// would: each file's size, and ESTALE for a file whose datafile is missing
// and which the metadata server no longer has (removed), as UsageOf says. The batch is asked once per call, not once
// per batch.
func TestUsagesOfOlderServer(t *testing.T) {
	ctx := context.Background()
	st, err := data.Open(t.TempDir(), data.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const inc = 0xa1
	if _, err := st.Claim(ctx, inc, data.AdoptNone); err != nil {
		t.Fatal(err)
	}
	sizes := map[uint64]int64{10: 0, 11: 5, 12: 70_000, 13: 1}
	for id, n := range sizes {
		if err := st.Create(ctx, id); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			if err := st.WriteAt(ctx, id, make([]byte, n), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := &oldServer{Handler: data.Handler{Store: st}}
	secret := []byte("0123456789abcdef0123456789abcdef")
	srv := wire.NewServer(h, wire.ServerOptions{Name: "old", Secret: secret})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() { stop(); srv.Close(); <-served })
	ep := wire.NewEndpoint("I/O server old ("+ln.Addr().String()+")", ln.Addr().String(), secret, wire.EndpointOptions{})
	t.Cleanup(func() { ep.Close() })
	c := &Client{servers: []*wire.Endpoint{ep}, meta: serveNoFiles(t, secret)}
	defer SetUsageBatchMax(2)()

	layout := dist.Layout{Dist: "simple_stripe"}
	var attrs []meta.Attr
	for _, id := range []uint64{10, 11, 99, 12, 13} { // 99 is missing
		attrs = append(attrs, meta.Attr{ID: meta.FileID(id), Kind: meta.KindFile, Layout: layout, Servers: []uint32{0}})
	}
	attrs = append(attrs, meta.Attr{ID: 5, Kind: meta.KindDir})
	got, errs := c.UsagesOf(ctx, attrs)
	for i, a := range attrs {
		if a.ID == 99 {
			if !errors.Is(errs[i], syscall.ESTALE) {
				t.Errorf("file 99, its datafile missing: %v; want ESTALE", errs[i])
			}
			continue
		}
		if want := sizes[uint64(a.ID)]; errs[i] != nil || got[i].Size != want {
			t.Errorf("file %d: size %d, %v; want %d", a.ID, got[i].Size, errs[i], want)
		}
	}
	if n := h.sizes.Load(); n != 5 {
		t.Errorf("%d size requests, want 5 (one per datafile)", n)
	}
	if n := h.batches.Load(); n != 1 {
		t.Errorf("%d usageBatch requests, want 1 (an older server is known after the first)", n)
	}
}

// noFiles is a metadata server that has no file: every request is ENOENT.
type noFiles struct{}

func (noFiles) ServeWire(context.Context, *wire.Request) (wire.Response, error) {
	return wire.Response{}, fs.ErrNotExist
}

// serveNoFiles starts a noFiles server and returns its endpoint.
func serveNoFiles(t *testing.T, secret []byte) *wire.Endpoint {
	t.Helper()
	srv := wire.NewServer(noFiles{}, wire.ServerOptions{Name: "meta", Secret: secret})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	ep := wire.NewEndpoint("metadata server", ln.Addr().String(), secret, wire.EndpointOptions{})
	t.Cleanup(func() { ep.Close(); stop(); srv.Close(); <-served })
	return ep
}
