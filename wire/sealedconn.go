package wire

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
)

// sealedConn is what DialRaw hands out: a connection whose user writes and
// reads plain frames (AppendFrame, ReadFrame) while the records on the
// socket are sealed. It works as the bytes stream, so that a test can send
// half a frame and stall, as a misbehaving client does. It trusts nothing
// in what it is given to write: a header announcing lengths over the
// limits is sealed and sent alone, and the server hangs up on it.
type sealedConn struct {
	net.Conn

	wmu  sync.Mutex
	send *half
	win  []byte     // plain bytes written, not yet a whole record
	wsec sealCursor // where the writer is in the frame being written

	rmu  sync.Mutex
	recv *half
	rout []byte     // plain bytes opened, not yet read
	rsec sealCursor // where the reader is in the frame being read
}

// sealCursor follows the sections of a frame: the size of the record that
// comes next.
type sealCursor struct {
	args, data int // bytes left in each section; both 0: a header comes next
}

func (c *sealCursor) next() int {
	switch {
	case c.args > 0:
		return c.args
	case c.data > 0:
		return min(c.data, recordSize)
	}
	return HeaderSize
}

// advance moves past the record p (plain bytes) of size c.next().
func (c *sealCursor) advance(p []byte) {
	switch {
	case c.args > 0:
		c.args = 0
	case c.data > 0:
		c.data -= len(p)
	default:
		c.args = int(binary.LittleEndian.Uint32(p[12:]))
		c.data = int(binary.LittleEndian.Uint32(p[16:]))
		if c.args > MaxArgLen || c.data > MaxDataLen {
			c.args, c.data = 0, 0
		}
	}
}

func newSealedConn(nc net.Conn, sess *session) *sealedConn {
	return &sealedConn{Conn: nc, send: sess.send, recv: sess.recv}
}

func (c *sealedConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.win = append(c.win, p...)
	var out []byte
	for k := c.wsec.next(); len(c.win) >= k; k = c.wsec.next() {
		var err error
		if out, err = c.send.seal(out, c.win[:k]); err != nil {
			return 0, err
		}
		c.wsec.advance(c.win[:k])
		c.win = c.win[k:]
	}
	c.win = append([]byte(nil), c.win...)
	if len(out) > 0 {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *sealedConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(c.rout) == 0 {
		k := c.rsec.next()
		rec := make([]byte, k+tagSize)
		if _, err := io.ReadFull(c.Conn, rec); err != nil {
			return 0, err
		}
		if err := c.recv.open(rec[:k], rec); err != nil {
			return 0, err
		}
		c.rsec.advance(rec[:k])
		c.rout = rec[:k]
	}
	n := copy(p, c.rout)
	c.rout = c.rout[n:]
	return n, nil
}
