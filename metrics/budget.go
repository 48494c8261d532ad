package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// budgetCollector reads every observed server's memory budget at scrape
// time, so that taking and giving back memory (twice per request) costs
// nothing here.
type budgetCollector struct {
	r *Registry

	mu      sync.Mutex
	servers map[[2]string]func() (total, used int64) // by service, server
}

// add watches one server's budget. A server of the same name started again
// (a test's restart) replaces the one before.
func (c *budgetCollector) add(service, server string, usage func() (total, used int64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers == nil {
		c.servers = map[[2]string]func() (int64, int64){}
	}
	c.servers[[2]string{service, server}] = usage
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	c.r.budget.Describe(ch)
	c.r.budgetUsed.Describe(ch)
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	for k, usage := range c.servers {
		total, used := usage()
		c.r.budget.WithLabelValues(k[0], k[1]).Set(float64(total))
		c.r.budgetUsed.WithLabelValues(k[0], k[1]).Set(float64(used))
	}
	c.mu.Unlock()
	c.r.budget.Collect(ch)
	c.r.budgetUsed.Collect(ch)
}
