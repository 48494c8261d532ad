package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// removalCollector reads each metadata server's datafile reaper at scrape
// time (server/meta/reaper.go).
type removalCollector struct {
	mu      sync.Mutex
	servers map[string]func() (pending int64, reaped uint64) // by server
}

var (
	pendingRemovalsDesc = prometheus.NewDesc("pario_meta_pending_removals",
		"Removed files whose datafiles the metadata server has still to remove (an I/O server down, or not got to yet).",
		[]string{"service", "server"}, nil)
	reapedDesc = prometheus.NewDesc("pario_meta_reaped_datafiles_total",
		"Datafiles of removed files the metadata server has removed since it started.",
		[]string{"service", "server"}, nil)
)

// Removals remembers how to read a metadata server's reaper at scrape
// time: removal records pending and datafiles removed (meta.Store's
// RemovalStats). A server of the same name started again replaces the
// one before.
func (o *ServerObserver) Removals(stats func() (pending int64, reaped uint64)) {
	c := &o.r.removals
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers == nil {
		c.servers = map[string]func() (int64, uint64){}
	}
	c.servers[o.server] = stats
}

func (c *removalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingRemovalsDesc
	ch <- reapedDesc
}

func (c *removalCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for server, stats := range c.servers {
		pending, reaped := stats()
		ch <- prometheus.MustNewConstMetric(pendingRemovalsDesc, prometheus.GaugeValue, float64(pending), "meta", server)
		ch <- prometheus.MustNewConstMetric(reapedDesc, prometheus.CounterValue, float64(reaped), "meta", server)
	}
}
