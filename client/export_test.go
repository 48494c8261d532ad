package client

// SetUsageBatchMax lowers the datafiles of one usage batch for a test.
func SetUsageBatchMax(n int) (restore func()) {
	old := usageBatchMax
	usageBatchMax = n
	return func() { usageBatchMax = old }
}
