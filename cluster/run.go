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
	// MemoryBudget bounds request data and read answers held in memory
	// (default wire.DefaultMemoryBudget, 256 MiB).
	MemoryBudget int64
	// Limits caps connections (zero fields: the wire package's defaults).
	Limits Limits
	// Protection is the wire protection clients must use (default aead).
	Protection wire.Protection
}

// Limits are the connection caps of one server; see wire.ServerOptions.
type Limits struct {
	MaxConns        int // connections at once (default: from the descriptor limit)
	MaxConnsPerPeer int // connections from one host (default 1024)
}

// DataServer is a running I/O server.
type DataServer struct {
	Name  string
	Addr  string
	store *data.Store
	srv   *wire.Server
	serving
}

// serving tracks a server's accept loop: stopped closes when Serve
// returns, err says why.
type serving struct {
	what    string // "I/O server data0 (127.0.0.1:7001)", for errors
	stopped chan struct{}
	err     error
}

func (s *serving) run(serve func() error) {
	s.stopped = make(chan struct{})
	go func() {
		s.err = serve()
		close(s.stopped)
	}()
}

// String names the server and its address.
func (s *serving) String() string { return s.what }

// Stopped is closed when the server stops accepting connections.
func (s *serving) Stopped() <-chan struct{} { return s.stopped }

// Wait blocks until the server stops accepting connections and returns
// why: nil after Close or the end of its context.
func (s *serving) Wait() error {
	<-s.stopped
	return s.err
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
		Name: cfg.Name, Secret: cfg.Secret, Logger: logger, MemoryBudget: cfg.MemoryBudget, Protection: cfg.Protection,
		MaxConns: cfg.Limits.MaxConns, MaxConnsPerPeer: cfg.Limits.MaxConnsPerPeer,
	})
	ds := &DataServer{Name: cfg.Name, Addr: ln.Addr().String(), store: st, srv: srv}
	ds.what = fmt.Sprintf("I/O server %s (%s)", cfg.Name, ds.Addr)
	ds.run(func() error { return srv.Serve(ctx, ln) })
	return ds, nil
}

// Close stops serving, syncs and closes the data directory.
func (s *DataServer) Close() error {
	s.srv.Close()
	return errors.Join(s.Wait(), s.store.SyncAll(context.Background()), s.store.Close())
}

// MetaServerConfig is what the metadata server needs.
type MetaServerConfig struct {
	Dir           string        // holds meta.db
	Secret        []byte        // shared secret
	Data          []ServerEntry // the cluster's I/O servers in index order (Name, Addr)
	Stuffing      bool
	DefaultLayout dist.Layout
	Logger        *slog.Logger
	Limits        Limits
	Protection    wire.Protection // the wire protection clients must use
}

// MetaServer is a running metadata server.
type MetaServer struct {
	Addr  string
	store *meta.Store
	srv   *wire.Server
	serving
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
		Name: "meta", Secret: cfg.Secret, Logger: logger, Protection: cfg.Protection,
		MaxConns: cfg.Limits.MaxConns, MaxConnsPerPeer: cfg.Limits.MaxConnsPerPeer,
	})
	ms := &MetaServer{Addr: ln.Addr().String(), store: st, srv: srv}
	ms.what = fmt.Sprintf("metadata server (%s)", ms.Addr)
	ms.run(func() error { return srv.Serve(ctx, ln) })
	return ms, nil
}

// Close stops serving and closes the database.
func (s *MetaServer) Close() error {
	s.srv.Close()
	return errors.Join(s.Wait(), s.store.Close())
}

// Running is a server started by this package (*MetaServer, *DataServer).
type Running interface {
	fmt.Stringer
	Stopped() <-chan struct{}
	Wait() error
}

// WaitServing blocks until ctx is done, returning nil, or until one of the
// servers stops accepting connections without being told to, returning an
// error naming it. A process whose server loop has ended must not stay up
// looking healthy: its caller exits with this error.
func WaitServing(ctx context.Context, servers ...Running) error {
	down := make(chan Running, len(servers))
	quit := make(chan struct{})
	defer close(quit)
	for _, s := range servers {
		go func() {
			select {
			case <-s.Stopped():
				down <- s
			case <-quit:
			}
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case s := <-down:
		if ctx.Err() != nil {
			return nil // it stopped because ctx ended
		}
		if err := s.Wait(); err != nil {
			return fmt.Errorf("%s stopped serving: %w", s, err)
		}
		return fmt.Errorf("%s stopped serving: its listener was closed", s)
	}
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
