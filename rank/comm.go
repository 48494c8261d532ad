package rank

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Op is a reduction for the Allreduce calls.
type Op uint8

// Reductions. Min and Max of float64 propagate NaN (math.Min, math.Max); Sum
// of uint64 wraps modulo 2^64, as in MPI; Sum of float64 adds in rank order,
// so every rank gets the same bits.
const (
	Min Op = iota + 1
	Max
	Sum
)

func (o Op) String() string {
	switch o {
	case Min:
		return "Min"
	case Max:
		return "Max"
	case Sum:
		return "Sum"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

func (o Op) valid() bool { return o >= Min && o <= Sum }

// Collective kinds on the wire.
const (
	kindBarrier          = 1
	kindAllreduceFloat64 = 2
	kindAllreduceUint64  = 3
	kindBroadcast        = 4
	kindGather           = 5
)

func kindName(kind, op byte, root int) string {
	switch kind {
	case kindBarrier:
		return "Barrier"
	case kindAllreduceFloat64:
		return "AllreduceFloat64(" + Op(op).String() + ")"
	case kindAllreduceUint64:
		return "AllreduceUint64(" + Op(op).String() + ")"
	case kindBroadcast:
		return fmt.Sprintf("Broadcast(root %d)", root)
	case kindGather:
		return fmt.Sprintf("Gather(root %d)", root)
	}
	return fmt.Sprintf("collective kind %d", kind)
}

// RankError names the rank that made a communicator fail: it died, left,
// gave up, or called a different collective. Every rank's error for the same
// failure names the same rank.
type RankError struct {
	Rank   int
	Host   string
	PID    int
	Reason string // "died: connection reset", "left (Close called) before ...", ...
}

func (e *RankError) Error() string {
	return fmt.Sprintf("rank %d (%s:%d) %s", e.Rank, e.Host, e.PID, e.Reason)
}

// Is matches context.Canceled for a rank that gave up a collective call
// because its context was cancelled: an interrupt, most often. pario's
// launcher passes Ctrl-C on to every rank, and the first to hear it gives
// up the call the others are in, so they fail with this error before
// their own signal arrives: errors.Is(err, context.Canceled) tells them
// the run was interrupted rather than broken. (The reason is all that
// crosses the wire, so it is what is matched.)
func (e *RankError) Is(target error) bool {
	return target == context.Canceled && strings.HasPrefix(e.Reason, "gave up in ") &&
		strings.HasSuffix(e.Reason, ": "+context.Canceled.Error())
}

// ErrClosed is the error of calls on a Comm after its Close.
var ErrClosed = errors.New("rank: communicator closed")

// closeWait bounds how long Close waits for peers to finish their side.
const closeWait = 5 * time.Second

// Comm is one rank's membership of a parallel run. Its collectives must be
// called by every rank in the same order, one at a time per Comm (as in
// MPI); every call takes a context and returns, at the latest when a rank
// is found dead, with an error naming it.
type Comm struct {
	info              Info
	host              string
	pid               int
	interval, timeout time.Duration

	busy atomic.Bool // a collective is in progress

	mu        sync.Mutex
	err       error         // sticky: a *RankError or ErrClosed
	failed    chan struct{} // closed when err is set
	closed    bool          // Close was called
	seq       uint64        // collectives this rank has started
	delivered uint64        // ranks other than 0: the last result received
	results   chan result   // the current collective's result, capacity 1

	root  *link   // ranks other than 0: the connection to rank 0
	links []*link // rank 0: links[r] for ranks r >= 1

	// Rank 0: the collective being assembled.
	next  uint64   // its number
	count int      // contributions so far
	have  []bool   // by rank
	parts [][]byte // by rank
	cur   contrib  // kind, op and root of the first contribution
	first int      // the rank that made it
}

type result struct {
	data []byte
	list [][]byte // Gather at rank 0
}

func newComm(info Info, host string, pid int, interval, timeout time.Duration) *Comm {
	c := &Comm{
		info: info, host: host, pid: pid, interval: interval, timeout: timeout,
		failed:  make(chan struct{}),
		results: make(chan result, 1),
	}
	if info.Rank == 0 {
		c.next = 1
		c.have = make([]bool, info.Size)
		c.parts = make([][]byte, info.Size)
		c.links = make([]*link, info.Size)
	}
	return c
}

// Rank is this process's rank, from 0.
func (c *Comm) Rank() int { return c.info.Rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.info.Size }

// Info is what was detected about this rank.
func (c *Comm) Info() Info { return c.info }

// Err returns the error that failed the communicator (a *RankError, or
// ErrClosed after Close), or nil while it works.
func (c *Comm) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Barrier returns once every rank has called it.
func (c *Comm) Barrier(ctx context.Context) error {
	_, err := c.do(ctx, kindBarrier, 0, 0, nil)
	return err
}

// AllreduceFloat64 combines v from every rank with op; all ranks get the
// same result.
func (c *Comm) AllreduceFloat64(ctx context.Context, v float64, op Op) (float64, error) {
	if !op.valid() {
		return 0, fmt.Errorf("rank %d: AllreduceFloat64: invalid op %v", c.info.Rank, op)
	}
	r, err := c.do(ctx, kindAllreduceFloat64, byte(op), 0, binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)))
	if err != nil {
		return 0, err
	}
	b, err := c.word(r.data)
	return math.Float64frombits(b), err
}

// AllreduceUint64 combines v from every rank with op; all ranks get the
// same result.
func (c *Comm) AllreduceUint64(ctx context.Context, v uint64, op Op) (uint64, error) {
	if !op.valid() {
		return 0, fmt.Errorf("rank %d: AllreduceUint64: invalid op %v", c.info.Rank, op)
	}
	r, err := c.do(ctx, kindAllreduceUint64, byte(op), 0, binary.LittleEndian.AppendUint64(nil, v))
	if err != nil {
		return 0, err
	}
	return c.word(r.data)
}

func (c *Comm) word(b []byte) (uint64, error) {
	if len(b) != 8 {
		err := &RankError{0, c.hostOf(0), c.pidOf(0), fmt.Sprintf("protocol error: a reduction result of %d bytes", len(b))}
		c.fail(err, nil)
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// Broadcast returns root's data on every rank; on root it returns data
// itself. The other ranks' data is ignored.
func (c *Comm) Broadcast(ctx context.Context, root int, data []byte) ([]byte, error) {
	if err := c.checkRoot("Broadcast", root); err != nil {
		return nil, err
	}
	var send []byte
	if c.info.Rank == root {
		send = data
	}
	r, err := c.do(ctx, kindBroadcast, 0, root, send)
	if err != nil {
		return nil, err
	}
	if c.info.Rank == root {
		return data, nil
	}
	return r.data, nil
}

// Gather returns, on root, every rank's data indexed by rank; on the other
// ranks it returns nil.
func (c *Comm) Gather(ctx context.Context, root int, data []byte) ([][]byte, error) {
	if err := c.checkRoot("Gather", root); err != nil {
		return nil, err
	}
	r, err := c.do(ctx, kindGather, 0, root, data)
	if err != nil || c.info.Rank != root {
		return nil, err
	}
	if root == 0 {
		return r.list, nil
	}
	list, err := decodeList(r.data, c.info.Size)
	if err != nil {
		e := &RankError{0, c.hostOf(0), c.pidOf(0), "protocol error: " + err.Error()}
		c.fail(e, nil)
		return nil, e
	}
	return list, nil
}

func (c *Comm) checkRoot(name string, root int) error {
	if root < 0 || root >= c.info.Size {
		return fmt.Errorf("rank %d: %s: root %d out of range [0, %d)", c.info.Rank, name, root, c.info.Size)
	}
	return nil
}

// do runs one collective: contribute, then wait for the result, a failure
// or the end of ctx.
func (c *Comm) do(ctx context.Context, kind, op byte, root int, data []byte) (result, error) {
	name := kindName(kind, op, root)
	me := c.info.Rank
	if !c.busy.CompareAndSwap(false, true) {
		return result{}, fmt.Errorf("rank %d: %s: another collective is in progress on this Comm (call them one at a time, in the same order on every rank)", me, name)
	}
	defer c.busy.Store(false)
	if err := ctx.Err(); err != nil {
		return result{}, fmt.Errorf("rank %d: %s: %w", me, name, err)
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return result{}, fmt.Errorf("rank %d: %s: %w", me, name, err)
	}
	c.seq++
	seq := c.seq
	// Copy: the caller may reuse data once we return, and a failure can
	// make us return while the copy is still being sent.
	ct := contrib{seq: seq, kind: kind, op: op, root: root, data: bytes.Clone(data)}
	if me == 0 {
		c.contributeLocked(0, ct)
	} else {
		c.root.send(ct.encode())
	}
	c.mu.Unlock()

	select {
	case r := <-c.results:
		return r, nil
	case <-c.failed:
	case <-ctx.Done():
	}
	// A result delivered before the failure (rank 0 answers, then closes)
	// wins: the collective completed. Checked on its own, since a select
	// with both ready picks one at random.
	select {
	case r := <-c.results:
		return r, nil
	default:
	}
	select {
	case <-c.failed:
	default:
		// ctx ended first. The collective cannot complete without us, so
		// the communicator fails for everyone, naming this rank.
		c.fail(&RankError{me, c.host, c.pid, fmt.Sprintf("gave up in %s #%d: %v", name, seq, ctx.Err())}, nil)
		return result{}, fmt.Errorf("rank %d: %s #%d: %w", me, name, seq, ctx.Err())
	}
	return result{}, fmt.Errorf("rank %d: %s #%d: %w", me, name, seq, c.Err())
}

func (c *Comm) hostOf(r int) string {
	if r == c.info.Rank {
		return c.host
	}
	if c.info.Rank == 0 && r > 0 && r < len(c.links) && c.links[r] != nil {
		return c.links[r].host
	}
	if r == 0 && c.root != nil {
		return c.root.host
	}
	return "?"
}

func (c *Comm) pidOf(r int) int {
	if r == c.info.Rank {
		return c.pid
	}
	if c.info.Rank == 0 && r > 0 && r < len(c.links) && c.links[r] != nil {
		return c.links[r].pid
	}
	if r == 0 && c.root != nil {
		return c.root.pid
	}
	return 0
}

// contributeLocked adds rank k's contribution at rank 0 and completes the
// collective when it is the last. c.mu is held.
func (c *Comm) contributeLocked(k int, ct contrib) {
	if c.err != nil {
		return
	}
	fail := func(r int, format string, args ...any) {
		c.failLocked(&RankError{r, c.hostOf(r), c.pidOf(r), fmt.Sprintf(format, args...)}, nil)
	}
	name := kindName(ct.kind, ct.op, ct.root)
	switch {
	case ct.seq != c.next:
		fail(k, "protocol error: sent collective #%d, expected #%d", ct.seq, c.next)
		return
	case c.have[k]:
		fail(k, "protocol error: contributed twice to collective #%d", ct.seq)
		return
	case ct.kind < kindBarrier || ct.kind > kindGather:
		fail(k, "protocol error: unknown collective kind %d", ct.kind)
		return
	case (ct.kind == kindAllreduceFloat64 || ct.kind == kindAllreduceUint64) && (!Op(ct.op).valid() || len(ct.data) != 8):
		fail(k, "protocol error: bad reduction (op %d, %d bytes)", ct.op, len(ct.data))
		return
	case ct.root >= c.info.Size:
		fail(k, "protocol error: root %d out of range", ct.root)
		return
	}
	if c.count == 0 {
		c.cur = contrib{kind: ct.kind, op: ct.op, root: ct.root}
		c.first = k
	} else if ct.kind != c.cur.kind || ct.op != c.cur.op || ct.root != c.cur.root {
		fail(k, "called %s as collective #%d but rank %d (%s:%d) called %s",
			name, ct.seq, c.first, c.hostOf(c.first), c.pidOf(c.first), kindName(c.cur.kind, c.cur.op, c.cur.root))
		return
	}
	for r, l := range c.links {
		if l != nil && l.gone {
			fail(r, "left (Close called) before collective #%d (%s)", ct.seq, name)
			return
		}
	}
	c.have[k] = true
	c.parts[k] = ct.data
	c.count++
	if c.count == c.info.Size {
		c.completeLocked()
	}
}

// completeLocked computes every rank's result of the assembled collective,
// sends them and starts the next one. c.mu is held.
func (c *Comm) completeLocked() {
	size, seq := c.info.Size, c.next
	out := make([][]byte, size)
	var own result
	switch c.cur.kind {
	case kindAllreduceFloat64:
		v := math.Float64frombits(binary.LittleEndian.Uint64(c.parts[0]))
		for _, p := range c.parts[1:] {
			w := math.Float64frombits(binary.LittleEndian.Uint64(p))
			switch Op(c.cur.op) {
			case Min:
				v = math.Min(v, w)
			case Max:
				v = math.Max(v, w)
			case Sum:
				v += w
			}
		}
		b := binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
		for r := range out {
			out[r] = b
		}
	case kindAllreduceUint64:
		v := binary.LittleEndian.Uint64(c.parts[0])
		for _, p := range c.parts[1:] {
			w := binary.LittleEndian.Uint64(p)
			switch Op(c.cur.op) {
			case Min:
				v = min(v, w)
			case Max:
				v = max(v, w)
			case Sum:
				v += w
			}
		}
		b := binary.LittleEndian.AppendUint64(nil, v)
		for r := range out {
			out[r] = b
		}
	case kindBroadcast:
		for r := range out {
			if r != c.cur.root {
				out[r] = c.parts[c.cur.root]
			}
		}
	case kindGather:
		if c.cur.root == 0 {
			own.list = slices.Clone(c.parts)
		} else {
			out[c.cur.root] = encodeList(c.parts)
		}
	}
	for r := 1; r < size; r++ {
		c.links[r].send(resultMsg(seq, out[r]))
	}
	own.data = out[0]
	if c.cur.kind == kindBroadcast && c.cur.root != 0 {
		// out[0] is also being sent to the others; rank 0's caller gets
		// its own copy.
		own.data = bytes.Clone(own.data)
	}
	c.next++
	c.count = 0
	clear(c.have)
	clear(c.parts)
	select {
	case c.results <- own:
	default:
		c.failLocked(&RankError{0, c.host, c.pid, "internal error: a result nobody waits for"}, nil)
	}
}

// fail makes the communicator fail with err (the first failure wins) and
// tells the others: rank 0 sends every live rank an abort; another rank
// tells rank 0 when the failure is its own (it gave up). dead is a link not
// to write to any more.
func (c *Comm) fail(err *RankError, dead *link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err, dead)
}

func (c *Comm) failLocked(err *RankError, dead *link) {
	if c.err != nil {
		return
	}
	c.err = err
	close(c.failed)
	ab := abortMsg(err)
	if c.info.Rank == 0 {
		for _, l := range c.links {
			if l != nil && l != dead {
				l.finish(&ab)
			}
		}
	} else if c.root != nil && c.root != dead {
		if err.Rank == c.info.Rank {
			c.root.finish(&ab)
		} else {
			c.root.finish(nil)
		}
	}
}

// handle acts on one message from l. An error is a protocol error.
func (c *Comm) handle(l *link, typ byte, body []byte) error {
	if c.info.Rank == 0 {
		return c.handleAtRoot(l, typ, body)
	}
	switch typ {
	case msgHeartbeat:
	case msgResult:
		seq, data, err := decodeResult(body)
		if err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return nil
		}
		if seq != c.seq || c.delivered == seq {
			return fmt.Errorf("result of collective #%d while this rank waits for #%d", seq, c.seq)
		}
		c.delivered = seq
		select {
		case c.results <- result{data: data}:
		default:
			return fmt.Errorf("result of collective #%d nobody waits for", seq)
		}
	case msgAbort:
		re, err := decodeAbort(body)
		if err != nil {
			return err
		}
		c.fail(re, nil)
	case msgShutdown:
		c.fail(&RankError{0, l.host, l.pid, "closed the communicator (Close called)"}, nil)
	default:
		return fmt.Errorf("unexpected message type %d", typ)
	}
	return nil
}

func (c *Comm) handleAtRoot(l *link, typ byte, body []byte) error {
	switch typ {
	case msgHeartbeat:
	case msgContrib:
		ct, err := decodeContrib(body)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.contributeLocked(l.rank, ct)
		c.mu.Unlock()
	case msgBye:
		c.mu.Lock()
		l.gone = true
		if c.count > 0 {
			c.failLocked(&RankError{l.rank, l.host, l.pid, fmt.Sprintf("left (Close called) during collective #%d (%s)",
				c.next, kindName(c.cur.kind, c.cur.op, c.cur.root))}, nil)
		}
		c.mu.Unlock()
		l.finish(nil)
	case msgAbort:
		re, err := decodeAbort(body)
		if err != nil {
			return err
		}
		if re.Rank != l.rank {
			return fmt.Errorf("abort names rank %d", re.Rank)
		}
		re.Host, re.PID = l.host, l.pid
		c.fail(re, nil)
	default:
		return fmt.Errorf("unexpected message type %d", typ)
	}
	return nil
}

// readEnded handles the end of l's stream.
func (c *Comm) readEnded(l *link, err error) {
	c.mu.Lock()
	expected := c.err != nil || l.gone
	c.mu.Unlock()
	if !expected {
		c.fail(&RankError{l.rank, l.host, l.pid, "died: " + describe(err, c.timeout)}, l)
		l.shutdown()
		return
	}
	// The peer has finished: let our side finish too, then close.
	l.finish(nil)
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-l.writerDone:
	case <-t.C:
	}
	l.shutdown()
}

// writeFailed handles a failed write to l.
func (c *Comm) writeFailed(l *link, err error) {
	c.mu.Lock()
	expected := c.err != nil || l.gone
	c.mu.Unlock()
	if !expected {
		c.fail(&RankError{l.rank, l.host, l.pid, "died: " + describe(err, c.timeout)}, l)
	}
	l.shutdown()
}

// Close leaves the run. Rank 0's Close ends the communicator for everyone
// still connected: their later calls fail naming rank 0. Close waits a few
// seconds at most for peers to finish their side of the connections; it is
// safe to call more than once.
func (c *Comm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	notify := c.err == nil
	if notify {
		c.err = ErrClosed
		close(c.failed)
	}
	var wait []*link
	if c.info.Rank == 0 {
		m := emptyMsg(msgShutdown)
		for _, l := range c.links {
			if l != nil {
				if notify {
					l.finish(&m)
				} else {
					l.finish(nil)
				}
				wait = append(wait, l)
			}
		}
	} else if c.root != nil {
		m := emptyMsg(msgBye)
		if notify {
			c.root.finish(&m)
		} else {
			c.root.finish(nil)
		}
		wait = append(wait, c.root)
	}
	c.mu.Unlock()

	t := time.NewTimer(closeWait)
	defer t.Stop()
	for _, l := range wait {
		select {
		case <-l.readerDone:
		case <-t.C:
		}
	}
	for _, l := range wait {
		l.shutdown()
	}
	for _, l := range wait {
		<-l.readerDone
		<-l.writerDone
	}
	return nil
}
