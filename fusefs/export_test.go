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

// Releasing counts the releases under way: begun, still waiting for
// their files' writes in flight.
func (m *Server) Releasing() int {
	m.fsys.mu.Lock()
	defer m.fsys.mu.Unlock()
	n := 0
	for _, of := range m.fsys.open {
		n += of.releasing
	}
	return n
}

// SetWriteBehindSending makes f run before each write-behind write is
// sent to the I/O servers.
func SetWriteBehindSending(f func()) (restore func()) {
	writeBehindSending.Store(&f)
	return func() { writeBehindSending.Store(nil) }
}
