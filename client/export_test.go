package client

// SetUsageBatchMax lowers the datafiles of one usage batch for a test.
func SetUsageBatchMax(n int) (restore func()) {
	old := usageBatchMax
	usageBatchMax = n
	return func() { usageBatchMax = old }
}

// SetShortReadHook runs fn in every read that came back short on some
// datafile, before the file's size is asked: tests change the file there.
func SetShortReadHook(fn func()) (restore func()) {
	old := shortReadHook.Swap(&fn)
	return func() { shortReadHook.Store(old) }
}
