package metrics

// newDurability reads each metadata server's deferred durability at
// scrape time (server/meta/durable.go).
func newDurability() scraped {
	return newScraped("meta",
		counter("pario_meta_syncs_total",
			"Checkpoints of the metadata database (an fdatasync of meta.db and of its checkpoint copy) since the server started."),
		gauge("pario_meta_unsynced_transactions",
			"Answered metadata transactions not yet synced (a power cut would lose them; a kill -9 would not)."),
		gauge("pario_meta_sync_failed",
			"1 once a sync of meta.db has failed: the metadata server refuses every change until it is restarted."),
	)
}

// Durability remembers how to read a metadata server's deferred
// durability at scrape time (meta.Store's SyncStats).
func (o *ServerObserver) Durability(stats func() (syncs, unsynced uint64, failed bool)) {
	o.r.durability.set(o.server, func() []float64 {
		syncs, unsynced, failed := stats()
		return []float64{float64(syncs), float64(unsynced), flag(failed)}
	})
}
