// Package pario is the benchmark's back end for pario's own store
// (-a PARIO): each rank is a native client (package client) that talks to
// the I/O servers directly. The test file is a store path ("/ior.dat" or
// "pario:/ior.dat"); the cluster is found through the cluster file
// (--cluster, $PARIO_CLUSTER, or the embedded cluster of the default run).
//
// Layout options choose how a new test file is striped, as create hints:
// --pario.layout (a whole layout, e.g. simple_stripe:strip_size=1m),
// --pario.dist, --pario.strip-size, --pario.servers (num_datafiles) and
// --pario.strips (varstrip's "datafile:bytes;..." list).
package pario

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

func init() { backend.Register(func() backend.Driver { return &Driver{} }) }

// Driver holds the pario settings.
type Driver struct {
	Layout    string
	Dist      string
	StripSize int64
	Servers   int
	Strips    string
}

// Name implements backend.Driver.
func (*Driver) Name() string { return "PARIO" }

// Summary implements backend.Driver.
func (*Driver) Summary() string { return "pario's striped store through the native client" }

// Options implements backend.Driver.
func (d *Driver) Options() []backend.Option {
	return []backend.Option{
		backend.StringOption(&d.Layout, "pario.layout", "PARIO: layout of the test file, e.g. simple_stripe:strip_size=1m,num_datafiles=2"),
		backend.StringOption(&d.Dist, "pario.dist", "PARIO: distribution (simple_stripe, basic, varstrip, twod_stripe)"),
		backend.SizeOption(&d.StripSize, "pario.strip-size", "PARIO: strip size, e.g. 1m"),
		backend.IntOption(&d.Servers, "pario.servers", "PARIO: number of I/O servers (datafiles) the file is striped over"),
		backend.StringOption(&d.Strips, "pario.strips", `PARIO: varstrip strips "datafile:bytes;..." e.g. "0:1m;1:1m"`),
	}
}

// Hints returns the create hints the settings make (nil: the directory's
// or the server's default layout).
func (d *Driver) Hints() map[string]string {
	h := map[string]string{}
	if d.Layout != "" {
		h["layout"] = d.Layout
	}
	if d.Dist != "" {
		h["dist"] = d.Dist
	}
	if d.StripSize > 0 {
		h["strip_size"] = strconv.FormatInt(d.StripSize, 10)
	}
	if d.Servers > 0 {
		h["num_datafiles"] = strconv.Itoa(d.Servers)
	}
	if d.Strips != "" {
		h["strips"] = d.Strips
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// LayoutOf returns the layout the settings ask for (zero: default).
func (d *Driver) LayoutOf() (dist.Layout, error) {
	l, err := dist.ParseHints(d.Hints())
	if err != nil {
		return dist.Layout{}, fmt.Errorf("pario layout options: %w", err)
	}
	return l, nil
}

// Validate implements backend.Driver.
func (d *Driver) Validate(backend.Params) error {
	_, err := d.LayoutOf()
	return err
}

// defaultOpTimeout bounds a call to a server when Env.OpTimeout is 0:
// the CLI's --op-timeout default.
const defaultOpTimeout = 60 * time.Second

// Open implements backend.Driver: it dials the cluster named by
// env.ClusterFile.
func (d *Driver) Open(ctx context.Context, env backend.Env) (backend.Backend, error) {
	if env.ClusterFile == "" {
		return nil, errors.New("PARIO: no cluster file: give --cluster or $PARIO_CLUSTER, or run `pario bench` without -a for an embedded cluster")
	}
	cf, err := cluster.ReadFile(env.ClusterFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("PARIO: no cluster file at %s: start one with `pario up`, or point --cluster / $PARIO_CLUSTER at yours", env.ClusterFile)
	}
	if err != nil {
		return nil, fmt.Errorf("PARIO: %w", err)
	}
	secret, err := cf.Secret()
	if err != nil {
		return nil, fmt.Errorf("PARIO: %w", err)
	}
	l, err := d.LayoutOf()
	if err != nil {
		return nil, err
	}
	timeout := env.OpTimeout
	if timeout <= 0 {
		timeout = defaultOpTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.Dial(dctx, client.Options{Meta: cf.Meta, Secret: secret,
		Endpoint: wire.EndpointOptions{Protection: cf.Protection, Timeout: timeout}})
	if err != nil {
		return nil, fmt.Errorf("PARIO: %w", err)
	}
	return &Backend{c: c, layout: l, p: env.Params, barrier: env.Barrier}, nil
}

// Backend is one rank's client of the store.
type Backend struct {
	c       *client.Client
	layout  dist.Layout
	p       backend.Params
	barrier func(context.Context) error
}

var (
	_ backend.Backend   = (*Backend)(nil)
	_ backend.Checker   = (*Backend)(nil)
	_ backend.Describer = (*Backend)(nil)
	_ backend.StatFSer  = (*Backend)(nil)
)

// Client returns the store client.
func (b *Backend) Client() *client.Client { return b.c }

// Path turns a test file name into a store path: "pario:" is dropped and
// the path made absolute.
func Path(name string) string {
	name = strings.TrimPrefix(name, "pario:")
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return name
}

// Create implements backend.Backend. For a shared file rank 0 creates it
// with the layout while the others wait at a barrier, then open it; each
// file of a file-per-process test is created by its rank.
func (b *Backend) Create(ctx context.Context, name string) (backend.File, error) {
	p := Path(name)
	create := func() (backend.File, error) {
		f, err := b.c.Create(ctx, p, client.CreateOptions{Mode: client.DefaultFileMode, Layout: b.layout})
		if err != nil {
			return nil, err
		}
		return &File{f: f, ctx: ctx}, nil
	}
	if b.p.FilePerProc || b.p.Tasks == 1 {
		return create()
	}
	var (
		f   backend.File
		err error
	)
	if b.p.Rank == 0 {
		f, err = create()
	}
	if berr := b.barrier(ctx); berr != nil {
		if f != nil {
			f.Close(ctx)
		}
		return nil, errors.Join(err, berr)
	}
	if b.p.Rank == 0 {
		return f, err
	}
	return b.Open(ctx, name)
}

// Open implements backend.Backend.
func (b *Backend) Open(ctx context.Context, name string) (backend.File, error) {
	f, err := b.c.Open(ctx, Path(name))
	if err != nil {
		return nil, err
	}
	return &File{f: f, ctx: ctx}, nil
}

// Remove implements backend.Backend.
func (b *Backend) Remove(ctx context.Context, name string) error {
	if err := b.c.Remove(ctx, Path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Size implements backend.Backend.
func (b *Backend) Size(ctx context.Context, name string) (int64, error) {
	st, err := b.c.Stat(ctx, Path(name))
	if err != nil {
		return 0, err
	}
	return st.Size, nil
}

// Close implements backend.Backend.
func (b *Backend) Close() error { return b.c.Close() }

// Check implements backend.Checker: the parent directory must exist in
// the store (or the file, for a read-only test).
func (b *Backend) Check(ctx context.Context, name string, write bool) error {
	p := Path(name)
	if !write {
		if _, err := b.c.Lookup(ctx, p); err != nil {
			return fmt.Errorf("test file pario:%s: %w (nothing to read: add -w)", p, err)
		}
		return nil
	}
	dir := p[:strings.LastIndexByte(p, '/')]
	if dir == "" {
		dir = "/"
	}
	a, err := b.c.Lookup(ctx, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("test file pario:%s: directory %s does not exist in the store (pario mkdir -p %s)", p, dir, dir)
	case err != nil:
		return fmt.Errorf("test file pario:%s: %w", p, err)
	case a.Kind != meta.KindDir:
		return fmt.Errorf("test file pario:%s: %s is not a directory", p, dir)
	}
	return nil
}

// Describe implements backend.Describer.
func (b *Backend) Describe() [][2]string {
	l := "directory or server default"
	if !b.layout.IsZero() {
		l = b.layout.String()
	}
	return [][2]string{{"layout", l}, {"I/O servers", strconv.Itoa(len(b.c.Servers()))}}
}

// StatFS implements backend.StatFSer: the sum over the I/O servers.
func (b *Backend) StatFS(ctx context.Context, _ string) (backend.FSInfo, error) {
	var info backend.FSInfo
	var errs []error
	for _, s := range b.c.Statfs(ctx) {
		if s.Err != nil {
			errs = append(errs, s.Err)
			continue
		}
		info.Total += int64(s.Total)
		info.Free += int64(s.Avail)
	}
	return info, errors.Join(errs...)
}

// File is an open store file.
type File struct {
	f   *client.File
	ctx context.Context
}

// WriteAt implements io.WriterAt.
func (f *File) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAtContext(f.ctx, p, off) }

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAtContext(f.ctx, p, off) }

// Sync makes the file durable on every I/O server.
func (f *File) Sync(ctx context.Context) error { return f.f.SyncContext(ctx) }

// Close implements backend.File.
func (f *File) Close(context.Context) error { return f.f.Close() }
