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
// but not its supplementary groups nor its process: those are read from
// /proc/PID/status, as other FUSE file systems do, and kept for a short
// while so that a busy process does not pay a read per request.
const groupsTTL = time.Second

// maxCachedCallers bounds the cache: past it, it starts afresh.
const maxCachedCallers = 4096

type callerKey struct {
	pid, uid, gid uint32
}

type cachedCaller struct {
	groups []uint32
	tgid   uint32 // the thread's process
	at     time.Time
}

// callers caches the supplementary groups and processes of recent
// callers.
type callers struct {
	mu sync.Mutex
	m  map[callerKey]cachedCaller
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
	// The request names a thread; a process whose threads take turns
	// at its writes (any Go program's) is one writer.
	pid := fsys.callers.lookup(c.Pid, c.Uid, c.Gid).tgid
	// A bijection of the pid, so that no two processes share an origin.
	if o := own ^ uint64(pid)*0x9e3779b97f4a7c15; o != 0 {
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
	return cs.lookup(pid, uid, gid).groups
}

// lookup is what /proc says of thread pid, at most groupsTTL old.
func (cs *callers) lookup(pid, uid, gid uint32) cachedCaller {
	k := callerKey{pid, uid, gid}
	now := time.Now()
	cs.mu.Lock()
	e, ok := cs.m[k]
	cs.mu.Unlock()
	if ok && now.Sub(e.at) < groupsTTL {
		return e
	}
	e = procCaller(pid)
	e.at = now
	cs.mu.Lock()
	if cs.m == nil || len(cs.m) >= maxCachedCallers {
		cs.m = make(map[callerKey]cachedCaller)
	}
	cs.m[k] = e
	cs.mu.Unlock()
	return e
}

// procCaller reads the supplementary groups and the process of thread
// pid. A thread that has gone, or a kernel request (pid 0), has no groups
// (fewer groups can only deny, never grant, what the caller's uid and gid
// allow) and is its own process.
func procCaller(pid uint32) cachedCaller {
	c := cachedCaller{tgid: pid}
	if pid == 0 {
		return c
	}
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/status")
	if err != nil {
		return c
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 32); err == nil {
				c.tgid = uint32(n)
			}
		} else if rest, ok := strings.CutPrefix(line, "Groups:"); ok {
			c.groups = parseGroups(rest)
			break // Tgid comes before Groups
		}
	}
	return c
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
