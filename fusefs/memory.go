package fusefs

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// DefaultMemory is the mount's memory budget when Options.Memory is 0.
const DefaultMemory = 256 << 20

// memoryIdle is how long the mount must have no open file and no write in
// flight before it hands its free memory back to the operating system.
const memoryIdle = 2 * time.Second

// memBudget bounds the bytes the mount holds in write-behind buffers,
// over all open files. A writer that finds it full waits (as the kernel's
// dirty-page throttling does) rather than fail; one larger than the whole
// budget waits until nothing else holds any, then runs alone.
type memBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	used  int64
	peak  int64 // the most used at once
	limit int64
}

func newMemBudget(limit int64) *memBudget {
	b := &memBudget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire takes n bytes, waiting for room; it returns the bytes to give
// back to release (n, or the whole budget for a larger n), or ctx's error.
func (b *memBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, b.limit)
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		b.cond.Wait()
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return n, nil
}

// release gives back n bytes returned by acquire.
func (b *memBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *memBudget) inUse() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}

// idleFree returns the mount's free memory to the operating system once it
// has been idle (no open file, no write in flight) for memoryIdle. The Go
// runtime scavenges freed memory only slowly on its own, and sync.Pool
// keeps its buffers until two collections pass, which an idle process
// never runs: without this, the memory of the last large copy stays
// resident until the next one.
type idleFree struct {
	mu    sync.Mutex
	timer *time.Timer
	freed int // times memory was handed back (for tests)
}

// idle (re)starts the quiet period; busy stops it.
func (f *idleFree) idle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Reset(memoryIdle)
		return
	}
	f.timer = time.AfterFunc(memoryIdle, f.free)
}

func (f *idleFree) busy() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
	}
}

func (f *idleFree) free() {
	// Two collections empty sync.Pool (its victim cache too);
	// FreeOSMemory's own collection is the second.
	runtime.GC()
	debug.FreeOSMemory()
	f.mu.Lock()
	f.freed++
	f.mu.Unlock()
}

func (f *idleFree) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
	}
}

// MemoryLimit is the soft limit (debug.SetMemoryLimit) a process serving
// only a mount of budget bytes should run with: the budget plus headroom
// for the client's connection buffers, the kernel's requests in flight
// (MaxBackground of up to MaxIO each) and the runtime itself, so that
// the collector works harder as the process nears it instead of letting
// the heap double.
func MemoryLimit(budget int64) int64 {
	if budget <= 0 {
		budget = DefaultMemory
	}
	return budget + 64*MaxIO + 64<<20
}

// takeMemory takes n bytes of the mount's budget for a write-behind
// buffer, waiting at most OpTimeout for room (the writes holding it are
// each bounded by OpTimeout, so a longer wait means the servers are gone).
func (fsys *fileSystem) takeMemory(ctx context.Context, n int, path string) (int64, syscall.Errno) {
	ctx, cancel := fsys.ctxNoWait(ctx) // a write sends the metadata server nothing
	defer cancel()
	held, err := fsys.mem.acquire(ctx, int64(n))
	if err != nil {
		return 0, fsys.errno("write", path, fmt.Errorf("waiting for %d bytes of the mount's memory budget (%d): %w", n, fsys.mem.limit, err))
	}
	return held, 0
}

func (f *idleFree) releases() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.freed
}
