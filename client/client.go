// Package client is pario's Go client. A Client talks to the metadata
// server for the namespace and, for file data, straight to the I/O servers:
// a File maps each request through its distribution function into
// per-datafile pieces, merges the pieces that are contiguous on one
// datafile, and sends them to all servers at once.
//
// A File is an io.ReaderAt and io.WriterAt; every blocking method also has
// a form taking a context.Context.
//
// # Errors
//
// What a server refuses comes back as a *wire.RemoteError naming the
// server ("metadata server (10.0.0.1:7000): ...", "I/O server data2
// (10.0.0.3:7001): ...") and carrying its errno, so errors.Is matches
// fs.ErrNotExist (ENOENT), fs.ErrExist (EEXIST), fs.ErrPermission
// (EACCES), syscall.ENOTDIR, syscall.EINVAL (a bad path, layout or
// argument), syscall.EFBIG and the rest, and wire.ErrnoOf gives the errno
// back (the FUSE mount answers with it). A connection that could not be
// made is a *wire.DialError, one lost with a request in flight a
// *wire.ConnError, each naming the server; the Client retries both where
// that is safe (wire.EndpointOptions). After Close, every call fails
// with net.ErrClosed. A call to several I/O servers at once joins their
// errors, one per distinct failure. A File's own errors (closed, a range
// past the largest offset, a removed file) are listed under File.
package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
	"github.com/pario/pario/wire/throttle"
)

// Options configure a Client.
type Options struct {
	// Meta is the metadata server's address (host:port). Required.
	Meta string
	// Secret is the cluster's shared secret. Required.
	Secret []byte
	// Endpoint tunes connections, retries and timeouts to every server.
	Endpoint wire.EndpointOptions
	// MaxRequest caps the bulk data of one request to an I/O server
	// (default 4 MiB): larger transfers become several pipelined requests.
	// It is at least MinRequest (smaller values are raised to it) and at
	// most wire.MaxDataLen.
	MaxRequest int
	// Observe, if set, gives the observer of the calls to each server
	// (service "meta" or "data", the server's name, its op table), for the
	// client's metrics (package metrics).
	Observe func(service, server string, ops wire.OpTable) wire.CallObserver
	// Cred is who the client's requests act for, unless their context
	// carries other credentials (meta.WithCred: the FUSE mount passes each
	// caller's). Nil means this process's effective uid, gid and groups.
	Cred *meta.Cred
	// Links, if set, is the emulated network from this client to each I/O
	// server (by server index): its link to each is throttled on its own.
	Links *throttle.Links
}

// MinRequest is the smallest Options.MaxRequest. Every request costs the
// client a goroutine, an extent and a frame whatever its size, so a cap
// of a few bytes cost kilobytes per byte moved (MaxRequest 1: 1 GB to
// write and read 256 KiB); at 64 KiB, one sealed record, it is a few
// percent.
const MinRequest = 64 << 10

// ProcessCred is the calling process's effective uid, gid and
// supplementary groups: who it is to the metadata server.
func ProcessCred() meta.Cred {
	c := meta.Cred{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
	groups, _ := os.Getgroups() // none is a safe answer: fewer permissions
	for _, g := range groups {
		c.Groups = append(c.Groups, uint32(g))
	}
	return c
}

// cred is who a request acts for: the context's credentials, else the
// client's. Path requests also send what their context expects the path
// to resolve to (meta.WithExpect; the FUSE mount sets it), so that the
// server refuses with ESTALE rather than act on another file.
func (c *Client) cred(ctx context.Context) meta.Cred {
	if cr, ok := meta.CredFrom(ctx); ok {
		return cr
	}
	return c.defCred
}

// The modes callers pass for "a usual file/directory": Create and Mkdir
// take the mode as given, so 0 is mode 0, as open(2) and mkdir(2) do.
const (
	DefaultFileMode = 0o644
	DefaultDirMode  = 0o755
)

// Client is a connection to one pario cluster. It is safe for concurrent use.
type Client struct {
	opts    Options
	defCred meta.Cred
	meta    *wire.Endpoint
	infos   []meta.ServerInfo
	servers []*wire.Endpoint // by server index
	// incarnation is the cluster's, as the metadata server answered it at
	// Dial: the datafile removes this client sends carry it, so that an
	// I/O server of another cluster refuses them.
	incarnation uint64
	origin      uint64 // its writes' origin (origin.go)
}

// Dial connects to the metadata server and learns the I/O servers.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	if opts.Meta == "" {
		return nil, errors.New("client: no metadata server address given")
	}
	if len(opts.Secret) == 0 {
		return nil, errors.New("client: no shared secret given")
	}
	if opts.MaxRequest <= 0 {
		opts.MaxRequest = 4 << 20
	}
	opts.MaxRequest = min(max(opts.MaxRequest, MinRequest), wire.MaxDataLen)
	c := &Client{opts: opts, origin: newOrigin()}
	if opts.Cred != nil {
		c.defCred = *opts.Cred
	} else {
		c.defCred = ProcessCred()
	}
	c.meta = wire.NewEndpoint(fmt.Sprintf("metadata server (%s)", opts.Meta), opts.Meta, opts.Secret, opts.endpoint("meta", "meta", meta.Ops))
	resp, _, err := wire.Call(ctx, c.meta, meta.OpServers, meta.ServersRequest{}, nil, nil)
	if err != nil {
		c.meta.Close()
		return nil, err
	}
	infos := resp.Servers
	if len(infos) == 0 {
		c.meta.Close()
		return nil, fmt.Errorf("%s: the cluster has no I/O servers", c.meta.Name)
	}
	c.infos, c.incarnation = infos, resp.Incarnation
	for _, s := range infos {
		name := fmt.Sprintf("I/O server %s (%s)", s.Name, s.Addr)
		eo := opts.endpoint("data", s.Name, data.Ops)
		if opts.Links != nil {
			eo.Throttle = opts.Links.Bucket(len(c.servers))
		}
		c.servers = append(c.servers, wire.NewEndpoint(name, s.Addr, opts.Secret, eo))
	}
	return c, nil
}

// endpoint is the endpoint options for one server, with its observer.
func (o Options) endpoint(service, server string, ops wire.OpTable) wire.EndpointOptions {
	e := o.Endpoint
	if o.Observe != nil {
		e.Observer = o.Observe(service, server, ops)
	}
	return e
}

// Close closes every connection.
func (c *Client) Close() error {
	c.meta.Close()
	for _, s := range c.servers {
		s.Close()
	}
	return nil
}

// Servers lists the cluster's I/O servers in server-index order.
func (c *Client) Servers() []meta.ServerInfo { return c.infos }

// metaAttr calls a metadata op that answers with an entry's attributes.
func metaAttr[Req wire.Encoder](ctx context.Context, c *Client, op wire.Op[Req, meta.AttrResponse], req Req) (meta.Attr, error) {
	resp, _, err := wire.Call(ctx, c.meta, op, req, nil, nil)
	return resp.Attr, err
}

func (c *Client) server(idx uint32) (*wire.Endpoint, error) {
	if int(idx) >= len(c.servers) {
		return nil, fmt.Errorf("client: layout names I/O server %d but the cluster has %d", idx, len(c.servers))
	}
	return c.servers[idx], nil
}

// Lookup returns the metadata of path.
func (c *Client) Lookup(ctx context.Context, path string) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpLookup, meta.LookupRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
}

// Mkdir creates a directory.
func (c *Client) Mkdir(ctx context.Context, path string, mode uint32) error {
	_, err := c.MkdirAttr(ctx, path, mode)
	return err
}

// MkdirAll creates path and any missing parents; existing directories are fine.
func (c *Client) MkdirAll(ctx context.Context, path string, mode uint32) error {
	a, err := c.Lookup(ctx, path)
	if err == nil {
		if a.Kind != meta.KindDir {
			return &fs.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := parentDir(path); parent != path {
		if err := c.MkdirAll(ctx, parent, mode); err != nil {
			return err
		}
	}
	if err := c.Mkdir(ctx, path, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

func parentDir(p string) string {
	for len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// Rename moves oldpath to newpath, replacing a file there (whose data the
// metadata server then removes from the I/O servers, after answering).
func (c *Client) Rename(ctx context.Context, oldpath, newpath string) error {
	_, err := c.RenameEntry(ctx, oldpath, newpath, false)
	return err
}

// Remove removes a file or an empty directory. A file's datafiles go with
// its last name: the metadata server records their removal in the
// transaction that removes the name, and removes them after answering
// (retrying while an I/O server is down).
func (c *Client) Remove(ctx context.Context, path string) error {
	_, err := c.RemoveEntry(ctx, path, false)
	return err
}

// removeDatafiles deletes the datafiles of a file the namespace no longer
// holds, which the metadata server was told to leave to the caller
// (keepData). A file with names left (a.Nlink, as the removal answered
// it) keeps them. If an I/O server is down its datafile stays behind as
// an orphan; the error says which server.
func (c *Client) removeDatafiles(ctx context.Context, path string, a meta.Attr) error {
	if a.Kind != meta.KindFile || a.Nlink > 0 {
		return nil
	}
	servers := a.Servers
	if a.Stuffed && len(servers) > 0 {
		servers = servers[:1]
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, idx := range servers {
		wg.Go(func() {
			ep, err := c.server(idx)
			if err == nil {
				_, _, err = wire.Call(ctx, ep, data.OpRemove, data.RemoveRequest{ID: uint64(a.ID), Incarnation: c.incarnation}, nil, nil)
			}
			if err != nil {
				errs[i] = fmt.Errorf("remove %s: datafile %d left behind: %w", path, i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SetLayout sets a directory's default layout (a zero Layout clears it),
// or the layout of a file that holds no data yet.
func (c *Client) SetLayout(ctx context.Context, path string, l dist.Layout) error {
	if err := checkLayout("set layout", path, l); err != nil {
		return err
	}
	a, err := c.Lookup(ctx, path)
	if err != nil {
		return err
	}
	empty := true
	if a.Kind == meta.KindFile {
		size, err := c.fileSize(ctx, a)
		if err != nil {
			return err
		}
		empty = size == 0
	}
	_, err = metaAttr(ctx, c, meta.OpSetLayout, meta.SetLayoutRequest{Path: path, Layout: l, FileIsEmpty: empty, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)})
	return err
}

// checkLayout refuses, naming the path, a layout whose text form the
// metadata server's decoder refuses: it would answer that the request
// was malformed ("create request: wire: field "layout" at byte 38: ..."),
// naming neither the call nor the path. A Layout filled in by hand rather
// than by dist.ParseLayout or dist.ParseHints may be anything. The errno
// is EINVAL, as the server's.
func checkLayout(op, path string, l dist.Layout) error {
	s := l.String()
	if s == "" {
		return nil
	}
	if _, err := dist.ParseLayout(s); err != nil {
		return &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("layout %q: %w: %w", s, err, syscall.EINVAL)}
	}
	return nil
}

// FileInfo is what Stat reports.
type FileInfo struct {
	Path string
	meta.Attr
	// Size is the logical size computed from the datafiles, for files.
	Size int64
	// Allocated is the bytes the datafiles hold on disk (holes take none).
	Allocated int64
}

// Stat returns a path's metadata, with a file's size computed from its
// datafiles as PVFS2 does.
func (c *Client) Stat(ctx context.Context, path string) (FileInfo, error) {
	a, err := c.Lookup(ctx, path)
	if err != nil {
		return FileInfo{}, err
	}
	fi := FileInfo{Path: path, Attr: a}
	if a.Kind == meta.KindFile {
		u, err := c.fileUsage(ctx, a)
		if err != nil {
			return FileInfo{}, fmt.Errorf("size of %s: %w", path, err)
		}
		fi.Size, fi.Allocated = u.Size, u.Allocated
	}
	return fi, nil
}

// SetMtime records a modification time.
func (c *Client) SetMtime(ctx context.Context, path string, mtime int64) error {
	req := meta.SetAttrRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}
	req.Mtime = &mtime
	_, err := metaAttr(ctx, c, meta.OpSetAttr, req)
	return err
}

// SetTimes records access and modification times (unix nanoseconds; nil
// leaves one as it is), as utimensat(2) does: ctime moves too.
func (c *Client) SetTimes(ctx context.Context, path string, atime, mtime *int64) error {
	req := meta.SetAttrRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}
	req.Atime, req.Mtime = atime, mtime
	_, err := metaAttr(ctx, c, meta.OpSetAttr, req)
	return err
}

// Accessed records a read of path at atime (unix nanoseconds) without
// moving its ctime: what relatime does on a read.
func (c *Client) Accessed(ctx context.Context, path string, atime int64) (meta.Attr, error) {
	req := meta.SetAttrRequest{Path: path, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx)}
	req.Atime, req.Access = &atime, true
	return metaAttr(ctx, c, meta.OpSetAttr, req)
}

// NeedsAtime says whether a read at now should record a new atime under
// relatime's rule (Linux's default mount option): when the atime is not
// after the last change of data or attributes, or is a day old.
func NeedsAtime(a meta.Attr, now int64) bool {
	return a.Atime <= a.Mtime || a.Atime <= a.Ctime || now-a.Atime >= int64(24*time.Hour)
}

// ServerStat is one I/O server's answer to Statfs.
type ServerStat struct {
	meta.ServerInfo
	Total, Free, Avail uint64 // bytes, of the file system holding its data directory
	Used               uint64 // bytes held by datafiles
	Datafiles          uint64
	// FSID names the file system of the data directory: servers sharing
	// one report the same (0: unknown). See Space.
	FSID uint64
	Err  error // set if the server did not answer
}

// Space is the capacity of the file systems under a cluster's I/O
// servers, each counted once however many servers sit on it (four servers
// sharing one disk have that disk's size, not four times it), and the
// bytes datafiles hold on them all.
type Space struct {
	Total, Free, Avail uint64
	Used               uint64
	FileSystems        int // distinct file systems among the servers that answered
	Answered           int // servers that answered
}

// SumSpace adds up the servers that answered, counting the Total, Free
// and Avail of each file system once. A server with FSID 0 (unknown) is
// taken to have a file system of its own.
func SumSpace(stats []ServerStat) Space {
	var sp Space
	seen := map[uint64]bool{}
	for _, s := range stats {
		if s.Err != nil {
			continue
		}
		sp.Answered++
		sp.Used += s.Used
		if s.FSID != 0 && seen[s.FSID] {
			continue
		}
		seen[s.FSID] = true
		sp.FileSystems++
		sp.Total, sp.Free, sp.Avail = sp.Total+s.Total, sp.Free+s.Free, sp.Avail+s.Avail
	}
	return sp
}

// Statfs asks every I/O server for its capacity and usage. A server that
// does not answer has Err set; the others are still reported.
func (c *Client) Statfs(ctx context.Context) []ServerStat {
	return statfs(ctx, c.servers, c.infos)
}

// StatfsServers is Statfs without a metadata server: it asks the I/O
// servers a cluster file names (opts.Meta is not dialled), so that an
// operator sees their space while the metadata server is down, as lfs df
// reports each target.
func StatfsServers(ctx context.Context, opts Options, servers []meta.ServerInfo) []ServerStat {
	eps := make([]*wire.Endpoint, len(servers))
	for i, s := range servers {
		eps[i] = wire.NewEndpoint(fmt.Sprintf("I/O server %s (%s)", s.Name, s.Addr), s.Addr, opts.Secret, opts.endpoint("data", s.Name, data.Ops))
		defer eps[i].Close()
	}
	return statfs(ctx, eps, servers)
}

func statfs(ctx context.Context, eps []*wire.Endpoint, infos []meta.ServerInfo) []ServerStat {
	out := make([]ServerStat, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		out[i].ServerInfo = infos[i]
		wg.Go(func() {
			resp, _, err := wire.Call(ctx, ep, data.OpStatfs, data.StatfsRequest{}, nil, nil)
			if err != nil {
				out[i].Err = err
				return
			}
			out[i].Total, out[i].Free, out[i].Avail = resp.Total, resp.Free, resp.Avail
			out[i].Used, out[i].Datafiles, out[i].FSID = resp.Used, resp.Datafiles, resp.FSID
		})
	}
	wg.Wait()
	return out
}

// MetaStats reports how many files and directories the namespace holds.
func (c *Client) MetaStats(ctx context.Context) (files, dirs int64, err error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpStats, meta.StatsRequest{}, nil, nil)
	if err != nil {
		return 0, 0, err
	}
	return resp.Files, resp.Dirs, nil
}
