package fusefs

import "time"

// SetRemoveBatchDelay sets how long unlinks answered by the mount wait to
// be sent when nothing asks for them, and returns a func that restores it.
func SetRemoveBatchDelay(d time.Duration) (restore func()) {
	old := removeBatchDelay
	removeBatchDelay = d
	return func() { removeBatchDelay = old }
}

// SetDelegateAnswered makes f run when the metadata server has answered a
// request for a delegation, before the mount takes it.
func SetDelegateAnswered(f func()) (restore func()) {
	delegateAnswered.Store(&f)
	return func() { delegateAnswered.Store(nil) }
}
