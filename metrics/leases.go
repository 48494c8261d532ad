package metrics

// newLeases reads each metadata server's cache leases and directory
// delegations at scrape time (server/meta/watch.go, deleg.go).
func newLeases() scraped {
	return newScraped("meta",
		gauge("pario_meta_leases",
			"Mounts holding a cache lease: each must acknowledge every change before the change is answered."),
		gauge("pario_meta_delegations",
			"Directories delegated to a mount, whose unlinks that mount answers itself."),
		counter("pario_meta_recalls_total",
			"Delegations recalled because another client reached the directory."),
		counter("pario_meta_recalls_lapsed_total",
			"Recalls that ended with the holder's lease instead of its answer: a mount that died or hung made another client's request wait up to the lease."),
		counter("pario_meta_recall_wait_seconds_total",
			"Time requests waited for delegations to be recalled."),
	)
}

// Leases remembers how to read a metadata server's leases and
// delegations at scrape time (meta.Store's LeaseStats, as plain values so
// that this package need not import the server).
func (o *ServerObserver) Leases(stats func() (leases, delegations int, recalls, lapsed uint64, waitSeconds float64)) {
	o.r.leases.set(o.server, func() []float64 {
		leases, delegations, recalls, lapsed, wait := stats()
		return []float64{float64(leases), float64(delegations), float64(recalls), float64(lapsed), wait}
	})
}
