//go:build unix

package medic

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes f's exclusive flock, waiting for it. The kernel lets go
// of it when the process dies, however it dies.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// tryLockFile takes f's exclusive flock if nobody holds it.
func tryLockFile(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
