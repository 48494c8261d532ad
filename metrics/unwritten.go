package metrics

// newUnwritten reads each I/O server's unwritten datafiles at scrape
// time (server/data/unwritten.go).
func newUnwritten() scraped {
	return newScraped("data",
		gauge("pario_data_unwritten_datafiles",
			"Datafiles made but never written: records in the I/O server's UNWRITTEN log, held in its memory, no file yet."),
		gauge("pario_data_unwritten_log_bytes",
			"Bytes of the I/O server's UNWRITTEN log (rewritten with what is live once it grows past four times that)."),
		gauge("pario_data_unwritten_log_broken",
			"1 once an append to the UNWRITTEN log failed and could not be undone: the I/O server refuses every create until it is restarted."),
	)
}

// Unwritten remembers how to read an I/O server's unwritten datafiles at
// scrape time (data.Store's UnwrittenStats).
func (o *ServerObserver) Unwritten(stats func() (count uint64, logBytes int64, broken bool)) {
	o.r.unwritten.set(o.server, func() []float64 {
		count, logBytes, broken := stats()
		return []float64{float64(count), float64(logBytes), flag(broken)}
	})
}
