//go:build unix

package cluster

import (
	"errors"
	"os"
	"syscall"
)

// haveFlock: this system has flock(2), so a cluster directory's lock says
// whether the process that wrote its cluster file still runs.
const haveFlock = true

// tryFlock takes f's flock (exclusive or shared) without waiting: false
// when another open file description holds a conflicting one.
func tryFlock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
}

func unflock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
