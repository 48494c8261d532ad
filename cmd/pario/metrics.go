package main

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/metrics"
)

// metricsFlags are --metrics and --metrics-allow-remote of the server
// commands and the mount.
type metricsFlags struct {
	addr        string
	allowRemote bool
	reg         *metrics.Registry // set by start when --metrics is given
}

func (m *metricsFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&m.addr, "metrics", "", "serve Prometheus metrics on http://ADDR/metrics and Go's pprof on http://ADDR/debug/pprof/ (e.g. 127.0.0.1:9100; port 0: any free port, printed)")
	f.BoolVar(&m.allowRemote, "metrics-allow-remote", false, "let --metrics listen on an address other hosts can reach (pprof shows the process's memory and command line to anyone who connects)")
}

// start serves the metrics endpoint when --metrics was given, and says
// where on stdout (the line tests and scripts look for). The returned
// function stops it.
func (m *metricsFlags) start(log *slog.Logger) (stop func(), err error) {
	if m.addr == "" {
		if m.allowRemote {
			return nil, usageError{fmt.Errorf("--metrics-allow-remote goes with --metrics")}
		}
		return func() {}, nil
	}
	// A mistake in the flag, not a failure: exit status 2, as for every
	// flag (a port in use is a failure).
	if err := metrics.CheckAddr(m.addr, m.allowRemote); err != nil {
		return nil, usageError{fmt.Errorf("--metrics: %w", err)}
	}
	m.reg = metrics.New()
	e, err := metrics.Listen(m.addr, m.allowRemote, m.reg, log)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	fmt.Printf("metrics: http://%s/metrics  pprof: http://%s/debug/pprof/\n", e.Addr, e.Addr)
	return func() { e.Close() }, nil
}

// observe is the servers' observer maker (nil without --metrics).
func (m *metricsFlags) observe() cluster.Observe {
	if m.reg == nil {
		return nil
	}
	return m.reg.ObserveServer
}

// observeClient sets a client's observer (nothing without --metrics).
func (m *metricsFlags) observeClient(o *client.Options) {
	if m.reg != nil {
		o.Observe = m.reg.ObserveClient
	}
}

// observeMount sets the mount's observer (nothing without --metrics). The
// mount's own counters are read through the returned function's argument,
// once the file system is mounted.
func (m *metricsFlags) observeMount(opts *fusefs.Options) (mounted func(*fusefs.Server)) {
	var srv atomic.Pointer[fusefs.Server]
	if m.reg != nil {
		opts.Observer = m.reg.ObserveMount(fusefs.FuseOps, func() metrics.MountStats {
			s := srv.Load()
			if s == nil {
				return metrics.MountStats{}
			}
			st := s.Stats()
			return metrics.MountStats{
				ReadBytes: st.ReadBytes, WriteBytes: st.WriteBytes, WriteBehind: st.WriteBehind,
				MemoryUsed: st.MemoryUsed, MemoryBudget: st.MemoryBudget,
				UnlinksHere: st.UnlinksHere, SetattrsHere: st.SetattrsHere, CreatesHere: st.CreatesHere, PendingHere: st.PendingHere,
				Lease: st.Lease, OpenFiles: st.OpenFiles,
			}
		})
	}
	return srv.Store
}
