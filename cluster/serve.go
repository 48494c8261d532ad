package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
)

// What the server commands (`pario up`, `pario meta`, `pario data`) share
// beyond starting servers: checks of their flags, the settings a cluster
// file gives, the run until a signal, the report.

// UpPorts checks `pario up`'s --servers, --port and --layout together and
// returns the ports of the metadata server and each I/O server (nil: any
// free ports, port 0). Errors name the flag at fault.
func UpPorts(servers, port int, layout dist.Layout, layoutText string) ([]int, error) {
	// Start takes 0 for its default of 4; a user's 0 or -1 is a mistake,
	// not a request for 4.
	if servers < 1 {
		return nil, fmt.Errorf("--servers %d: want at least 1 I/O server", servers)
	}
	// Checked against --servers before anything starts (the metadata
	// server would refuse it once its directory exists).
	if !layout.IsZero() {
		if _, err := layout.Build(servers); err != nil {
			return nil, fmt.Errorf("--layout %s with --servers %d: %w", layoutText, servers, err)
		}
	}
	// The servers take --port and the --servers ports after it: all must
	// be ports, or the error would name an I/O server and a port the user
	// never typed.
	if port != 0 && (port < 1 || port+servers > 65535) {
		return nil, fmt.Errorf("--port %d: the metadata server and %d I/O servers take ports %d to %d; want a first port from 1 to %d", port, servers, port, port+servers, 65535-servers)
	}
	if err := CheckServerCount(servers); err != nil {
		return nil, fmt.Errorf("--servers %d: %w", servers, err)
	}
	if port == 0 {
		return nil, nil
	}
	ports := make([]int, servers+1)
	for i := range ports {
		ports[i] = port + i
	}
	return ports, nil
}

// WriteSummary prints where the cluster's servers listen, where their
// data is and how to find the cluster file: what `pario up` prints once
// it is up. With hint, it says how to point other commands at the file
// (not needed for the default data directory, which they look in).
func (l *Local) WriteSummary(w io.Writer, hint bool) {
	fmt.Fprintf(w, "pario cluster up: metadata server %s, %d I/O servers\n", l.Meta.Addr, len(l.Data))
	for _, d := range l.Data {
		fmt.Fprintf(w, "  %-8s %s  %s\n", d.Name, d.Addr, filepath.Join(l.Dir, d.Name))
	}
	fmt.Fprintf(w, "cluster file: %s\n", l.ClusterFile)
	if hint {
		fmt.Fprintf(w, "use it with:  export PARIO_CLUSTER=%s\n", l.ClusterFile)
	}
}

// ServerSettings are what a server run from a cluster file takes from it:
// its connection limits (where the flags left them at 0), its wire
// protection, its emulated cluster and whether root is squashed. A nil
// file (servers configured by flags) gives the flags' limits and the
// defaults.
func ServerSettings(f *File, flags Limits) (Limits, wire.Protection, Emulation, bool) {
	if f == nil {
		return flags, wire.ProtectAEAD, Emulation{}, false
	}
	if flags.MaxConns == 0 {
		flags.MaxConns = f.Limits.MaxConns
	}
	if flags.MaxConnsPerPeer == 0 {
		flags.MaxConnsPerPeer = f.Limits.MaxConnsPerPeer
	}
	return flags, f.Protection, f.Emulation, !f.NoRootSquash
}

// DataAddr is the address of the I/O server the file names name.
func (f *File) DataAddr(name string) (string, bool) {
	for _, d := range f.Data {
		if d.Name == name {
			return d.Addr, true
		}
	}
	return "", false
}

// Listener opens a server's listener (net.Listen; tests give one that fails).
type Listener func(network, addr string) (net.Listener, error)

// RunMeta runs a metadata server on addr until ctx ends (a signal), then
// closes it; see ServeUntilDone.
func RunMeta(ctx context.Context, listen Listener, addr string, cfg MetaServerConfig) error {
	ln, err := listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metadata server: %w", err)
	}
	ms, err := StartMetaServer(ctx, ln, cfg)
	if err != nil {
		ln.Close()
		if ctx.Err() != nil {
			return nil // stopped while starting (a signal), as it would have been later
		}
		return err
	}
	LimitHeap(wire.DefaultMemoryBudget)
	logger(cfg.Logger).Info("metadata server listening", "addr", ms.Addr, "io_servers", len(cfg.Data), "pid", os.Getpid())
	return ServeUntilDone(ctx, ms)
}

// RunData runs an I/O server on addr until ctx ends (a signal), then
// closes it; see ServeUntilDone.
func RunData(ctx context.Context, listen Listener, addr string, cfg DataServerConfig) error {
	ln, err := listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("I/O server %s: %w", cfg.Name, err)
	}
	ds, err := StartDataServer(ctx, ln, cfg)
	if err != nil {
		ln.Close()
		if ctx.Err() != nil {
			return nil // stopped while starting (a signal), as it would have been later
		}
		return err
	}
	LimitHeap(cmp.Or(cfg.MemoryBudget, wire.DefaultMemoryBudget))
	logger(cfg.Logger).Info("I/O server listening", "name", cfg.Name, "addr", ds.Addr, "dir", cfg.Dir, "pid", os.Getpid())
	return ServeUntilDone(ctx, ds)
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// ServeUntilDone runs until ctx ends (a signal) and then closes the
// server, or until the server stops accepting on its own: then it returns
// the error, and the command exits non-zero instead of staying up deaf.
func ServeUntilDone(ctx context.Context, srv interface {
	Running
	Close() error
}) error {
	if err := WaitServing(ctx, srv); err != nil {
		return errors.Join(err, srv.Close())
	}
	return srv.Close()
}

// LimitHeap sets the Go runtime's soft memory limit to the servers' memory
// budgets less the program's own resident pages (ProgramPages), unless
// GOMEMLIMIT is set, so that the process stays resident within its
// budget. The budgets bound the request and answer data held at once;
// without a limit the garbage collector lets the heap grow to twice what
// is live (a server at half its budget of live buffers was resident at
// 265-285 MiB of 256 in scripts/soak.sh with the limit at the budget
// plus a quarter).
func LimitHeap(budgets int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(HeapLimit(budgets))
	}
}

// ProgramPages is what a server process is resident in besides the Go
// runtime's memory: the pages of its executable and shared libraries
// (RssFile, about 20 MiB).
const ProgramPages = 32 << 20

// HeapLimit is the soft memory limit for servers with these budgets: the
// budgets less ProgramPages, and never under half of them.
func HeapLimit(budgets int64) int64 {
	return max(budgets-ProgramPages, budgets/2)
}
