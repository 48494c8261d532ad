package metrics

// newEmulatedDisk reads what each I/O server's emulated disk charged for
// besides bytes (server/data/diskrate.go), at scrape time.
func newEmulatedDisk() scraped {
	return newScraped("data",
		counter("pario_data_emulated_seeks_total",
			"Datafile requests the emulated disk (pario up --disk-seek) charged a seek: they did not continue the last request on their datafile."),
		counter("pario_data_emulated_lock_revocations_total",
			"Extent locks writes took from other writers on the emulated disk (pario up --lock-revoke), each charged the revocation's time."),
	)
}

// EmulatedDisk remembers how to read an I/O server's emulated disk at
// scrape time (data.Store's DiskStats).
func (o *ServerObserver) EmulatedDisk(stats func() (seeks, revocations uint64)) {
	o.r.emulatedDisk.set(o.server, func() []float64 {
		seeks, revocations := stats()
		return []float64{float64(seeks), float64(revocations)}
	})
}
