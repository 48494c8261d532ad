package template

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/pario/pario/template/annot"
	"github.com/pario/pario/template/seg"
)

// The coordinator is the parent of every stream: it runs at rank 0 of the
// group, holds each stream's lock, turn counters and global pointer (the
// end of file of a log, the shared pointer of a meeting, the next free byte
// of an unknown-extent newspaper), runs the segmentation functions and
// writes what the templates say the parent writes. The ranks talk to it
// over one TCP connection per stream, one request at a time.

const (
	opAcquire = iota + 1 // wait for the turn (and the lock); answer the pointer
	opRelease            // give the lock back, set the pointer, advance the turn
	opPeek               // the pointer, without waiting
	opNext               // the next segment of the parent's part
	opSegment            // segment Index (report: ask the parent)
	opPlace              // write Data as segment Index of an unknown extent
	opWrite              // photocopy: the owner writes Data at Off
	opAbort              // fail the stream: every waiting and later call gets Data
)

type request struct {
	Op      int
	Stream  int
	Lock    bool
	Key     byte // turn counter: 'r', 'w' or 'p' (placements)
	MinTurn int64
	Set     bool
	Value   int64
	Advance bool
	Index   int
	Off     int64
	Data    []byte
	// Pull asks for the photocopy writes verified since the Since-th,
	// for a rank reading from a replica.
	Pull  bool
	Since int64
	// More says another piece of the same placement follows (opPlace):
	// a segment goes to the parent in pieces of at most placeChunk
	// bytes, holding the stream from the first to the last.
	More bool
}

// placeChunk is the most bytes of a segment one placement request
// carries: a segment's output may be larger than a rank's or the parent's
// memory (and than gob's largest message), and the parent may have a
// placement waiting for its turn on every connection at once.
const placeChunk = 1 << 20

// replicaWrite is a verified photocopy write, sent to the replicas.
type replicaWrite struct {
	Off  int64
	Data []byte
}

type response struct {
	Value int64
	Seg   seg.Segment
	Done  bool
	Err   string
	// Writes are the verified photocopy writes from the request's Since
	// on, in the order the owner made them.
	Writes []replicaWrite
}

// stream is the coordinator's state of one stream.
type stream struct {
	ann    annot.Annotation
	file   File
	fn     seg.Func
	pmin   int64
	pmax   int64
	held   *conn // the lock's holder
	value  int64
	turns  map[byte]int64
	segs   []seg.Segment // handed out or asked for so far
	cur    int64         // where the segmentation function goes on
	segEnd bool
	next   int           // the next segment to hand out
	staged []stagedWrite // photocopy writes of a block, applied at End
	failed string        // why a rank aborted the stream; "" while it works
	// placed is the bytes written so far of the placement the holder
	// of the lock is making (opPlace with More), at value.
	placed  int64
	placing bool
	handed  int64 // bytes of the segments handed out by Next
	// replicated: ranks read from replicas, so every verified write is
	// kept for them to pull, in order.
	replicated bool
	verified   []replicaWrite
}

type stagedWrite struct {
	off  int64
	data []byte
}

type coordinator struct {
	ln      net.Listener
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change
	streams []*stream
	wg      sync.WaitGroup
	conns   map[*conn]bool
	closed  bool
}

type conn struct {
	c    net.Conn
	gone chan struct{}
}

func newCoordinator(ln net.Listener) *coordinator {
	co := &coordinator{ln: ln, changed: make(chan struct{}), conns: map[*conn]bool{}}
	co.wg.Add(1)
	go co.accept()
	return co
}

func (co *coordinator) add(s *stream) int {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.streams = append(co.streams, s)
	return len(co.streams) - 1
}

func (co *coordinator) close() {
	co.ln.Close()
	co.mu.Lock()
	co.closed = true
	for c := range co.conns {
		c.c.Close()
	}
	co.mu.Unlock()
	co.wg.Wait()
}

func (co *coordinator) accept() {
	defer co.wg.Done()
	for {
		nc, err := co.ln.Accept()
		if err != nil {
			return
		}
		c := &conn{c: nc, gone: make(chan struct{})}
		co.mu.Lock()
		if co.closed {
			co.mu.Unlock()
			nc.Close()
			return
		}
		co.conns[c] = true
		co.mu.Unlock()
		co.wg.Add(1)
		go co.serve(c)
	}
}

// serve reads requests in one goroutine, so that a peer going away is seen
// while its request waits, and answers them in order in another.
func (co *coordinator) serve(c *conn) {
	defer co.wg.Done()
	reqs := make(chan request)
	go func() {
		defer close(c.gone)
		dec := gob.NewDecoder(c.c)
		for {
			var r request
			if err := dec.Decode(&r); err != nil {
				return
			}
			select {
			case reqs <- r:
			case <-c.gone:
				return
			}
		}
	}()
	enc := gob.NewEncoder(c.c)
loop:
	for {
		select {
		case r := <-reqs:
			resp := co.handle(c, r)
			if err := enc.Encode(resp); err != nil {
				break loop
			}
		case <-c.gone:
			break loop
		}
	}
	c.c.Close()
	<-c.gone
	// A rank that went away holding a lock gives it back, so the others
	// are not stuck behind it (its staged writes are dropped: its block
	// never ended).
	co.mu.Lock()
	for _, s := range co.streams {
		if s.held == c {
			if s.placing && s.failed == "" {
				// Its segment is in part written where the next one
				// goes, and nobody will finish it.
				s.failed = fmt.Sprintf("a rank went away placing a segment (%d bytes of it written at offset %d)", s.placed, s.value)
			}
			s.held = nil
			s.staged = nil
			s.placing, s.placed = false, 0
		}
	}
	delete(co.conns, c)
	co.changedLocked()
	co.mu.Unlock()
}

func (co *coordinator) changedLocked() {
	close(co.changed)
	co.changed = make(chan struct{})
}

// wait blocks until ok holds (checked with co.mu held), c goes away or a
// rank aborts s;
// co.mu is held on entry and on return.
func (co *coordinator) wait(c *conn, s *stream, ok func() bool) error {
	for !ok() {
		if s.failed != "" {
			return errors.New("stream aborted: " + s.failed)
		}
		ch := co.changed
		co.mu.Unlock()
		select {
		case <-ch:
		case <-c.gone:
			co.mu.Lock()
			return errors.New("the rank went away")
		}
		co.mu.Lock()
	}
	return nil
}

func (co *coordinator) handle(c *conn, r request) response {
	resp := co.handleOp(c, r)
	if !r.Pull || resp.Err != "" {
		return resp
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	// Only writes the owner has verified are ever in s.verified.
	if s := co.streams[r.Stream]; r.Since >= 0 && r.Since <= int64(len(s.verified)) {
		resp.Writes = s.verified[r.Since:]
	}
	return resp
}

func (co *coordinator) handleOp(c *conn, r request) response {
	co.mu.Lock()
	defer co.mu.Unlock()
	if r.Stream < 0 || r.Stream >= len(co.streams) {
		return response{Err: fmt.Sprintf("no stream %d", r.Stream)}
	}
	s := co.streams[r.Stream]
	if r.Op == opAbort {
		if s.failed == "" {
			s.failed = string(r.Data)
		}
		co.changedLocked()
		return response{}
	}
	if s.failed != "" {
		return response{Err: "stream aborted: " + s.failed}
	}
	free := func() bool { return s.held == nil || s.held == c }
	switch r.Op {
	case opAcquire:
		if err := co.wait(c, s, func() bool { return (!r.Lock || free()) && s.turns[r.Key] >= r.MinTurn }); err != nil {
			return response{Err: err.Error()}
		}
		if r.Lock {
			s.held = c
		}
		return response{Value: s.value}
	case opRelease:
		if r.Lock {
			if s.held != c {
				return response{Err: "release of a lock this rank does not hold"}
			}
			if err := co.applyStagedLocked(s); err != nil {
				return response{Err: err.Error()}
			}
			s.held = nil
		}
		if r.Set {
			s.value = r.Value
		}
		if r.Advance {
			s.turns[r.Key]++
		}
		co.changedLocked()
		return response{Value: s.value}
	case opPeek:
		return response{Value: s.value}
	case opNext:
		if err := co.segmentLocked(s, s.next); err != nil {
			return response{Err: err.Error()}
		}
		if s.next >= len(s.segs) {
			return response{Done: true}
		}
		s.next++
		s.handed += s.segs[s.next-1].Extent
		return response{Seg: s.segs[s.next-1]}
	case opSegment:
		if err := co.segmentLocked(s, r.Index); err != nil {
			return response{Err: err.Error()}
		}
		if r.Index < 0 || r.Index >= len(s.segs) {
			return response{Done: true}
		}
		return response{Seg: s.segs[r.Index]}
	case opPlace:
		// The first piece waits for the turn and takes the stream; the
		// others find it held by this connection. r.Value is the
		// segment's size, for the message.
		if err := co.wait(c, s, func() bool { return free() && s.turns['p'] >= r.MinTurn }); err != nil {
			return response{Err: err.Error()}
		}
		s.held, s.placing = c, true
		base := s.value
		if _, err := s.file.WriteAt(r.Data, base+s.placed); err != nil {
			return co.failLocked(s, fmt.Sprintf("parent: place segment %d (%d bytes) at offset %d: %v", r.Index, r.Value, base, err))
		}
		s.placed += int64(len(r.Data))
		if r.More {
			return response{Value: base}
		}
		s.value += s.placed
		s.held, s.placing, s.placed = nil, false, 0
		s.turns['p']++
		co.changedLocked()
		return response{Value: base}
	case opWrite:
		if err := co.wait(c, s, free); err != nil {
			return response{Err: err.Error()}
		}
		if s.held == c && s.ann.Tx == annot.Block {
			s.staged = append(s.staged, stagedWrite{r.Off, r.Data})
			return response{}
		}
		if err := s.ownerWrite(r.Data, r.Off); err != nil {
			return response{Err: err.Error()} // this write only: the next may go where this one could not
		}
		return response{}
	}
	return response{Err: fmt.Sprintf("unknown op %d", r.Op)}
}

// failLocked fails s for every rank, as an abort does, and answers why: a
// segment the parent could not place (a full disk, say) leaves a hole no
// later turn fills, and the places after it would wait for it for ever.
// Called with co.mu held.
func (co *coordinator) failLocked(s *stream, why string) response {
	if s.failed == "" {
		s.failed = why
	}
	co.changedLocked()
	return response{Err: why}
}

// handed is what Next has handed out of stream id so far.
func (co *coordinator) handed(id int) (segments int, bytes int64) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if id < 0 || id >= len(co.streams) {
		return 0, 0
	}
	s := co.streams[id]
	return s.next, s.handed
}

func (co *coordinator) applyStagedLocked(s *stream) error {
	st := s.staged
	s.staged = nil
	for _, w := range st {
		if err := s.ownerWrite(w.data, w.off); err != nil {
			return err
		}
	}
	return nil
}

// ownerWrite is a photocopy write at its owner: written, then read back and
// compared before any other rank is told it is done or, with replicas, is
// sent it.
func (s *stream) ownerWrite(p []byte, off int64) error {
	if err := ownerWrite(s.file, p, off); err != nil {
		return err
	}
	if s.replicated {
		s.verified = append(s.verified, replicaWrite{Off: off, Data: p})
	}
	return nil
}

func ownerWrite(f File, p []byte, off int64) error {
	if off < 0 {
		return fmt.Errorf("owner: write at negative offset %d", off)
	}
	if _, err := f.WriteAt(p, off); err != nil {
		return fmt.Errorf("owner: write of %d bytes at offset %d: %v", len(p), off, err)
	}
	back := make([]byte, len(p))
	if _, err := f.ReadAt(back, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("owner: verify %d bytes at offset %d: %v", len(p), off, err)
	}
	if string(back) != string(p) {
		return fmt.Errorf("owner: verify %d bytes at offset %d: read back differs", len(p), off)
	}
	return nil
}

// segmentLocked runs the segmentation function until segment i is known or
// the part ends.
func (co *coordinator) segmentLocked(s *stream, i int) error {
	for len(s.segs) <= i && !s.segEnd {
		n, err := s.fn(s.file, s.pmin, s.pmax, s.cur)
		if err != nil {
			return fmt.Errorf("parent: segmentation %s of stream %s at offset %d: %v", s.ann.SegFunc, s.ann.Stream, s.cur, err)
		}
		if n < 0 {
			s.segEnd = true
			break
		}
		if n == 0 || s.cur+n > s.pmax {
			return fmt.Errorf("parent: segmentation %s of stream %s at offset %d: extent %d leaves the part [%d, %d)", s.ann.SegFunc, s.ann.Stream, s.cur, n, s.pmin, s.pmax)
		}
		s.segs = append(s.segs, seg.Segment{Index: len(s.segs), Base: s.cur, Extent: n})
		s.cur += n
		slog.Debug("template: segment", "stream", s.ann.Stream, "index", len(s.segs)-1, "base", s.cur-n, "extent", n)
	}
	return nil
}

// parentConn is one rank's connection to the coordinator for one stream.
type parentConn struct {
	mu     sync.Mutex
	nc     net.Conn
	enc    *gob.Encoder
	dec    *gob.Decoder
	stream int
	broken error
}

func dialCoordinator(ctx context.Context, addr string, stream int) (*parentConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("template: dial the parent at %s: %w", addr, err)
	}
	return &parentConn{nc: nc, enc: gob.NewEncoder(nc), dec: gob.NewDecoder(nc), stream: stream}, nil
}

func (cl *parentConn) call(ctx context.Context, r request) (response, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.broken != nil {
		return response{}, cl.broken
	}
	r.Stream = cl.stream
	stop := context.AfterFunc(ctx, func() { cl.nc.Close() })
	defer stop()
	var resp response
	err := cl.enc.Encode(r)
	if err == nil {
		err = cl.dec.Decode(&resp)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		cl.broken = fmt.Errorf("template: connection to the parent: %w", err)
		cl.nc.Close()
		return response{}, cl.broken
	}
	if resp.Err != "" {
		return resp, errors.New(resp.Err)
	}
	return resp, nil
}

func (cl *parentConn) close() error { return cl.nc.Close() }
