package rank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"
)

// Message types (see the package documentation).
const (
	msgHello     = 1 // rank -> 0: magic, version, job, size, rank, host, pid
	msgWelcome   = 2 // 0 -> rank: host, pid, heartbeat interval, timeout (ns)
	msgReject    = 3 // 0 -> rank: reason
	msgHeartbeat = 4 // either way, empty
	msgContrib   = 5 // rank -> 0: seq, kind, op, root, data (rest of frame)
	msgResult    = 6 // 0 -> rank: seq, data (rest of frame)
	msgAbort     = 7 // either way: rank, host, pid, reason
	msgBye       = 8 // rank -> 0: Close
	msgShutdown  = 9 // 0 -> rank: Close
)

const (
	helloMagic   = "PARIORNK"
	protoVersion = 1
	// maxHello bounds the frames read before a peer is known.
	maxHello = 64 << 10
	// maxFrame bounds every later frame (a Gather's result at its root is
	// the largest).
	maxFrame = 1 << 40
)

// outMsg is a frame to send: head (length prefix, type and fixed fields)
// then payload, which is never modified once queued.
type outMsg struct {
	head    []byte
	payload []byte
}

// enc builds a frame head. The length prefix is filled in by msg.
type enc struct{ b []byte }

func newEnc(typ byte) *enc {
	e := &enc{b: make([]byte, 9, 64)}
	e.b[8] = typ
	return e
}

func (e *enc) u8(v byte)    { e.b = append(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) str(s string) {
	e.u64(uint64(len(s)))
	e.b = append(e.b, s...)
}

// msg finishes the frame with payload as its tail.
func (e *enc) msg(payload []byte) outMsg {
	binary.LittleEndian.PutUint64(e.b[:8], uint64(len(e.b)-8+len(payload)))
	return outMsg{head: e.b, payload: payload}
}

// dec reads a frame body; the first problem sticks and zero values follow.
type dec struct {
	b   []byte
	err error
}

var errShort = errors.New("message too short")

func (d *dec) u8() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) bytes() []byte {
	n := d.u64()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string { return string(d.bytes()) }

// int reads a uint64 that must fit in [0, hi].
func (d *dec) int(hi int) int {
	v := d.u64()
	if d.err == nil && v > uint64(hi) {
		d.err = fmt.Errorf("value %d out of range [0, %d]", v, hi)
	}
	return int(v)
}

// rest returns what is left.
func (d *dec) rest() []byte {
	v := d.b
	d.b = nil
	return v
}

func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d unexpected bytes at the end of a message", len(d.b))
	}
	return d.err
}

// readFrame reads one frame of at most limit bytes (after the length).
// Large frames are read in pieces, so a corrupt length costs an error, not
// the memory it announces.
func readFrame(r io.Reader, limit uint64) (typ byte, body []byte, err error) {
	var lb [8]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n == 0 {
		return 0, nil, errors.New("empty frame")
	}
	if n > limit {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the limit of %d", n, limit)
	}
	const step = 16 << 20
	buf := make([]byte, 0, min(n, step))
	for uint64(len(buf)) < n {
		k := min(n-uint64(len(buf)), step)
		if uint64(cap(buf)-len(buf)) < k {
			nb := make([]byte, len(buf), min(n, max(2*uint64(cap(buf)), uint64(len(buf))+k)))
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+int(k)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, err
		}
	}
	return buf[0], buf[1:], nil
}

func writeFrame(w io.Writer, m outMsg) error {
	if _, err := w.Write(m.head); err != nil {
		return err
	}
	if len(m.payload) > 0 {
		_, err := w.Write(m.payload)
		return err
	}
	return nil
}

// deadlineConn refreshes the read or write deadline before every call, so a
// deadline bounds the time without progress rather than a whole message. A
// zero timeout leaves the deadline alone.
type deadlineConn struct {
	c       net.Conn
	timeout time.Duration
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if d.timeout > 0 {
		if err := d.c.SetReadDeadline(time.Now().Add(d.timeout)); err != nil {
			return 0, err
		}
	}
	return d.c.Read(p)
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	// Write in pieces so that a slow but live peer keeps extending it.
	const piece = 4 << 20
	n := 0
	for n < len(p) {
		if d.timeout > 0 {
			if err := d.c.SetWriteDeadline(time.Now().Add(d.timeout)); err != nil {
				return n, err
			}
		}
		k, err := d.c.Write(p[n:min(len(p), n+piece)])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Messages.

type hello struct {
	job        string
	size, rank int
	host       string
	pid        int
}

func (h hello) encode() outMsg {
	e := newEnc(msgHello)
	e.b = append(e.b, helloMagic...)
	e.u64(protoVersion)
	e.str(h.job)
	e.u64(uint64(h.size))
	e.u64(uint64(h.rank))
	e.str(h.host)
	e.u64(uint64(h.pid))
	return e.msg(nil)
}

func decodeHello(body []byte) (hello, error) {
	var h hello
	if len(body) < len(helloMagic) || string(body[:len(helloMagic)]) != helloMagic {
		return h, errors.New("not a pario rank (bad magic)")
	}
	d := &dec{b: body[len(helloMagic):]}
	if v := d.u64(); d.err == nil && v != protoVersion {
		return h, fmt.Errorf("protocol version %d, want %d", v, protoVersion)
	}
	h.job = d.str()
	h.size = d.int(MaxSize)
	h.rank = d.int(MaxSize)
	h.host = d.str()
	h.pid = d.int(math.MaxInt32)
	return h, d.done()
}

type welcome struct {
	host              string
	pid               int
	interval, timeout time.Duration
}

func (w welcome) encode() outMsg {
	e := newEnc(msgWelcome)
	e.str(w.host)
	e.u64(uint64(w.pid))
	e.u64(uint64(w.interval))
	e.u64(uint64(w.timeout))
	return e.msg(nil)
}

func decodeWelcome(body []byte) (welcome, error) {
	d := &dec{b: body}
	var w welcome
	w.host = d.str()
	w.pid = d.int(math.MaxInt32)
	w.interval = time.Duration(d.int(math.MaxInt64))
	w.timeout = time.Duration(d.int(math.MaxInt64))
	if err := d.done(); err != nil {
		return w, err
	}
	if w.interval <= 0 || w.timeout <= 0 {
		return w, fmt.Errorf("bad heartbeat interval %v or timeout %v", w.interval, w.timeout)
	}
	return w, nil
}

func rejectMsg(reason string) outMsg {
	e := newEnc(msgReject)
	e.str(reason)
	return e.msg(nil)
}

// contrib is one rank's part of collective number seq.
type contrib struct {
	seq      uint64
	kind, op byte
	root     int
	data     []byte
}

func (c contrib) encode() outMsg {
	e := newEnc(msgContrib)
	e.u64(c.seq)
	e.u8(c.kind)
	e.u8(c.op)
	e.u64(uint64(c.root))
	return e.msg(c.data)
}

func decodeContrib(body []byte) (contrib, error) {
	d := &dec{b: body}
	var c contrib
	c.seq = d.u64()
	c.kind = d.u8()
	c.op = d.u8()
	c.root = d.int(MaxSize)
	c.data = d.rest()
	return c, d.err
}

func resultMsg(seq uint64, data []byte) outMsg {
	e := newEnc(msgResult)
	e.u64(seq)
	return e.msg(data)
}

func decodeResult(body []byte) (seq uint64, data []byte, err error) {
	d := &dec{b: body}
	seq = d.u64()
	data = d.rest()
	return seq, data, d.err
}

func abortMsg(e *RankError) outMsg {
	m := newEnc(msgAbort)
	m.u64(uint64(e.Rank))
	m.str(e.Host)
	m.u64(uint64(e.PID))
	m.str(e.Reason)
	return m.msg(nil)
}

func decodeAbort(body []byte) (*RankError, error) {
	d := &dec{b: body}
	e := &RankError{}
	e.Rank = d.int(MaxSize)
	e.Host = d.str()
	e.PID = d.int(math.MaxInt32)
	e.Reason = d.str()
	return e, d.done()
}

func emptyMsg(typ byte) outMsg { return newEnc(typ).msg(nil) }

// encodeList and decodeList carry Gather's result to a root other than 0.
func encodeList(list [][]byte) []byte {
	n := 8
	for _, b := range list {
		n += 8 + len(b)
	}
	out := make([]byte, 0, n)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(list)))
	for _, b := range list {
		out = binary.LittleEndian.AppendUint64(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out
}

func decodeList(b []byte, want int) ([][]byte, error) {
	d := &dec{b: b}
	n := d.u64()
	if d.err == nil && n != uint64(want) {
		return nil, fmt.Errorf("gather result has %d parts, want %d", n, want)
	}
	list := make([][]byte, 0, want)
	for i := 0; i < want && d.err == nil; i++ {
		list = append(list, d.bytes())
	}
	return list, d.done()
}
