package rank

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// link is one TCP connection between rank 0 and another rank, seen from
// either end. A writer goroutine sends queued messages, and heartbeats when
// idle; a reader goroutine hands incoming messages to the Comm.
type link struct {
	c    *Comm
	rank int // the rank at the other end
	host string
	pid  int
	conn net.Conn
	rd   *deadlineConn // under br; its timeout is set by start
	br   *bufio.Reader

	mu      sync.Mutex
	q       []outMsg
	closing bool // nothing more is queued; the writer half-closes when done
	wake    chan struct{}

	stopOnce   sync.Once
	stop       chan struct{}
	writerDone chan struct{}
	readerDone chan struct{}

	gone bool // rank 0: this rank said bye; guarded by c.mu
}

func newLink(c *Comm, rank int, host string, pid int, conn net.Conn, rd *deadlineConn, br *bufio.Reader) *link {
	return &link{
		c: c, rank: rank, host: host, pid: pid, conn: conn, rd: rd, br: br,
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
		readerDone: make(chan struct{}),
	}
}

func (l *link) start() {
	l.rd.timeout = l.c.timeout
	go l.writeLoop()
	go l.readLoop()
}

// send queues m; it is dropped once the link is closing.
func (l *link) send(m outMsg) {
	l.mu.Lock()
	if !l.closing {
		l.q = append(l.q, m)
	}
	l.mu.Unlock()
	l.poke()
}

// finish queues a last message (if any) and makes the writer half-close the
// connection once the queue is sent.
func (l *link) finish(last *outMsg) {
	l.mu.Lock()
	if !l.closing {
		if last != nil {
			l.q = append(l.q, *last)
		}
		l.closing = true
	}
	l.mu.Unlock()
	l.poke()
}

func (l *link) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// shutdown closes the connection, which ends both goroutines.
func (l *link) shutdown() {
	l.stopOnce.Do(func() {
		close(l.stop)
		l.conn.Close()
	})
}

var heartbeat = emptyMsg(msgHeartbeat)

func (l *link) writeLoop() {
	defer close(l.writerDone)
	w := bufio.NewWriterSize(&deadlineConn{c: l.conn, timeout: l.c.timeout}, 64<<10)
	tick := time.NewTicker(l.c.interval)
	defer tick.Stop()
	for {
		l.mu.Lock()
		q, closing := l.q, l.closing
		l.q = nil
		l.mu.Unlock()
		if len(q) > 0 {
			for _, m := range q {
				if err := writeFrame(w, m); err != nil {
					l.c.writeFailed(l, err)
					return
				}
			}
			if err := w.Flush(); err != nil {
				l.c.writeFailed(l, err)
				return
			}
			continue
		}
		if closing {
			if cw, ok := l.conn.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			return
		}
		select {
		case <-l.wake:
		case <-l.stop:
			return
		case <-tick.C:
			err := writeFrame(w, heartbeat)
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				l.c.writeFailed(l, err)
				return
			}
		}
	}
}

func (l *link) readLoop() {
	defer close(l.readerDone)
	for {
		typ, body, err := readFrame(l.br, maxFrame)
		if err != nil {
			l.c.readEnded(l, err)
			return
		}
		if err := l.c.handle(l, typ, body); err != nil {
			l.c.fail(&RankError{l.rank, l.host, l.pid, "protocol error: " + err.Error()}, l)
			l.shutdown()
			return
		}
	}
}

// describe words a connection error for "rank N (host:pid) died: ...".
func describe(err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("nothing heard for %v (heartbeat timeout)", timeout)
	}
	return err.Error()
}
