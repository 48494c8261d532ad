package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// wireDatafiles is meta.Datafiles over the wire: the metadata server's
// connections to the I/O servers, for claims, creates and removes.
type wireDatafiles struct {
	eps   []*wire.Endpoint
	names []string // each server's name in the cluster file, for its claim
	adopt data.Adopt
}

var (
	_ meta.BatchDatafiles = (*wireDatafiles)(nil)
	_ meta.BatchRemover   = (*wireDatafiles)(nil)
)

func newWireDatafiles(servers []ServerEntry, secret []byte, prot wire.Protection, adopt data.Adopt) *wireDatafiles {
	w := &wireDatafiles{adopt: adopt}
	for _, s := range servers {
		w.names = append(w.names, s.Name)
		w.eps = append(w.eps, wire.NewEndpoint(fmt.Sprintf("I/O server %s (%s)", s.Name, s.Addr), s.Addr, secret, wire.EndpointOptions{Conns: 1, Protection: prot}))
	}
	return w
}

func (w *wireDatafiles) Claim(ctx context.Context, srv uint32, inc uint64) (uint64, error) {
	resp, _, err := wire.Call(ctx, w.eps[srv], data.OpClaim, data.ClaimRequest{Incarnation: inc, Adopt: w.adopt, Name: w.names[srv]}, nil, nil)
	return resp.MaxID, err
}

func (w *wireDatafiles) Create(ctx context.Context, srv uint32, id meta.FileID, inc uint64) error {
	_, _, err := wire.Call(ctx, w.eps[srv], data.OpCreate, data.CreateRequest{ID: uint64(id), Incarnation: inc}, nil, nil)
	return err
}

func (w *wireDatafiles) Remove(ctx context.Context, srv uint32, id meta.FileID, inc uint64) error {
	_, _, err := wire.Call(ctx, w.eps[srv], data.OpRemove, data.RemoveRequest{ID: uint64(id), Incarnation: inc}, nil, nil)
	return err
}

func (w *wireDatafiles) CreateBatch(ctx context.Context, srv uint32, ids []meta.FileID, inc uint64) ([]meta.FileID, error) {
	return w.batch(ctx, srv, ids, inc, false)
}

func (w *wireDatafiles) RemoveIfEmpty(ctx context.Context, srv uint32, ids []meta.FileID, inc uint64) ([]meta.FileID, error) {
	return w.batch(ctx, srv, ids, inc, true)
}

func (w *wireDatafiles) batch(ctx context.Context, srv uint32, ids []meta.FileID, inc uint64, removeIfEmpty bool) ([]meta.FileID, error) {
	req := data.CreateBatchRequest{Incarnation: inc, RemoveIfEmpty: removeIfEmpty, IDs: make([]uint64, len(ids))}
	for i, id := range ids {
		req.IDs[i] = uint64(id)
	}
	resp, _, err := wire.Call(ctx, w.eps[srv], data.OpCreateBatch, req, nil, nil)
	if err != nil {
		return nil, err
	}
	kept := make([]meta.FileID, len(resp.Kept))
	for i, id := range resp.Kept {
		kept[i] = meta.FileID(id)
	}
	return kept, nil
}

// RemoveBatch is meta.BatchRemover: the reaper's removals, many per
// request.
func (w *wireDatafiles) RemoveBatch(ctx context.Context, srv uint32, ids []meta.FileID, inc uint64) error {
	req := data.RemoveBatchRequest{Incarnation: inc, IDs: make([]uint64, len(ids))}
	for i, id := range ids {
		req.IDs[i] = uint64(id)
	}
	_, _, err := wire.Call(ctx, w.eps[srv], data.OpRemoveBatch, req, nil, nil)
	return err
}

func (w *wireDatafiles) Close() {
	for _, ep := range w.eps {
		ep.Close()
	}
}

// adoptMode is what the metadata server lets its I/O servers adopt: with
// --adopt-data any incarnation's datafiles (only for a namespace without
// files: their IDs then cannot name a file of ours), else, for a namespace
// with files, datafiles of no recorded incarnation (the data directories
// of a cluster from before incarnations, which its meta.db describes).
func adoptMode(st *meta.Store, adoptData bool) (data.Adopt, error) {
	files, _, err := st.Stats(context.Background())
	if err != nil {
		return 0, err
	}
	switch {
	case adoptData && files > 0:
		return 0, fmt.Errorf("--adopt-data is for a metadata database without files, and this one holds %d: the I/O servers' datafiles could be taken for its files'", files)
	case adoptData:
		return data.AdoptAny, nil
	case files > 0:
		return data.AdoptUnrecorded, nil
	}
	return data.AdoptNone, nil
}

// startClaimTimeout bounds how long the metadata server's start waits for
// its I/O servers' claims: a hung server must not keep the namespace
// from being served.
var startClaimTimeout = 5 * time.Second

// claimAll claims every I/O server at the metadata server's start. An I/O
// server that belongs to another incarnation makes the start fail with
// what to do; one that cannot be reached (or does not answer within
// startClaimTimeout) is only logged, and is claimed before the first file
// is created on it.
func claimAll(ctx context.Context, st *meta.Store, dbPath string, servers []ServerEntry, logger *slog.Logger) error {
	cctx, cancel := context.WithTimeout(ctx, startClaimTimeout)
	defer cancel()
	var refused, misnamed []string
	for i, err := range st.ClaimAll(cctx) {
		switch {
		case err == nil:
		case ctx.Err() != nil:
			// Stopped while starting (a signal): the claims failed for
			// that, and the caller says so once.
			return fmt.Errorf("metadata server: interrupted while claiming its I/O servers: %w", ctx.Err())
		case errors.Is(err, syscall.ENXIO):
			misnamed = append(misnamed, err.Error())
		case errors.Is(err, syscall.EREMCHG):
			refused = append(refused, err.Error())
		default:
			logger.Warn("I/O server not claimed at start; it will be before its first create",
				"server", servers[i].Name, "addr", servers[i].Addr, "err", err)
		}
	}
	if len(misnamed) > 0 {
		return fmt.Errorf(`metadata server: refusing to start: the cluster file's names and addresses disagree with the I/O servers':
  %s
Every I/O server holds a file's datafile under the file's ID, so serving them would read one server's strips as another's. Give each name in the cluster file (or --data) its own server's address`,
			strings.Join(misnamed, "\n  "))
	}
	if len(refused) == 0 {
		return nil
	}
	files, _, _ := st.Stats(ctx)
	what := fmt.Sprintf("holds %d files", files)
	if st.Created() {
		what = "was just created, empty"
	}
	return fmt.Errorf(`metadata server: refusing to start: the metadata database %s (cluster incarnation %016x) %s, and its I/O servers hold datafiles of another cluster incarnation:
  %s
Serving them could give new files the IDs, and so the bytes, of files this database does not know. To recover, one of:
  - start the metadata server on the database these I/O servers were used with (restore %s from a backup, then run pario fsck);
  - start the I/O servers on empty directories (their data is lost);
  - start a new, empty file system on these I/O servers, keeping their old datafiles as orphans for 'pario fsck --repair' to delete: start this metadata server once with --adopt-data (only for a database without files)`,
		dbPath, st.Incarnation(), what, strings.Join(refused, "\n  "), filepath.Base(dbPath))
}
