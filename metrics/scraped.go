package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// scraped is a set of series read from each server of one service when
// Prometheus scrapes (a metadata server's reaper, its durability, its
// leases; an I/O server's unwritten datafiles), rather than counted as
// requests are served.
type scraped struct {
	service string
	series  []scrapedSeries
	mu      sync.Mutex
	servers map[string]func() []float64 // by server: one value per series
}

type scrapedSeries struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
}

func newScraped(service string, series ...scrapedSeries) scraped {
	return scraped{service: service, series: series}
}

// gauge and counter describe one series labelled by service and server.
func gauge(name, help string) scrapedSeries {
	return scrapedSeries{prometheus.NewDesc(name, help, []string{"service", "server"}, nil), prometheus.GaugeValue}
}

func counter(name, help string) scrapedSeries {
	return scrapedSeries{prometheus.NewDesc(name, help, []string{"service", "server"}, nil), prometheus.CounterValue}
}

// set remembers how to read server's values; a server of the same name
// started again replaces the one before.
func (c *scraped) set(server string, read func() []float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers == nil {
		c.servers = map[string]func() []float64{}
	}
	c.servers[server] = read
}

func (c *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.series {
		ch <- s.desc
	}
}

func (c *scraped) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for server, read := range c.servers {
		for i, v := range read() {
			s := c.series[i]
			ch <- prometheus.MustNewConstMetric(s.desc, s.kind, v, c.service, server)
		}
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
