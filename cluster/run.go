// Package cluster starts pario's servers: one metadata server and N I/O
// servers, either all inside this process on loopback (the embedded default
// behind `pario up`, `pario bench` and the tests' in-process runs) or as
// separate processes or hosts described by a cluster file. The servers
// themselves live in server/meta and server/data; this package wires them
// to listeners, secrets and directories.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// DataServerConfig is what one I/O server needs.
type DataServerConfig struct {
	Name   string       // e.g. "data0"
	Dir    string       // its data directory
	Secret []byte       // shared secret
	Logger *slog.Logger // default slog.Default()
	// MemoryBudget bounds request data held in memory (default 64 MiB).
	MemoryBudget int64
}

// DataServer is a running I/O server.
type DataServer struct {
	Name  string
	Addr  string
	store *data.Store
	srv   *wire.Server
	done  chan error
}

// StartDataServer opens the data directory and serves on ln until ctx is
// done or Close is called.
func StartDataServer(ctx context.Context, ln net.Listener, cfg DataServerConfig) (*DataServer, error) {
	st, err := data.Open(cfg.Dir, data.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("I/O server %s: %w", cfg.Name, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	srv := wire.NewServer(&data.Handler{Store: st}, wire.ServerOptions{
		Name: cfg.Name, Secret: cfg.Secret, Logger: logger, MemoryBudget: cfg.MemoryBudget,
	})
	ds := &DataServer{Name: cfg.Name, Addr: ln.Addr().String(), store: st, srv: srv, done: make(chan error, 1)}
	go func() { ds.done <- srv.Serve(ctx, ln) }()
	return ds, nil
}

// Close stops serving, syncs and closes the data directory.
func (s *DataServer) Close() error {
	s.srv.Close()
	err := <-s.done
	return errors.Join(err, s.store.SyncAll(context.Background()), s.store.Close())
}

// Wait blocks until the server stops and returns why.
func (s *DataServer) Wait() error {
	err := <-s.done
	s.done <- err
	return err
}

// MetaServerConfig is what the metadata server needs.
type MetaServerConfig struct {
	Dir           string        // holds meta.db
	Secret        []byte        // shared secret
	Data          []ServerEntry // the cluster's I/O servers in index order (Name, Addr)
	Stuffing      bool
	DefaultLayout dist.Layout
	Logger        *slog.Logger
	// AdoptData lets I/O servers that hold datafiles of another cluster
	// incarnation join this one (only for a database without files); their
	// old datafiles become orphans for pario fsck. See docs/store.md.
	AdoptData bool
}

// MetaServer is a running metadata server.
type MetaServer struct {
	Addr  string
	store *meta.Store
	df    *wireDatafiles
	srv   *wire.Server
	done  chan error
}

// StartMetaServer opens (or creates) the namespace, claims the I/O servers
// for its cluster incarnation and serves on ln. It fails, saying how to
// recover, if an I/O server holds datafiles of another incarnation.
func StartMetaServer(ctx context.Context, ln net.Listener, cfg MetaServerConfig) (_ *MetaServer, err error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("metadata server: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	df := newWireDatafiles(cfg.Data, cfg.Secret, data.AdoptNone)
	dbPath := filepath.Join(cfg.Dir, "meta.db")
	st, err := meta.Open(dbPath, meta.Options{
		Servers: len(cfg.Data), DefaultLayout: cfg.DefaultLayout, Stuffing: cfg.Stuffing, Datafiles: df,
	})
	if err != nil {
		df.Close()
		return nil, fmt.Errorf("metadata server: %w", err)
	}
	defer func() {
		if err != nil {
			st.Close()
			df.Close()
		}
	}()
	if df.adopt, err = adoptMode(st, cfg.AdoptData); err != nil {
		return nil, fmt.Errorf("metadata server: %w", err)
	}
	if err := claimAll(ctx, st, dbPath, cfg.Data, logger); err != nil {
		return nil, err
	}
	infos := make([]meta.ServerInfo, len(cfg.Data))
	for i, d := range cfg.Data {
		infos[i] = meta.ServerInfo{Name: d.Name, Addr: d.Addr}
	}
	srv := wire.NewServer(&meta.Handler{Store: st, Servers: infos}, wire.ServerOptions{
		Name: "meta", Secret: cfg.Secret, Logger: logger,
	})
	ms := &MetaServer{Addr: ln.Addr().String(), store: st, df: df, srv: srv, done: make(chan error, 1)}
	go func() { ms.done <- srv.Serve(ctx, ln) }()
	return ms, nil
}

// Close stops serving and closes the database.
func (s *MetaServer) Close() error {
	s.srv.Close()
	err := <-s.done
	s.df.Close()
	return errors.Join(err, s.store.Close())
}

// Wait blocks until the server stops and returns why.
func (s *MetaServer) Wait() error {
	err := <-s.done
	s.done <- err
	return err
}

// NewSecret makes a random 32-byte secret.
func NewSecret() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return b
}

// EnsureSecret reads the secret file at path, creating it (mode 0600, hex)
// with a fresh random secret if it does not exist.
func EnsureSecret(path string) ([]byte, error) {
	if s, err := ReadSecret(path); err == nil {
		return s, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	s := NewSecret()
	if err := os.WriteFile(path, []byte(hex.EncodeToString(s)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write secret: %w", err)
	}
	return s, nil
}
