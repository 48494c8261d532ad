package client

// SetUsageBatchMax lowers the datafiles of one usage batch for a test.
func SetUsageBatchMax(n int) (restore func()) {
	old := usageBatchMax
	usageBatchMax = n
	return func() { usageBatchMax = old }
}

// SetHook runs fn at the named point of the File's calls (see testHook).
func SetHook(point string, fn func()) (restore func()) {
	h := func(p string) {
		if p == point {
			fn()
		}
	}
	old := testHook.Swap(&h)
	return func() { testHook.Store(old) }
}
