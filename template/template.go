// Package template implements PI/OT's parallel I/O templates (seed 004):
// the way the ranks of a parallel run share one file, chosen by an
// annotation line read at run time (template/annot) rather than written into
// the code.
//
//   - PHOTOCOPY: independent pointers; reads go straight to the file; every
//     write goes to the owner (rank 0), which writes it and reads it back
//     before any rank is told it is done.
//   - NEWSPAPER: disjoint segments handed out by the parent (rank 0), their
//     extents from a constant, from a named segmentation function the parent
//     runs on demand (template/seg), or unknown: the worker writes to a
//     scratch file and the parent places the whole segment when it is done.
//   - LOG: one global end of file; appends only, each at the end of file
//     advanced by the rank holding write permission; reads proceed without
//     synchronisation up to the last end of file this rank knows.
//   - REPORT: segmented as a newspaper, and a rank may reach another's
//     segment by asking the parent for it.
//   - MEETING: one global pointer, one rank in control at a time.
//
// Attributes: the order of reads and of writes (ordered: the k-th operation
// of every rank runs in rank order, round after round, as
// MPI_File_write_ordered; relaxed: a round's operations in any order, each
// round finished before the next starts; chaotic: any order), the
// transaction (atomic: each call indivisible; block: everything between
// Begin and End is one transaction, invisible to readers until End), and
// the segmentation of segmented templates.
//
// A Group is a rank.Comm's ranks sharing files; rank 0 is the parent of
// every stream opened on it. Opening a stream is collective. Composition (a
// newspaper of newspapers) is a stream opened on a sub-group (rank.Comm's
// Split) over a segment's View.
package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"

	"github.com/pario/pario/rank"
	"github.com/pario/pario/template/annot"
	"github.com/pario/pario/template/seg"
)

// File is what a template works over: a local file (*os.File), a pario
// client file, or a segment's View.
type File interface {
	io.ReaderAt
	io.WriterAt
}

// Group is the ranks of a Comm sharing files through templates.
type Group struct {
	comm  *rank.Comm
	co    *coordinator // rank 0
	addr  string
	count int // streams opened
}

// NewGroup starts the parent at rank 0 and tells every rank where it is.
// It is collective over comm.
func NewGroup(ctx context.Context, comm *rank.Comm) (*Group, error) {
	g := &Group{comm: comm}
	var addr []byte
	var lerr error
	if comm.Rank() == 0 {
		listen, advertise := parentAddrs(comm)
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			lerr = fmt.Errorf("template: rank 0: listen for the parent at %s: %w", listen, err)
		} else {
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			addr = []byte(net.JoinHostPort(advertise, port))
			g.co = newCoordinator(ln)
		}
	}
	b, err := comm.Broadcast(ctx, 0, addr)
	if err != nil {
		return nil, errors.Join(lerr, fmt.Errorf("template: %w", err))
	}
	if lerr != nil || len(b) == 0 {
		if g.co != nil {
			g.co.close()
		}
		return nil, errors.Join(lerr, errors.New("template: rank 0 could not start the parent"))
	}
	g.addr = string(b)
	return g, nil
}

func parentAddrs(comm *rank.Comm) (listen, advertise string) {
	host, _, err := net.SplitHostPort(comm.Info().Rendezvous)
	if ip := net.ParseIP(host); (err == nil && ip != nil && ip.IsLoopback()) || comm.Size() == 1 {
		if host == "" || comm.Size() == 1 {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, "0"), host
	}
	h, err := os.Hostname()
	if err != nil {
		h = "localhost"
	}
	return ":0", h
}

// Comm is the group's communicator.
func (g *Group) Comm() *rank.Comm { return g.comm }

// Close stops the parent once every rank is done with it; collective.
func (g *Group) Close(ctx context.Context) error {
	err := g.comm.Barrier(ctx)
	if g.co != nil {
		g.co.close()
	}
	return err
}

// Bounds is the part of the file a segmented stream divides: [Min, Max).
// Max 0 means up to the end of the file as the segmentation function finds
// it; a constant extent needs Max.
type Bounds struct{ Min, Max int64 }

// Open opens stream a over f on every rank (f is each rank's own handle on
// the same file); collective. The parent (rank 0) uses its f to place
// segments, run segmentation functions and apply photocopy writes.
func (g *Group) Open(ctx context.Context, a annot.Annotation, f File, b Bounds) (*Stream, error) {
	return g.open(ctx, a, f, b, nil)
}

// OpenReplica opens photocopy stream a with reads from a replica: f is
// the file (the owner, rank 0, writes it), replica this rank's local copy
// of it, equal to f when the stream opens (rank 0 may pass f itself).
// Collective. Reads go to the replica and never to the parent; a write is
// applied to the replicas only once the owner has written and verified
// it, and reaches a rank's replica when that rank next talks to the parent
// (its own writes, an ordered or block read's turn, Begin/End, Sync). So a
// replica may be behind the file, but never holds an unverified write.
func (g *Group) OpenReplica(ctx context.Context, a annot.Annotation, f, replica File) (*Stream, error) {
	if a.Template != annot.Photocopy {
		return nil, fmt.Errorf("template: open %s (annotation line %d): replicas are for PHOTOCOPY, not %s", a.Stream, a.Line, a.Template)
	}
	if replica == nil {
		return nil, fmt.Errorf("template: open %s: no replica", a.Stream)
	}
	return g.open(ctx, a, f, Bounds{}, replica)
}

func (g *Group) open(ctx context.Context, a annot.Annotation, f File, b Bounds, replica File) (*Stream, error) {
	id := g.count
	g.count++
	s := &Stream{g: g, id: id, ann: a, f: f, replica: replica, me: int64(g.comm.Rank()), size: int64(g.comm.Size())}
	var oerr error
	if g.co != nil {
		st := &stream{ann: a, file: f, pmin: b.Min, pmax: b.Max, turns: map[byte]int64{}, cur: b.Min, replicated: replica != nil}
		if st.pmax == 0 {
			st.pmax = math.MaxInt64
		}
		switch {
		case a.SegFunc != "":
			st.fn, oerr = seg.Lookup(a.SegFunc)
		case a.Extent > 0:
			st.fn = seg.Fixed(a.Extent)
			if b.Max == 0 {
				// Fine for output (Out); handing segments out needs an end.
				st.fn = func(io.ReaderAt, int64, int64, int64) (int64, error) {
					return 0, fmt.Errorf("constant extent %d: give the part's end (Bounds.Max) to hand segments out", a.Extent)
				}
			}
		default:
			st.fn = func(io.ReaderAt, int64, int64, int64) (int64, error) {
				return 0, errors.New("the extent is unknown (=0): segments are placed by the parent, not handed out")
			}
		}
		if a.Unknown() {
			st.value = b.Min
		}
		if got := g.co.add(st); got != id {
			oerr = fmt.Errorf("internal error: stream %d registered as %d", id, got)
		}
	}
	// Rank 0's verdict reaches everyone, so no rank uses a stream the
	// parent refused.
	verdict := []byte{0}
	if oerr != nil {
		verdict = []byte("stream " + a.Stream + ": " + oerr.Error())
	}
	v, err := g.comm.Broadcast(ctx, 0, verdict)
	if err != nil {
		return nil, fmt.Errorf("template: open %s: %w", a.Stream, err)
	}
	if len(v) != 1 || v[0] != 0 {
		return nil, fmt.Errorf("template: open %s (annotation line %d): parent: %s", a.Stream, a.Line, v)
	}
	if s.cl, err = dialCoordinator(ctx, g.addr, id); err != nil {
		return nil, err
	}
	return s, nil
}

// Stream is one rank's handle on a stream opened by Group.Open. A Stream is
// used by one goroutine at a time.
type Stream struct {
	g        *Group
	id       int
	ann      annot.Annotation
	f        File
	cl       *parentConn
	me, size int64
	rounds   [2]int64 // operations started: reads, writes
	inBlock  bool
	known    int64 // log: the last end of file this rank knows
	blockEnd int64 // log: the end of file inside a block
	replica  File  // photocopy: where reads go, if not f (OpenReplica)
	applied  int64 // photocopy: verified writes applied to the replica
}

// call is a request to the parent; with a replica it also brings the
// writes verified since the last one and applies them to the replica,
// in the owner's order.
func (s *Stream) call(ctx context.Context, r request) (response, error) {
	if s.replica == nil {
		return s.cl.call(ctx, r)
	}
	r.Pull, r.Since = true, s.applied
	resp, err := s.cl.call(ctx, r)
	for _, w := range resp.Writes {
		if _, werr := s.replica.WriteAt(w.Data, w.Off); werr != nil {
			return resp, fmt.Errorf("template: photocopy %s: replica: apply %d bytes at %d: %w", s.ann.Stream, len(w.Data), w.Off, werr)
		}
		s.applied++
	}
	return resp, err
}

// Sync brings this rank's replica up to every write verified so far.
func (s *Stream) Sync(ctx context.Context) error {
	if s.replica == nil {
		return nil
	}
	_, err := s.call(ctx, request{Op: opPeek})
	return wrapErr(s, "sync", err)
}

// Annotation is the stream's annotation.
func (s *Stream) Annotation() annot.Annotation { return s.ann }

// Close closes this rank's connection to the parent.
func (s *Stream) Close() error { return s.cl.close() }

// Dup returns another handle on the same stream over a connection of its
// own, for another goroutine of this rank: a Scratch placed through it
// waits for its turn without holding up this handle's calls. It shares the
// stream's state at the parent, not this handle's operation counts.
func (s *Stream) Dup(ctx context.Context) (*Stream, error) {
	cl, err := dialCoordinator(ctx, s.g.addr, s.id)
	if err != nil {
		return nil, err
	}
	return &Stream{g: s.g, id: s.id, ann: s.ann, f: s.f, cl: cl, me: s.me, size: s.size}, nil
}

// Abort fails the stream for every rank: each call waiting at the parent
// and every later one returns an error carrying reason, so ranks waiting
// for a turn that will never come (an ordered placement after a segment
// whose worker failed) stop instead of hanging. The first reason wins.
func (s *Stream) Abort(ctx context.Context, reason string) error {
	_, err := s.cl.call(ctx, request{Op: opAbort, Data: []byte(reason)})
	return wrapErr(s, "abort", err)
}

// Handed reports, at the parent's rank (rank 0 of the group), how many
// segments Next has handed out and their bytes; ok is false elsewhere.
// It does not go over the network, so a progress display may poll it.
func (s *Stream) Handed() (segments int, bytes int64, ok bool) {
	if s.g.co == nil {
		return 0, 0, false
	}
	n, b := s.g.co.handed(s.id)
	return n, b, true
}

func (s *Stream) want(op string, ts ...annot.Template) error {
	for _, t := range ts {
		if s.ann.Template == t {
			return nil
		}
	}
	return fmt.Errorf("template: stream %s is a %s (annotation line %d): %s is for %v", s.ann.Stream, s.ann.Template, s.ann.Line, op, ts)
}

// minTurn is the turn this rank's next operation of kind k (0 read, 1
// write) waits for, and counts the operation.
func (s *Stream) minTurn(k int) (key byte, turn int64) {
	o := s.ann.Read
	key = 'r'
	if k == 1 {
		o, key = s.ann.Write, 'w'
	}
	round := s.rounds[k]
	s.rounds[k]++
	switch o {
	case annot.Ordered:
		return key, round*s.size + s.me
	case annot.Relaxed:
		return key, round * s.size
	}
	return key, 0
}

// Begin starts a block transaction: until End, this rank holds the
// stream's permission, and what it writes is seen by others only at End.
// It counts as one write operation for the order.
func (s *Stream) Begin(ctx context.Context) error {
	if err := s.want("Begin", annot.Log, annot.Photocopy); err != nil {
		return err
	}
	if s.ann.Tx != annot.Block {
		return fmt.Errorf("template: stream %s: Begin on an atomic stream (annotation line %d says a)", s.ann.Stream, s.ann.Line)
	}
	if s.inBlock {
		return fmt.Errorf("template: stream %s: Begin inside a block", s.ann.Stream)
	}
	key, turn := s.minTurn(1)
	r, err := s.call(ctx, request{Op: opAcquire, Lock: true, Key: key, MinTurn: turn})
	if err != nil {
		return fmt.Errorf("template: stream %s: Begin: %w", s.ann.Stream, err)
	}
	s.inBlock, s.blockEnd = true, r.Value
	s.known = max(s.known, r.Value)
	return nil
}

// End ends a block transaction and publishes it.
func (s *Stream) End(ctx context.Context) error {
	if !s.inBlock {
		return fmt.Errorf("template: stream %s: End outside a block", s.ann.Stream)
	}
	s.inBlock = false
	req := request{Op: opRelease, Lock: true, Key: 'w', Advance: true}
	if s.ann.Template == annot.Log {
		req.Set, req.Value = true, s.blockEnd
	}
	if _, err := s.call(ctx, req); err != nil {
		return fmt.Errorf("template: stream %s: End: %w", s.ann.Stream, err)
	}
	s.known = max(s.known, s.blockEnd)
	return nil
}

// Append writes p at the end of a log and returns where it went. In an
// atomic log each Append is one transaction; in a block log, Appends go
// between Begin and End.
func (s *Stream) Append(ctx context.Context, p []byte) (int64, error) {
	return s.appendWith(ctx, int64(len(p)), func(off int64) error {
		_, err := s.f.WriteAt(p, off)
		return err
	})
}

// AppendFrom is Append of the n bytes r holds from offset 0, copied in
// pieces of at most 1 MiB: a command's output may be larger than memory.
// An atomic log holds the stream from the first piece to the last, so the
// n bytes land together as Append's do.
func (s *Stream) AppendFrom(ctx context.Context, r io.ReaderAt, n int64) (int64, error) {
	return s.appendWith(ctx, n, func(off int64) error {
		buf := make([]byte, min(n, placeChunk))
		for done := int64(0); done < n; {
			k := min(int64(len(buf)), n-done)
			m, err := r.ReadAt(buf[:k], done)
			if int64(m) < k {
				if err == nil || errors.Is(err, io.EOF) {
					return fmt.Errorf("its source ended after %d bytes: %w", done+int64(m), io.ErrUnexpectedEOF)
				}
				return fmt.Errorf("read its source at %d: %w", done, err)
			}
			if _, err := s.f.WriteAt(buf[:k], off+done); err != nil {
				return err
			}
			done += k
		}
		return nil
	})
}

// appendWith appends n bytes to a log, which write writes at off.
func (s *Stream) appendWith(ctx context.Context, n int64, write func(off int64) error) (int64, error) {
	if err := s.want("Append", annot.Log); err != nil {
		return 0, err
	}
	if s.inBlock {
		off := s.blockEnd
		if err := write(off); err != nil {
			return 0, fmt.Errorf("template: log %s: append %d bytes at %d: %w", s.ann.Stream, n, off, err)
		}
		s.blockEnd += n
		return off, nil
	}
	if s.ann.Tx == annot.Block {
		return 0, fmt.Errorf("template: log %s: Append outside Begin/End on a block stream (annotation line %d says b)", s.ann.Stream, s.ann.Line)
	}
	key, turn := s.minTurn(1)
	r, err := s.cl.call(ctx, request{Op: opAcquire, Lock: true, Key: key, MinTurn: turn})
	if err != nil {
		return 0, fmt.Errorf("template: log %s: Append: %w", s.ann.Stream, err)
	}
	off := r.Value
	werr := write(off)
	end := off
	if werr == nil {
		end += n
	}
	// The permission goes back even after a failed write, with the end of
	// file unchanged.
	if _, err := s.cl.call(ctx, request{Op: opRelease, Lock: true, Key: key, Advance: true, Set: true, Value: end}); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		return 0, fmt.Errorf("template: log %s: append %d bytes at %d: %w", s.ann.Stream, n, off, werr)
	}
	s.known = max(s.known, end)
	return off, nil
}

// EOF asks the parent for the log's end of file, and remembers it.
func (s *Stream) EOF(ctx context.Context) (int64, error) {
	r, err := s.cl.call(ctx, request{Op: opPeek})
	if err != nil {
		return 0, fmt.Errorf("template: stream %s: end of file: %w", s.ann.Stream, err)
	}
	s.known = max(s.known, r.Value)
	return s.known, nil
}

// ReadAt reads without synchronisation: in a log, up to the last end of
// file this rank knows (io.EOF beyond); in a photocopy, straight from the
// file, after the read order's turn (and, in a block photocopy, holding the
// permission, so a block being applied is never seen in part).
func (s *Stream) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	switch s.ann.Template {
	case annot.Log:
		if off >= s.known {
			return 0, io.EOF
		}
		q := p[:min(int64(len(p)), s.known-off)]
		n, err := s.f.ReadAt(q, off)
		if err == nil && len(q) < len(p) {
			err = io.EOF
		}
		return n, err
	case annot.Photocopy:
		lock := s.ann.Tx == annot.Block && !s.inBlock
		key, turn := s.minTurn(0)
		if lock || turn > 0 {
			if _, err := s.call(ctx, request{Op: opAcquire, Lock: lock, Key: key, MinTurn: turn}); err != nil {
				return 0, fmt.Errorf("template: photocopy %s: read: %w", s.ann.Stream, err)
			}
		}
		src := s.f
		if s.replica != nil {
			src = s.replica
		}
		n, err := src.ReadAt(p, off)
		if lock || turn > 0 || s.ann.Read != annot.Chaotic {
			if _, rerr := s.call(ctx, request{Op: opRelease, Lock: lock, Key: key, Advance: true}); rerr != nil {
				return n, fmt.Errorf("template: photocopy %s: read: %w", s.ann.Stream, rerr)
			}
		}
		return n, err
	}
	return 0, s.want("ReadAt", annot.Log, annot.Photocopy)
}

// WriteAt writes p at off in a photocopy: the owner writes and verifies it
// before it returns. Inside a block the owner keeps it until End.
func (s *Stream) WriteAt(ctx context.Context, p []byte, off int64) error {
	if err := s.want("WriteAt", annot.Photocopy); err != nil {
		return err
	}
	if s.inBlock {
		_, err := s.call(ctx, request{Op: opWrite, Off: off, Data: p})
		return wrapErr(s, "write", err)
	}
	if s.ann.Tx == annot.Block {
		return fmt.Errorf("template: photocopy %s: WriteAt outside Begin/End on a block stream (annotation line %d says b)", s.ann.Stream, s.ann.Line)
	}
	key, turn := s.minTurn(1)
	if turn > 0 || s.ann.Write != annot.Chaotic {
		if _, err := s.call(ctx, request{Op: opAcquire, Key: key, MinTurn: turn}); err != nil {
			return wrapErr(s, "write", err)
		}
	}
	_, err := s.call(ctx, request{Op: opWrite, Off: off, Data: p})
	if s.ann.Write != annot.Chaotic {
		if _, rerr := s.call(ctx, request{Op: opRelease, Key: key, Advance: true}); err == nil {
			err = rerr
		}
	}
	return wrapErr(s, "write", err)
}

func wrapErr(s *Stream, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("template: %s %s: %s: %w", s.ann.Template, s.ann.Stream, what, err)
}
