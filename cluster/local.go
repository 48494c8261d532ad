package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// Config describes an embedded cluster.
type Config struct {
	// Dir holds everything: meta/ (the namespace), data0/ .. dataN-1/ (the
	// I/O servers' datafiles), secret and cluster (the cluster file other
	// pario commands read). Required.
	Dir string
	// DataServers is the number of I/O servers (default 4).
	DataServers int
	// Host is the address to listen on (default 127.0.0.1).
	Host string
	// Ports, if set, gives the metadata server's port and then one per I/O
	// server; default: ports chosen by the kernel.
	Ports []int
	// Stuffing turns on file stuffing.
	Stuffing bool
	// DefaultLayout is the metadata server's default layout.
	DefaultLayout dist.Layout
	// Logger receives the servers' logs (default: discarded).
	Logger *slog.Logger
	// Limits caps every server's connections (zero: the defaults).
	Limits Limits
	// Protection is the wire protection of every connection (default aead);
	// it goes into the cluster file.
	Protection wire.Protection
	// Listen opens the servers' listeners (default net.Listen); tests give
	// listeners that fail.
	Listen func(network, addr string) (net.Listener, error)
	// AdoptData: see MetaServerConfig.AdoptData.
	AdoptData bool
	// MetaSyncInterval: see MetaServerConfig.SyncInterval.
	MetaSyncInterval time.Duration
	// Observe, if set, gives every server's observer (package metrics).
	Observe Observe
	// Emulation slows the I/O servers' disks (here) and the clients'
	// links (through the cluster file) down: the emulated cluster.
	Emulation Emulation
}

// Local is a cluster running inside this process.
type Local struct {
	Dir         string
	ClusterFile string // path of the cluster file written into Dir
	Secret      []byte
	Protection  wire.Protection
	Emulation   Emulation
	Meta        *MetaServer
	Data        []*DataServer
	lock        *DirLock // held until Close is done with Dir
}

// Start starts a metadata server and cfg.DataServers I/O servers in this
// process, writes Dir/cluster so that other pario commands can find them,
// and returns once all are listening. It holds Dir (dirlock.go) until
// Close: a directory another process serves is an error (ErrInUse).
func Start(ctx context.Context, cfg Config) (_ *Local, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("cluster: no directory given")
	}
	if cfg.DataServers <= 0 {
		cfg.DataServers = 4
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Listen == nil {
		cfg.Listen = net.Listen
	}
	if len(cfg.Ports) != 0 && len(cfg.Ports) != cfg.DataServers+1 {
		return nil, fmt.Errorf("cluster: %d ports given for 1 metadata and %d I/O servers", len(cfg.Ports), cfg.DataServers)
	}
	handles, conns, err := descriptorShare(nofileLimit(), cfg.DataServers)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	limits := cfg.Limits
	if limits.MaxConns == 0 {
		limits.MaxConns = conns
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	clusterFile := filepath.Join(cfg.Dir, "cluster")
	lock, err := lockDir(clusterFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	l := &Local{Dir: cfg.Dir, Protection: cfg.Protection, Emulation: cfg.Emulation, lock: lock}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	// A cluster file left by a cluster that was killed names its dead
	// servers; nobody may read it now that this one is starting.
	if err := os.Remove(clusterFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if l.Secret, err = EnsureSecret(filepath.Join(cfg.Dir, "secret")); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	secret := l.Secret
	listen := func(i int) (net.Listener, error) {
		port := 0
		if len(cfg.Ports) > 0 {
			port = cfg.Ports[i]
		}
		return cfg.Listen("tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(port)))
	}
	var entries []ServerEntry
	for i := 0; i < cfg.DataServers; i++ {
		ln, err := listen(i + 1)
		if err != nil {
			return nil, fmt.Errorf("cluster: I/O server %d: %w", i, err)
		}
		name := fmt.Sprintf("data%d", i)
		ds, err := StartDataServer(ctx, ln, DataServerConfig{
			Name: name, Dir: filepath.Join(cfg.Dir, name), Secret: secret, Logger: cfg.Logger.With("server", name),
			Limits: limits, MaxOpenFiles: handles, Protection: cfg.Protection, Observe: cfg.Observe, Emulation: cfg.Emulation,
		})
		if err != nil {
			ln.Close()
			return nil, err
		}
		l.Data = append(l.Data, ds)
		entries = append(entries, ServerEntry{Name: name, Addr: ds.Addr})
	}
	ln, err := listen(0)
	if err != nil {
		return nil, fmt.Errorf("cluster: metadata server: %w", err)
	}
	l.Meta, err = StartMetaServer(ctx, ln, MetaServerConfig{
		Dir: filepath.Join(cfg.Dir, "meta"), Secret: secret, Data: entries,
		Stuffing: cfg.Stuffing, DefaultLayout: cfg.DefaultLayout, Logger: cfg.Logger.With("server", "meta"),
		Limits: limits, Protection: cfg.Protection, AdoptData: cfg.AdoptData, SyncInterval: cfg.MetaSyncInterval, Observe: cfg.Observe,
	})
	if err != nil {
		ln.Close()
		if me := (*meta.MissingServersError)(nil); errors.As(err, &me) {
			err = fmt.Errorf("%w (this directory's store was made with %d: pario up --servers %d)", err, me.Need, me.Need)
		}
		return nil, err
	}
	// Stopped while starting (a signal): no cluster file for others to
	// find, and no "cluster up" from the caller.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster: interrupted while starting: %w", err)
	}
	cf := &File{SecretFile: "secret", Meta: l.Meta.Addr, Data: entries, Protection: cfg.Protection, Emulation: cfg.Emulation}
	if err := cf.WriteFile(clusterFile); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	l.ClusterFile = clusterFile
	if err := lock.Serving(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return l, nil
}

// Client connects a client to the cluster.
func (l *Local) Client(ctx context.Context) (*client.Client, error) {
	return client.Dial(ctx, client.Options{Meta: l.Meta.Addr, Secret: l.Secret, Endpoint: wire.EndpointOptions{Protection: l.Protection}, Links: l.Emulation.Links(-1)})
}

// Wait blocks until ctx is done (nil) or one of the servers stops serving
// on its own (an error naming it); see WaitServing.
func (l *Local) Wait(ctx context.Context) error {
	servers := []Running{l.Meta}
	for _, d := range l.Data {
		servers = append(servers, d)
	}
	return WaitServing(ctx, servers...)
}

// Close stops every server (syncing the I/O servers' data) and removes the
// cluster file, so that other commands stop finding a cluster that is gone.
func (l *Local) Close() error {
	var errs []error
	if l.Meta != nil {
		errs = append(errs, l.Meta.Close())
	}
	for _, d := range l.Data {
		errs = append(errs, d.Close())
	}
	if l.ClusterFile != "" {
		os.Remove(l.ClusterFile)
	}
	l.lock.Unlock()
	l.lock = nil
	return errors.Join(errs...)
}
