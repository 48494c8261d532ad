package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// durabilityCollector reads each metadata server's deferred durability
// at scrape time (server/meta/durable.go).
type durabilityCollector struct {
	mu      sync.Mutex
	servers map[string]func() (syncs, unsynced uint64, failed bool) // by server
}

var (
	syncsDesc = prometheus.NewDesc("pario_meta_syncs_total",
		"Checkpoints of the metadata database (an fdatasync of meta.db and of its checkpoint copy) since the server started.",
		[]string{"service", "server"}, nil)
	unsyncedDesc = prometheus.NewDesc("pario_meta_unsynced_transactions",
		"Answered metadata transactions not yet synced (a power cut would lose them; a kill -9 would not).",
		[]string{"service", "server"}, nil)
	syncFailedDesc = prometheus.NewDesc("pario_meta_sync_failed",
		"1 once a sync of meta.db has failed: the metadata server refuses every change until it is restarted.",
		[]string{"service", "server"}, nil)
)

// Durability remembers how to read a metadata server's deferred
// durability at scrape time (meta.Store's SyncStats). A server of the
// same name started again replaces the one before.
func (o *ServerObserver) Durability(stats func() (syncs, unsynced uint64, failed bool)) {
	c := &o.r.durability
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers == nil {
		c.servers = map[string]func() (uint64, uint64, bool){}
	}
	c.servers[o.server] = stats
}

func (c *durabilityCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncsDesc
	ch <- unsyncedDesc
	ch <- syncFailedDesc
}

func (c *durabilityCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for server, stats := range c.servers {
		syncs, unsynced, failed := stats()
		f := 0.0
		if failed {
			f = 1
		}
		ch <- prometheus.MustNewConstMetric(syncsDesc, prometheus.CounterValue, float64(syncs), "meta", server)
		ch <- prometheus.MustNewConstMetric(unsyncedDesc, prometheus.GaugeValue, float64(unsynced), "meta", server)
		ch <- prometheus.MustNewConstMetric(syncFailedDesc, prometheus.GaugeValue, f, "meta", server)
	}
}
