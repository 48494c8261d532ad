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
}

// MetaServer is a running metadata server.
type MetaServer struct {
	Addr  string
	store *meta.Store
	srv   *wire.Server
	done  chan error
}

// StartMetaServer opens (or creates) the namespace and serves on ln.
func StartMetaServer(ctx context.Context, ln net.Listener, cfg MetaServerConfig) (*MetaServer, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("metadata server: %w", err)
	}
	st, err := meta.Open(filepath.Join(cfg.Dir, "meta.db"), meta.Options{
		Servers: len(cfg.Data), DefaultLayout: cfg.DefaultLayout, Stuffing: cfg.Stuffing,
	})
	if err != nil {
		return nil, fmt.Errorf("metadata server: %w", err)
	}
	infos := make([]meta.ServerInfo, len(cfg.Data))
	for i, d := range cfg.Data {
		infos[i] = meta.ServerInfo{Name: d.Name, Addr: d.Addr}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	srv := wire.NewServer(&meta.Handler{Store: st, Servers: infos}, wire.ServerOptions{
		Name: "meta", Secret: cfg.Secret, Logger: logger,
	})
	ms := &MetaServer{Addr: ln.Addr().String(), store: st, srv: srv, done: make(chan error, 1)}
	go func() { ms.done <- srv.Serve(ctx, ln) }()
	return ms, nil
}

// Close stops serving and closes the database.
func (s *MetaServer) Close() error {
	s.srv.Close()
	err := <-s.done
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

// EnsureSecret reads the secret file at path, creating it with a fresh
// random secret (WriteSecret) if it does not exist. An existing file that
// ReadSecret refuses is an error, never replaced: other hosts may hold the
// same secret.
func EnsureSecret(path string) ([]byte, error) {
	if s, err := ReadSecret(path); err == nil {
		return s, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return WriteSecret(path)
}

// WriteSecret creates a secret file at path: a fresh random 32-byte secret
// in hex, mode 0600 from the start (never readable by others, not even
// for a moment). It fails if path exists.
func WriteSecret(path string) ([]byte, error) {
	s := NewSecret()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write secret: %w", err)
	}
	_, err = f.Write([]byte(hex.EncodeToString(s) + "\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("write secret %s: %w", path, err)
	}
	return s, nil
}
