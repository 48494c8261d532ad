package wire

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// Defaults of the limits that keep one misbehaving peer from starving a
// server. They are generous on purpose: a compute node running 128 ranks
// keeps a few connections per rank to every server.
const (
	DefaultMaxConnsPerPeer = 1024
	// DefaultMemoryBudget holds four of the largest frames, so that a
	// client stalled in the middle of one leaves room for the others.
	DefaultMemoryBudget = 4 * MaxDataLen
	DefaultFrameTimeout = 30 * time.Second
	// DefaultMinFrameRate is the slowest transfer a frame deadline allows
	// for: a 64 MiB frame gets 30 s + 64 s, enough on a congested link.
	DefaultMinFrameRate = 1 << 20
)

// maxSizedArgs bounds the argument section a server reads before it
// takes a request's memory from the budget, to ask an AnswerSizer the
// answer's size; larger ones are read after.
const maxSizedArgs = 4 << 10

// connMemory is what every authenticated connection holds whatever it
// does, counted in the server's memory budget for as long as it lives: its
// read buffer, and one argument section of up to maxSizedArgs bytes read
// before its request's memory is taken (with its sealed record).
var connMemory = readBufSize + maxSizedArgs + pooledSize(maxSizedArgs+tagSize)

// ConnMemory is the memory every authenticated connection holds while it
// lives, idle or not, and that its server counts in its memory budget
// (and in the budget's use, at rest too).
func ConnMemory() int64 { return connMemory }

// sealingShare is the part of a memory budget kept for sealing answers as
// they are written: a sixteenth, room for one sealing buffer at least
// (half the budget at most).
func sealingShare(budget int64) int64 {
	return min(max(budget/16, sealBufSize), budget/2)
}

// memoryUsage reports the memory budget's size and the bytes taken from
// it, its two parts together.
func (s *Server) memoryUsage() (total, used int64) {
	t1, u1 := s.budget.usage()
	t2, u2 := s.sealing.usage()
	return t1 + t2, u1 + u2
}

// frameDeadline is how long one frame of n bytes may take to cross the
// network: a fixed allowance plus n bytes at the slowest accepted rate.
func frameDeadline(fixed time.Duration, rate int64, n int) time.Time {
	return time.Now().Add(fixed + time.Duration(int64(n)*int64(time.Second)/rate))
}

// TemporaryAcceptError reports whether Accept failed for a reason that
// goes away by itself (out of descriptors or buffers, a connection reset
// before it was accepted): the server backs off and accepts again, as
// net/http does, instead of stopping for good.
func TemporaryAcceptError(err error) bool {
	for _, e := range []syscall.Errno{
		syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EAGAIN, syscall.EINTR,
		syscall.EPROTO, syscall.EPERM, syscall.ETIMEDOUT,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// PeerHost is the address part of a remote address: connections are
// counted per host, whatever their source port.
func PeerHost(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// LogLimiter lets a few warnings of one kind through per interval and
// counts the others, so that a flood of bad connections (which needs no
// secret) cannot flood the server's log or slow it down writing it.
type LogLimiter struct {
	every time.Duration
	burst int

	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

// NewLogLimiter lets five warnings through every ten seconds.
func NewLogLimiter() *LogLimiter { return &LogLimiter{every: 10 * time.Second, burst: 5} }

// Warn logs msg unless too many warnings went out in this interval. The
// first warning of a new interval says how many were left out.
func (l *LogLimiter) Warn(log *slog.Logger, msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.start) >= l.every {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.n++
	if l.suppressed > 0 {
		args = append(args, "suppressed_since_last", l.suppressed)
		l.suppressed = 0
	}
	l.mu.Unlock()
	log.Warn(msg, args...)
}
