package metrics

// newRemovals reads each metadata server's datafile reaper at scrape
// time (server/meta/reaper.go).
func newRemovals() scraped {
	return newScraped("meta",
		gauge("pario_meta_pending_removals",
			"Removed files whose datafiles the metadata server has still to remove (an I/O server down, or not got to yet)."),
		counter("pario_meta_reaped_datafiles_total",
			"Datafiles of removed files the metadata server has removed since it started."),
	)
}

// Removals remembers how to read a metadata server's reaper at scrape
// time: removal records pending and datafiles removed (meta.Store's
// RemovalStats).
func (o *ServerObserver) Removals(stats func() (pending int64, reaped uint64)) {
	o.r.removals.set(o.server, func() []float64 {
		pending, reaped := stats()
		return []float64{float64(pending), float64(reaped)}
	})
}
