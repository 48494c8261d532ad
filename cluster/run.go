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
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

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
	// MaxOpenFiles bounds the datafile handles kept open (zero:
	// data.DefaultMaxOpenFiles).
	MaxOpenFiles int
	// Protection is the wire protection clients must use (default aead).
	Protection wire.Protection
	// Observe, if set, gives the server's observer (package metrics).
	Observe Observe
	// Emulation is the emulated cluster the server is part of: it
	// applies the disk's rate, seek and lock revocations.
	Emulation Emulation
}

// Observe makes the observer of one server: service "meta" or "data",
// the server's name, its op table.
type Observe func(service, name string, ops wire.OpTable) wire.ServerObserver

func (o Observe) make(service, name string, ops wire.OpTable) wire.ServerObserver {
	if o == nil {
		return nil
	}
	return o(service, name, ops)
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

// DiskStats reports what the server's emulated disk charged for besides
// bytes (data.Store.DiskStats).
func (d *DataServer) DiskStats() data.DiskStats { return d.store.DiskStats() }

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
	st, err := data.Open(cfg.Dir, data.StoreOptions{
		Name:         cfg.Name,
		MaxOpenFiles: cfg.MaxOpenFiles,
		DiskRate:     cfg.Emulation.DiskRate, DiskSeek: cfg.Emulation.DiskSeek, LockRevoke: cfg.Emulation.LockRevoke,
	})
	if err != nil {
		return nil, fmt.Errorf("I/O server %s: %w", cfg.Name, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	obs := cfg.Observe.make("data", cfg.Name, data.Ops)
	if uo, ok := obs.(interface {
		Unwritten(func() (uint64, int64, bool))
	}); ok {
		uo.Unwritten(st.UnwrittenStats)
	}
	if do, ok := obs.(interface {
		EmulatedDisk(func() (uint64, uint64))
	}); ok {
		do.EmulatedDisk(func() (uint64, uint64) {
			s := st.DiskStats()
			return s.Seeks, s.Revocations
		})
	}
	srv := wire.NewServer(&data.Handler{Store: st}, wire.ServerOptions{
		Name: cfg.Name, Secret: cfg.Secret, Logger: logger, MemoryBudget: cfg.MemoryBudget, Protection: cfg.Protection,
		MaxConns: cfg.Limits.MaxConns, MaxConnsPerPeer: cfg.Limits.MaxConnsPerPeer,
		Observer: obs,
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
	// AdoptData lets I/O servers that hold datafiles of another cluster
	// incarnation join this one (only for a database without files); their
	// old datafiles become orphans for pario fsck. See docs/store.md.
	AdoptData bool
	// RenameServers accepts I/O servers whose names differ from those the
	// metadata database recorded at their index (meta.Options).
	RenameServers bool
	// SyncInterval is meta.Options.SyncInterval: how long an answered
	// namespace change may wait for its fdatasync (0: the default, 50 ms;
	// negative: none, every change is durable before it is answered).
	SyncInterval time.Duration
	// Observe, if set, gives the server's observer (package metrics).
	Observe Observe
	// RootSquash makes root on the clients nobody (meta.Handler.RootSquash).
	RootSquash bool
}

// MetaServer is a running metadata server.
type MetaServer struct {
	Addr  string
	store *meta.Store
	df    *wireDatafiles
	srv   *wire.Server
	serving
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
	df := newWireDatafiles(cfg.Data, cfg.Secret, cfg.Protection, data.AdoptNone)
	dbPath := filepath.Join(cfg.Dir, "meta.db")
	st, err := meta.Open(dbPath, meta.Options{
		Servers: len(cfg.Data), DefaultLayout: cfg.DefaultLayout, Stuffing: cfg.Stuffing, Datafiles: df,
		RootUid: uint32(os.Geteuid()), RootGid: uint32(os.Getegid()), SyncInterval: cfg.SyncInterval,
		ServerNames: serverNames(cfg.Data), RenameServers: cfg.RenameServers,
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
	obs := cfg.Observe.make("meta", "meta", meta.Ops)
	if ro, ok := obs.(interface {
		Removals(func() (int64, uint64))
	}); ok {
		ro.Removals(st.RemovalStats)
	}
	if do, ok := obs.(interface {
		Durability(func() (uint64, uint64, bool))
	}); ok {
		do.Durability(st.SyncStats)
	}
	if lo, ok := obs.(interface {
		Leases(func() (int, int, uint64, uint64, float64))
	}); ok {
		lo.Leases(func() (int, int, uint64, uint64, float64) {
			l := st.LeaseStats()
			return l.Leases, l.Delegations, l.Recalls, l.RecallsLapsed, l.RecallWait.Seconds()
		})
	}
	srv := wire.NewServer(&meta.Handler{Store: st, Servers: infos, RootSquash: cfg.RootSquash}, wire.ServerOptions{
		Name: "meta", Secret: cfg.Secret, Logger: logger, Protection: cfg.Protection,
		MaxConns: cfg.Limits.MaxConns, MaxConnsPerPeer: cfg.Limits.MaxConnsPerPeer,
		Observer: obs,
	})
	ms := &MetaServer{Addr: ln.Addr().String(), store: st, df: df, srv: srv}
	ms.what = fmt.Sprintf("metadata server (%s)", ms.Addr)
	ms.run(func() error { return srv.Serve(ctx, ln) })
	return ms, nil
}

// Store is the server's namespace, for tests that look inside (counters
// such as Store.AcksAwaited).
func (s *MetaServer) Store() *meta.Store { return s.store }

// Close stops serving and closes the database.
func (s *MetaServer) Close() error {
	s.srv.Close()
	err := s.Wait()
	// The store first: its reaper may be talking to the I/O servers.
	err = errors.Join(err, s.store.Close())
	s.df.Close()
	return err
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

// CreateSecretFile is `pario secret FILE`: WriteSecret, making FILE's
// directory (mode 0700) if it is missing. An existing FILE (a symbolic
// link too, even a dangling one) is never replaced, and the error says so.
func CreateSecretFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write secret: %w", err)
	}
	_, err := WriteSecret(path)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: a secret file is never replaced (the cluster's hosts and clients may hold the secret it has); remove it first to make a new one", path)
	}
	return err
}

// serverNames are the servers' names in index order.
func serverNames(servers []ServerEntry) []string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	return names
}
