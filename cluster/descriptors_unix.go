//go:build unix

package cluster

import "syscall"

// nofileLimit is this process's limit on open descriptors (Go raises the
// soft limit to the hard one at start).
func nofileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return ^uint64(0)
	}
	return rl.Cur
}
