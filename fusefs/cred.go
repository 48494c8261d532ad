package fusefs

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/pario/pario/server/meta"
)

// A FUSE request names the calling thread and its file-system uid and gid,
// but not its supplementary groups: those are read from
// /proc/PID/status, as other FUSE file systems do, and kept for a short
// while so that a busy process does not pay a read per request.
const groupsTTL = time.Second

// maxCachedCallers bounds the cache: past it, it starts afresh.
const maxCachedCallers = 4096

type callerKey struct {
	pid, uid, gid uint32
}

type cachedGroups struct {
	groups []uint32
	at     time.Time
}

// callers caches the supplementary groups of recent callers.
type callers struct {
	mu sync.Mutex
	m  map[callerKey]cachedGroups
}

// withCaller returns ctx carrying the credentials of the process behind
// the FUSE request ctx belongs to (meta.WithCred), which the client sends
// with every metadata request; ctx unchanged if it is not a request's.
func (fsys *fileSystem) withCaller(ctx context.Context) context.Context {
	if _, ok := meta.CredFrom(ctx); ok {
		return ctx
	}
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return ctx
	}
	return meta.WithCred(ctx, meta.Cred{Uid: c.Uid, Gid: c.Gid, Groups: fsys.callers.groups(c.Pid, c.Uid, c.Gid), Mount: fsys.lease.watcher.Load()})
}

// writeOrigin is the origin of a write the process behind the FUSE
// request ctx makes (client.WithOrigin): each process writing through the
// mount is a writer of its own, as each client node is to Lustre's extent
// locks, so that ranks of one machine sharing this mount take locks from
// each other on an emulated disk that charges for it (`pario up
// --lock-revoke`). A write with no process behind it (the kernel's
// write-back of mmap'd pages) is the mount's own.
func (fsys *fileSystem) writeOrigin(ctx context.Context) uint64 {
	own := fsys.c.Origin()
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Pid == 0 {
		return own
	}
	// A bijection of the pid, so that no two processes share an origin.
	if o := own ^ uint64(c.Pid)*0x9e3779b97f4a7c15; o != 0 {
		return o
	}
	return own
}

// kernelsOwn returns ctx marked with this mount's watcher ID, for a
// namespace change the kernel makes and applies itself from the answer
// (create, mkdir, mknod, symlink, link, unlink, rmdir, rename): the
// metadata server then neither waits for this mount's acknowledgement
// nor sends it the change (meta.Cred.Watcher). Every other change, the
// kernel's setattr and those the mount makes on its own account (atime
// on a read, setuid cleared by a write, mtime at close, a truncate at
// open, a layout set as an extended attribute), goes without it and is
// waited for as any other mount's: the kernel may still cache what it
// changed.
func (fsys *fileSystem) kernelsOwn(ctx context.Context) context.Context {
	c, ok := meta.CredFrom(ctx)
	if !ok {
		return ctx
	}
	c.Watcher = fsys.lease.watcher.Load()
	c.Mount = c.Watcher
	return meta.WithCred(ctx, c)
}

func (cs *callers) groups(pid, uid, gid uint32) []uint32 {
	k := callerKey{pid, uid, gid}
	now := time.Now()
	cs.mu.Lock()
	e, ok := cs.m[k]
	cs.mu.Unlock()
	if ok && now.Sub(e.at) < groupsTTL {
		return e.groups
	}
	groups := procGroups(pid)
	cs.mu.Lock()
	if cs.m == nil || len(cs.m) >= maxCachedCallers {
		cs.m = make(map[callerKey]cachedGroups)
	}
	cs.m[k] = cachedGroups{groups: groups, at: now}
	cs.mu.Unlock()
	return groups
}

// procGroups reads the supplementary groups of thread pid. A thread that
// has gone, or a kernel request (pid 0), has none: fewer groups can only
// deny, never grant, what the caller's uid and gid allow.
func procGroups(pid uint32) []uint32 {
	if pid == 0 {
		return nil
	}
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/status")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Groups:")
		if !ok {
			continue
		}
		return parseGroups(rest)
	}
	return nil
}

// parseGroups parses the numbers of a /proc status "Groups:" line; what
// does not parse is left out.
func parseGroups(s string) []uint32 {
	var groups []uint32
	for _, f := range strings.Fields(s) {
		if g, err := strconv.ParseUint(f, 10, 32); err == nil {
			groups = append(groups, uint32(g))
		}
	}
	return groups
}
