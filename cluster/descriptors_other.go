//go:build !unix

package cluster

// nofileLimit: no such limit known here.
func nofileLimit() uint64 { return ^uint64(0) }
