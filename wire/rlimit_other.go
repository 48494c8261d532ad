//go:build !unix

package wire

func defaultMaxConns() int { return 4096 }
