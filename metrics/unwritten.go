package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// unwrittenCollector reads each I/O server's unwritten datafiles at
// scrape time (server/data/unwritten.go).
type unwrittenCollector struct {
	mu      sync.Mutex
	servers map[string]func() (count uint64, logBytes int64, broken bool) // by server
}

var (
	unwrittenDesc = prometheus.NewDesc("pario_data_unwritten_datafiles",
		"Datafiles made but never written: records in the I/O server's UNWRITTEN log, held in its memory, no file yet.",
		[]string{"service", "server"}, nil)
	unwrittenLogDesc = prometheus.NewDesc("pario_data_unwritten_log_bytes",
		"Bytes of the I/O server's UNWRITTEN log (rewritten with what is live once it grows past four times that).",
		[]string{"service", "server"}, nil)
	unwrittenBrokenDesc = prometheus.NewDesc("pario_data_unwritten_log_broken",
		"1 once an append to the UNWRITTEN log failed and could not be undone: the I/O server refuses every create until it is restarted.",
		[]string{"service", "server"}, nil)
)

// Unwritten remembers how to read an I/O server's unwritten datafiles at
// scrape time (data.Store's UnwrittenStats). A server of the same name
// started again replaces the one before.
func (o *ServerObserver) Unwritten(stats func() (count uint64, logBytes int64, broken bool)) {
	c := &o.r.unwritten
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers == nil {
		c.servers = map[string]func() (uint64, int64, bool){}
	}
	c.servers[o.server] = stats
}

func (c *unwrittenCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- unwrittenDesc
	ch <- unwrittenLogDesc
	ch <- unwrittenBrokenDesc
}

func (c *unwrittenCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for server, stats := range c.servers {
		count, logBytes, broken := stats()
		b := 0.0
		if broken {
			b = 1
		}
		ch <- prometheus.MustNewConstMetric(unwrittenDesc, prometheus.GaugeValue, float64(count), "data", server)
		ch <- prometheus.MustNewConstMetric(unwrittenLogDesc, prometheus.GaugeValue, float64(logBytes), "data", server)
		ch <- prometheus.MustNewConstMetric(unwrittenBrokenDesc, prometheus.GaugeValue, b, "data", server)
	}
}
