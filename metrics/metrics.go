// Package metrics exposes what pario's servers and clients do as
// Prometheus metrics: requests, bytes and latency per op, requests in
// flight, memory budget use, connections and errors by kind, and the Go
// runtime's and the process's own. It implements the wire package's
// observer hooks (wire.ServerObserver, wire.CallObserver) and serves
// /metrics and /debug/pprof/ on one address (Listen), the address of a
// command's --metrics flag.
//
// Labels are bounded: service ("meta", "data"), server (a name from the
// cluster file), op (a name from the service's op table), and small fixed
// sets of results, directions, reasons and error kinds. Every series a
// request touches is looked up once, when its server is observed, so the
// serving path does atomic adds and nothing else.
package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sys/unix"

	"github.com/pario/pario/wire"
)

// latencyBuckets span a cached metadata lookup (tens of microseconds) to a
// request that waited on a busy disk or a retry (seconds).
var latencyBuckets = []float64{
	.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10,
}

// Registry holds one process's metrics. The zero value is not usable: make
// one with New.
type Registry struct {
	reg *prometheus.Registry

	requests   *prometheus.CounterVec   // service, server, op, result
	duration   *prometheus.HistogramVec // service, server, op
	bytes      *prometheus.CounterVec   // service, server, op, direction
	inFlight   *prometheus.GaugeVec     // service, server
	conns      *prometheus.GaugeVec     // service, server
	refused    *prometheus.CounterVec   // service, server, reason
	errs       *prometheus.CounterVec   // service, server, kind
	budget     *prometheus.GaugeVec     // service, server: filled at scrape
	budgetUsed *prometheus.GaugeVec

	clientRequests *prometheus.CounterVec   // service, server, op, result
	clientDuration *prometheus.HistogramVec // service, server, op
	clientBytes    *prometheus.CounterVec   // service, server, op, direction
	clientErrs     *prometheus.CounterVec   // service, server, kind

	budgets budgetCollector
	// Read from the servers at scrape time: the metadata servers' datafile
	// reapers, deferred durability, leases and delegations; the I/O
	// servers' unwritten datafiles and emulated disks.
	removals, durability, leases, unwritten, emulatedDisk scraped
}

// New returns a registry with pario's metrics and the Go runtime and
// process collectors.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry()}
	server := []string{"service", "server"}
	op := []string{"service", "server", "op"}
	with := func(names []string, more ...string) []string { return append(append([]string(nil), names...), more...) }
	r.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_requests_total", Help: "Requests served, by op and result (ok, error).",
	}, with(op, "result"))
	r.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pario_request_duration_seconds", Help: "Time from a request's arrival (its body read) to its answer written.",
		Buckets: latencyBuckets,
	}, op)
	r.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_request_bytes_total", Help: "Bytes of requests (in) and answers (out), arguments and data.",
	}, with(op, "direction"))
	r.inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pario_requests_in_flight", Help: "Requests whose handler is running or whose answer is being written.",
	}, server)
	r.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pario_connections", Help: "Connections being served (authenticating or authenticated).",
	}, server)
	r.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_connections_refused_total", Help: "Connections turned away: at a cap (max-conns, max-conns-per-peer), or penalized (a network whose unauthenticated connections kept being evicted).",
	}, with(server, "reason"))
	r.errs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_errors_total",
		Help: "Errors by kind: accept, auth, handshake, frame, frame_auth, crc, timeout, evicted (connections and frames), or the errno a request was answered with (ENOENT, EIO, ...).",
	}, with(server, "kind"))
	r.budget = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pario_memory_budget_bytes", Help: "The server's memory budget for request data and announced answers.",
	}, server)
	r.budgetUsed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pario_memory_budget_used_bytes", Help: "Bytes of the memory budget held right now: by requests, their answers and the buffers they go through, and by every authenticated connection.",
	}, server)
	r.clientRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_client_requests_total", Help: "Calls this client made to each server, retries included in one call, by op and result.",
	}, with(op, "result"))
	r.clientDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pario_client_request_duration_seconds", Help: "Time of a call to a server as this client saw it, retries included.",
		Buckets: latencyBuckets,
	}, op)
	r.clientBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_client_request_bytes_total", Help: "Bytes this client sent (out) and received (in), by server and op.",
	}, with(op, "direction"))
	r.clientErrs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pario_client_errors_total",
		Help: "Failed calls by kind: the server's errno (ENOENT, EIO, ...), conn (the connection broke), dial (no connection), timeout, canceled.",
	}, with(server, "kind"))
	r.budgets.r = r
	r.removals, r.durability, r.leases, r.unwritten, r.emulatedDisk = newRemovals(), newDurability(), newLeases(), newUnwritten(), newEmulatedDisk()
	r.reg.MustRegister(
		r.requests, r.duration, r.bytes, r.inFlight, r.conns, r.refused, r.errs, &r.budgets, &r.removals, &r.durability, &r.leases, &r.unwritten, &r.emulatedDisk,
		r.clientRequests, r.clientDuration, r.clientBytes, r.clientErrs,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return r
}

// Gatherer is the registry's content, for the HTTP handler and tests.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// MustRegister adds collectors of the caller's own (the mount's).
func (r *Registry) MustRegister(cs ...prometheus.Collector) { r.reg.MustRegister(cs...) }

// opSeries are the series of one op of one server, looked up once.
type opSeries struct {
	ok, failed prometheus.Counter
	duration   prometheus.Observer
	in, out    prometheus.Counter
}

// opTable holds every op's series by code; codes outside the op table
// share the "unknown" op's, so a client sending junk codes adds no series.
type opTable [256]*opSeries

func newOpTable(ops wire.OpTable, series func(op string) *opSeries) *opTable {
	var t opTable
	unknown := series("unknown")
	for i := range t {
		t[i] = unknown
	}
	for _, o := range ops {
		t[o.Code] = series(o.Name)
	}
	return &t
}

// ServerObserver is one server's wire.ServerObserver.
type ServerObserver struct {
	r               *Registry
	service, server string
	ops             *opTable
	inFlight, conns prometheus.Gauge
	refused         map[string]prometheus.Counter // by reason
	kinds           map[string]prometheus.Counter // the wire's error kinds
}

// ObserveServer returns the observer of one server: service "meta" or
// "data", the server's name, the service's op table. Its signature is
// cluster.Observe's, so cluster.Config{Observe: reg.ObserveServer} works.
func (r *Registry) ObserveServer(service, server string, ops wire.OpTable) wire.ServerObserver {
	o := &ServerObserver{
		r: r, service: service, server: server,
		inFlight: r.inFlight.WithLabelValues(service, server),
		conns:    r.conns.WithLabelValues(service, server),
		refused:  map[string]prometheus.Counter{},
		kinds:    map[string]prometheus.Counter{},
	}
	for _, reason := range []string{wire.RefusedMaxConns, wire.RefusedMaxConnsPerPeer, wire.RefusedPenalized} {
		o.refused[reason] = r.refused.WithLabelValues(service, server, reason)
	}
	for _, k := range []string{wire.ErrKindAccept, wire.ErrKindAuth, wire.ErrKindHandshake, wire.ErrKindFrame, wire.ErrKindFrameAuth, wire.ErrKindCRC, wire.ErrKindTimeout, wire.ErrKindEvicted} {
		o.kinds[k] = r.errs.WithLabelValues(service, server, k)
	}
	o.ops = newOpTable(ops, func(op string) *opSeries {
		return &opSeries{
			ok:       r.requests.WithLabelValues(service, server, op, "ok"),
			failed:   r.requests.WithLabelValues(service, server, op, "error"),
			duration: r.duration.WithLabelValues(service, server, op),
			in:       r.bytes.WithLabelValues(service, server, op, "in"),
			out:      r.bytes.WithLabelValues(service, server, op, "out"),
		}
	})
	return o
}

// Budget remembers how to read the server's budget at scrape time.
func (o *ServerObserver) Budget(usage func() (total, used int64)) {
	o.r.budgets.add(o.service, o.server, usage)
}

func (o *ServerObserver) ConnAccepted() { o.conns.Inc() }
func (o *ServerObserver) ConnClosed()   { o.conns.Dec() }

func (o *ServerObserver) ConnRefused(reason string) {
	if c, ok := o.refused[reason]; ok {
		c.Inc()
		return
	}
	o.r.refused.WithLabelValues(o.service, o.server, reason).Inc()
}

func (o *ServerObserver) RequestStarted(uint8) { o.inFlight.Inc() }

// RequestDone counts the request before it leaves the in-flight gauge, so
// that a scrape showing nothing in flight shows every request counted.
func (o *ServerObserver) RequestDone(op uint8, in, out int, d time.Duration, err error) {
	defer o.inFlight.Dec()
	s := o.ops[op]
	s.duration.Observe(d.Seconds())
	s.in.Add(float64(in))
	s.out.Add(float64(out))
	if err == nil {
		s.ok.Inc()
		return
	}
	s.failed.Inc()
	o.r.errs.WithLabelValues(o.service, o.server, errnoName(wire.ErrnoOf(err))).Inc()
}

func (o *ServerObserver) Error(kind string) {
	if c, ok := o.kinds[kind]; ok {
		c.Inc()
		return
	}
	o.r.errs.WithLabelValues(o.service, o.server, kind).Inc()
}

// errnoName is "ENOENT" for ENOENT: a bounded label. A number the system
// has no name for is "errno_other": a server answers with any 32-bit
// errno it likes, and one label per number would let it grow a client's
// (a mount's) series without bound.
func errnoName(e unix.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno_other"
}

// clientObserver is the wire.CallObserver of one client endpoint.
type clientObserver struct {
	r               *Registry
	service, server string
	ops             *opTable
}

// ObserveClient returns the observer of a client's calls to one server;
// its signature is client.Options.Observe's.
func (r *Registry) ObserveClient(service, server string, ops wire.OpTable) wire.CallObserver {
	return &clientObserver{r: r, service: service, server: server, ops: newOpTable(ops, func(op string) *opSeries {
		return &opSeries{
			ok:       r.clientRequests.WithLabelValues(service, server, op, "ok"),
			failed:   r.clientRequests.WithLabelValues(service, server, op, "error"),
			duration: r.clientDuration.WithLabelValues(service, server, op),
			in:       r.clientBytes.WithLabelValues(service, server, op, "in"),
			out:      r.clientBytes.WithLabelValues(service, server, op, "out"),
		}
	})}
}

func (o *clientObserver) CallDone(op uint8, sent, received int, d time.Duration, err error) {
	s := o.ops[op]
	s.duration.Observe(d.Seconds())
	s.out.Add(float64(sent))
	s.in.Add(float64(received))
	if err == nil {
		s.ok.Inc()
		return
	}
	s.failed.Inc()
	o.r.clientErrs.WithLabelValues(o.service, o.server, callErrorKind(err)).Inc()
}

// callErrorKind names why a call failed: the server's errno when it
// answered, else what happened to the transport.
func callErrorKind(err error) string {
	var (
		remote *wire.RemoteError
		dial   *wire.DialError
		conn   *wire.ConnError
	)
	switch {
	case errors.As(err, &remote):
		return errnoName(remote.Errno)
	case errors.Is(err, wire.ErrAuth):
		return "auth"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, unix.ETIMEDOUT):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &dial):
		return "dial"
	case errors.As(err, &conn):
		return "conn"
	}
	return errnoName(wire.ErrnoOf(err))
}
