package fusefs

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// OpObserver is told about every FUSE request the mount answers, for
// metrics (package metrics): the request's name ("lookup", "read", ...),
// how long the mount took, and the errno answered (0: success). It runs
// on the request's path: cheap, non-blocking.
type OpObserver interface {
	FuseOp(op string, d time.Duration, errno syscall.Errno)
}

// FuseOps are the names OpObserver is called with, so that an observer
// can make its series in advance.
var FuseOps = []string{
	"lookup", "getattr", "setattr", "mknod", "mkdir", "unlink", "rmdir", "rename",
	"create", "open", "read", "write", "flush", "fsync", "release",
	"opendir", "readdir", "releasedir", "statfs", "getxattr", "setxattr", "listxattr", "removexattr",
}

// observedFS times the requests of the file system's operations that
// reach the servers or the page cache; the others (forget, interrupts,
// locks) pass through untimed.
type observedFS struct {
	fuse.RawFileSystem
	obs OpObserver
}

// done reports an operation that began at start and ended with *st; it
// is deferred, so it takes the status by pointer.
func (o *observedFS) done(op string, start time.Time, st *fuse.Status) {
	o.obs.FuseOp(op, time.Since(start), syscall.Errno(*st))
}

func (o *observedFS) Lookup(c <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer o.done("lookup", time.Now(), &st)
	return o.RawFileSystem.Lookup(c, h, name, out)
}

func (o *observedFS) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) (st fuse.Status) {
	defer o.done("getattr", time.Now(), &st)
	return o.RawFileSystem.GetAttr(c, in, out)
}

func (o *observedFS) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) (st fuse.Status) {
	defer o.done("setattr", time.Now(), &st)
	return o.RawFileSystem.SetAttr(c, in, out)
}

func (o *observedFS) Mknod(c <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer o.done("mknod", time.Now(), &st)
	return o.RawFileSystem.Mknod(c, in, name, out)
}

func (o *observedFS) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer o.done("mkdir", time.Now(), &st)
	return o.RawFileSystem.Mkdir(c, in, name, out)
}

func (o *observedFS) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) (st fuse.Status) {
	defer o.done("unlink", time.Now(), &st)
	return o.RawFileSystem.Unlink(c, h, name)
}

func (o *observedFS) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) (st fuse.Status) {
	defer o.done("rmdir", time.Now(), &st)
	return o.RawFileSystem.Rmdir(c, h, name)
}

func (o *observedFS) Rename(c <-chan struct{}, in *fuse.RenameIn, oldName, newName string) (st fuse.Status) {
	defer o.done("rename", time.Now(), &st)
	return o.RawFileSystem.Rename(c, in, oldName, newName)
}

func (o *observedFS) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) (st fuse.Status) {
	defer o.done("create", time.Now(), &st)
	return o.RawFileSystem.Create(c, in, name, out)
}

func (o *observedFS) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (st fuse.Status) {
	defer o.done("open", time.Now(), &st)
	return o.RawFileSystem.Open(c, in, out)
}

func (o *observedFS) Read(c <-chan struct{}, in *fuse.ReadIn, buf []byte) (r fuse.ReadResult, st fuse.Status) {
	defer o.done("read", time.Now(), &st)
	return o.RawFileSystem.Read(c, in, buf)
}

func (o *observedFS) Write(c <-chan struct{}, in *fuse.WriteIn, data []byte) (n uint32, st fuse.Status) {
	defer o.done("write", time.Now(), &st)
	return o.RawFileSystem.Write(c, in, data)
}

// Writev is tried first by go-fuse; ENOSYS sends the request to Write,
// which counts it.
func (o *observedFS) Writev(c <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := o.RawFileSystem.Writev(c, in, data)
	if st != fuse.ENOSYS {
		o.done("write", t, &st)
	}
	return n, st
}

func (o *observedFS) Flush(c <-chan struct{}, in *fuse.FlushIn) (st fuse.Status) {
	defer o.done("flush", time.Now(), &st)
	return o.RawFileSystem.Flush(c, in)
}

func (o *observedFS) Fsync(c <-chan struct{}, in *fuse.FsyncIn) (st fuse.Status) {
	defer o.done("fsync", time.Now(), &st)
	return o.RawFileSystem.Fsync(c, in)
}

func (o *observedFS) Release(c <-chan struct{}, in *fuse.ReleaseIn) {
	ok := fuse.OK
	defer o.done("release", time.Now(), &ok)
	o.RawFileSystem.Release(c, in)
}

func (o *observedFS) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (st fuse.Status) {
	defer o.done("opendir", time.Now(), &st)
	return o.RawFileSystem.OpenDir(c, in, out)
}

func (o *observedFS) ReadDir(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (st fuse.Status) {
	defer o.done("readdir", time.Now(), &st)
	return o.RawFileSystem.ReadDir(c, in, out)
}

func (o *observedFS) ReadDirPlus(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (st fuse.Status) {
	defer o.done("readdir", time.Now(), &st)
	return o.RawFileSystem.ReadDirPlus(c, in, out)
}

func (o *observedFS) ReleaseDir(in *fuse.ReleaseIn) {
	ok := fuse.OK
	defer o.done("releasedir", time.Now(), &ok)
	o.RawFileSystem.ReleaseDir(in)
}

func (o *observedFS) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) (st fuse.Status) {
	defer o.done("statfs", time.Now(), &st)
	return o.RawFileSystem.StatFs(c, h, out)
}

func (o *observedFS) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (n uint32, st fuse.Status) {
	defer o.done("getxattr", time.Now(), &st)
	return o.RawFileSystem.GetXAttr(c, h, attr, dest)
}

func (o *observedFS) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) (st fuse.Status) {
	defer o.done("setxattr", time.Now(), &st)
	return o.RawFileSystem.SetXAttr(c, in, attr, data)
}

func (o *observedFS) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (n uint32, st fuse.Status) {
	defer o.done("listxattr", time.Now(), &st)
	return o.RawFileSystem.ListXAttr(c, h, dest)
}

func (o *observedFS) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) (st fuse.Status) {
	defer o.done("removexattr", time.Now(), &st)
	return o.RawFileSystem.RemoveXAttr(c, h, attr)
}

// mountFS is fs.Mount, with the raw file system wrapped for obs if set.
func mountFS(dir string, root fs.InodeEmbedder, opts *fs.Options, obs OpObserver) (*fuse.Server, error) {
	raw := fs.NewNodeFS(root, opts)
	if obs != nil {
		raw = &observedFS{RawFileSystem: raw, obs: obs}
	}
	srv, err := fuse.NewServer(raw, dir, &opts.MountOptions)
	if err != nil {
		return nil, err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, err
	}
	return srv, nil
}
