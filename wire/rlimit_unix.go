//go:build unix

package wire

import "syscall"

// defaultMaxConns leaves a quarter of the descriptor limit to everything
// that is not a connection (datafiles, the database, listeners), so that
// the connection cap is reached before Accept fails with EMFILE.
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 4096
	}
	return int(max(16, min(rl.Cur/4*3, 65536)))
}
