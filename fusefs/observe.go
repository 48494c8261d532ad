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

func (o *observedFS) done(op string, start time.Time, st fuse.Status) {
	o.obs.FuseOp(op, time.Since(start), syscall.Errno(st))
}

func (o *observedFS) Lookup(c <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Lookup(c, h, name, out)
	o.done("lookup", t, st)
	return st
}

func (o *observedFS) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.GetAttr(c, in, out)
	o.done("getattr", t, st)
	return st
}

func (o *observedFS) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.SetAttr(c, in, out)
	o.done("setattr", t, st)
	return st
}

func (o *observedFS) Mknod(c <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Mknod(c, in, name, out)
	o.done("mknod", t, st)
	return st
}

func (o *observedFS) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Mkdir(c, in, name, out)
	o.done("mkdir", t, st)
	return st
}

func (o *observedFS) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Unlink(c, h, name)
	o.done("unlink", t, st)
	return st
}

func (o *observedFS) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Rmdir(c, h, name)
	o.done("rmdir", t, st)
	return st
}

func (o *observedFS) Rename(c <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Rename(c, in, oldName, newName)
	o.done("rename", t, st)
	return st
}

func (o *observedFS) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Create(c, in, name, out)
	o.done("create", t, st)
	return st
}

func (o *observedFS) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Open(c, in, out)
	o.done("open", t, st)
	return st
}

func (o *observedFS) Read(c <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	t := time.Now()
	r, st := o.RawFileSystem.Read(c, in, buf)
	o.done("read", t, st)
	return r, st
}

func (o *observedFS) Write(c <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := o.RawFileSystem.Write(c, in, data)
	o.done("write", t, st)
	return n, st
}

// Writev is tried first by go-fuse; ENOSYS sends the request to Write,
// which counts it.
func (o *observedFS) Writev(c <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := o.RawFileSystem.Writev(c, in, data)
	if st != fuse.ENOSYS {
		o.done("write", t, st)
	}
	return n, st
}

func (o *observedFS) Flush(c <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Flush(c, in)
	o.done("flush", t, st)
	return st
}

func (o *observedFS) Fsync(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.Fsync(c, in)
	o.done("fsync", t, st)
	return st
}

func (o *observedFS) Release(c <-chan struct{}, in *fuse.ReleaseIn) {
	t := time.Now()
	o.RawFileSystem.Release(c, in)
	o.done("release", t, fuse.OK)
}

func (o *observedFS) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.OpenDir(c, in, out)
	o.done("opendir", t, st)
	return st
}

func (o *observedFS) ReadDir(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.ReadDir(c, in, out)
	o.done("readdir", t, st)
	return st
}

func (o *observedFS) ReadDirPlus(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.ReadDirPlus(c, in, out)
	o.done("readdir", t, st)
	return st
}

func (o *observedFS) ReleaseDir(in *fuse.ReleaseIn) {
	t := time.Now()
	o.RawFileSystem.ReleaseDir(in)
	o.done("releasedir", t, fuse.OK)
}

func (o *observedFS) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.StatFs(c, h, out)
	o.done("statfs", t, st)
	return st
}

func (o *observedFS) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := o.RawFileSystem.GetXAttr(c, h, attr, dest)
	o.done("getxattr", t, st)
	return n, st
}

func (o *observedFS) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.SetXAttr(c, in, attr, data)
	o.done("setxattr", t, st)
	return st
}

func (o *observedFS) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := o.RawFileSystem.ListXAttr(c, h, dest)
	o.done("listxattr", t, st)
	return n, st
}

func (o *observedFS) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	t := time.Now()
	st := o.RawFileSystem.RemoveXAttr(c, h, attr)
	o.done("removexattr", t, st)
	return st
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
