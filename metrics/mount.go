package metrics

import (
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// MountStats is what a mount counts itself, read at scrape time.
type MountStats struct {
	ReadBytes, WriteBytes uint64 // data of read(2) and write(2) served
	WriteBehind           int64  // bytes written, not yet on the I/O servers
	// MemoryUsed is the part of the mount's memory budget (MemoryBudget
	// bytes) its buffers hold.
	MemoryUsed, MemoryBudget int64
	// UnlinksHere, SetattrsHere and CreatesHere count the unlinks,
	// attribute changes and creates the mount answered itself in
	// directories delegated to it, PendingHere those not yet applied by
	// the metadata server.
	UnlinksHere, SetattrsHere, CreatesHere, PendingHere uint64
	// Lease is what is left of the mount's cache lease (0: none).
	Lease time.Duration
	// OpenFiles counts the files open through the mount.
	OpenFiles int
}

// MountObserver counts a FUSE mount's requests by name (fusefs.OpObserver).
type MountObserver struct {
	ops     map[string]*fuseSeries // made in advance: lookups only
	other   *fuseSeries
	errors  *prometheus.CounterVec // kind
	byErrno map[syscall.Errno]prometheus.Counter
}

type fuseSeries struct {
	ok, failed prometheus.Counter
	duration   prometheus.Observer
}

// ObserveMount registers a mount's series: FUSE requests by name (ops,
// fusefs.FuseOps; other names share "other"), their latency and errnos,
// and the mount's own counters through stats. It returns the observer to
// give fusefs.Options.Observer. One mount per registry: a second call
// panics on the duplicate series.
func (r *Registry) ObserveMount(ops []string, stats func() MountStats) *MountObserver {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_fuse_requests_total", Help: "FUSE requests the mount answered, by request and result (ok, error).",
	}, []string{"op", "result"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pario_fuse_request_duration_seconds", Help: "Time the mount took to answer a FUSE request.",
		Buckets: latencyBuckets,
	}, []string{"op"})
	o := &MountObserver{
		ops: map[string]*fuseSeries{},
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pario_fuse_errors_total", Help: "FUSE requests answered with an error, by errno (ENOENT is a lookup of a missing name).",
		}, []string{"kind"}),
		byErrno: map[syscall.Errno]prometheus.Counter{},
	}
	series := func(op string) *fuseSeries {
		return &fuseSeries{
			ok:       requests.WithLabelValues(op, "ok"),
			failed:   requests.WithLabelValues(op, "error"),
			duration: duration.WithLabelValues(op),
		}
	}
	for _, op := range ops {
		o.ops[op] = series(op)
	}
	o.other = series("other")
	// The errnos a mount answers often, counted without a label lookup.
	for _, e := range []syscall.Errno{unix.ENOENT, unix.EEXIST, unix.EIO, unix.EACCES, unix.ENOTEMPTY, unix.ENODATA, unix.ESTALE, unix.ENOTSUP, unix.EINVAL, unix.ENOSPC} {
		o.byErrno[e] = o.errors.WithLabelValues(errnoName(e))
	}
	r.reg.MustRegister(requests, duration, o.errors,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pario_mount_write_behind_bytes", Help: "Bytes written through the mount and not yet on the I/O servers.",
		}, func() float64 { return float64(stats().WriteBehind) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pario_mount_memory_used_bytes", Help: "Bytes of the mount's memory budget (--memory) its write-behind buffers hold; writers wait while it is full.",
		}, func() float64 { return float64(stats().MemoryUsed) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pario_mount_memory_budget_bytes", Help: "The mount's memory budget (--memory).",
		}, func() float64 { return float64(stats().MemoryBudget) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pario_mount_read_bytes_total", Help: "Bytes the mount answered read requests with.",
		}, func() float64 { return float64(stats().ReadBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pario_mount_write_bytes_total", Help: "Bytes of write requests the mount accepted.",
		}, func() float64 { return float64(stats().WriteBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pario_mount_unlinks_here_total", Help: "Unlinks the mount answered itself in directories delegated to it, to send to the metadata server in batches.",
		}, func() float64 { return float64(stats().UnlinksHere) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pario_mount_setattrs_here_total", Help: "Attribute changes (chmod, utimens, mtime at close) of files made here that the mount answered itself in directories delegated to it, to send to the metadata server in batches.",
		}, func() float64 { return float64(stats().SetattrsHere) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pario_mount_creates_here_total", Help: "Creates the mount answered itself in directories delegated to it, with IDs the metadata server reserved for it, to send to the metadata server in batches.",
		}, func() float64 { return float64(stats().CreatesHere) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pario_mount_lease_seconds", Help: "What is left of the mount's cache lease; 0: it holds none (the metadata server unreachable), and every stat asks the servers.",
		}, func() float64 { return stats().Lease.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pario_mount_open_files", Help: "Files open through the mount, counting those closed whose release has not reached it or not finished yet.",
		}, func() float64 { return float64(stats().OpenFiles) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pario_mount_pending_here", Help: "Creates, unlinks and attribute changes answered by the mount and not yet applied by the metadata server.",
		}, func() float64 { return float64(stats().PendingHere) }),
	)
	return o
}

// FuseOp counts one FUSE request.
func (o *MountObserver) FuseOp(op string, d time.Duration, errno syscall.Errno) {
	s := o.ops[op]
	if s == nil {
		s = o.other
	}
	s.duration.Observe(d.Seconds())
	if errno == 0 {
		s.ok.Inc()
		return
	}
	s.failed.Inc()
	if c := o.byErrno[errno]; c != nil {
		c.Inc()
		return
	}
	o.errors.WithLabelValues(errnoName(errno)).Inc()
}
