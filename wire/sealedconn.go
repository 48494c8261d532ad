package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
)

// sealedConn is what DialRaw hands out: a connection whose user writes and
// reads plain frames (AppendFrame, ReadFrame) while the records on the
// socket are sealed. It writes as the bytes stream, so that a test can send
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
	rout []byte // the plain frame opened last, what is not yet read of it
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

// Read hands out the frames that arrive as plain frames, with the payload
// CRC32C that ReadFrame checks filled in (sealed frames carry none): it
// opens a whole frame before it gives out its first byte.
func (c *sealedConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(c.rout) == 0 {
		h, err := c.recv.readHeader(c.Conn)
		if errors.Is(err, io.EOF) {
			return 0, io.EOF // the peer closed between frames: a clean end
		}
		if err != nil {
			return 0, err
		}
		args := make([]byte, h.ArgLen)
		if err := c.recv.readArgs(c.Conn, args); err != nil {
			return 0, err
		}
		data := make([]byte, h.DataLen)
		if _, err := c.recv.readData(c.Conn, len(data), [][]byte{data}); err != nil {
			return 0, err
		}
		c.rout = AppendFrame(nil, h.Op, h.Flags, h.ReqID, args, [][]byte{data})
	}
	n := copy(p, c.rout)
	c.rout = c.rout[n:]
	return n, nil
}
