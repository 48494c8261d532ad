package template

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pario/pario/template/annot"
)

// Segment is one segment of a newspaper or report: its index, base and
// extent in the stream's file. Reads and writes through it stay inside it.
type Segment struct {
	Index        int
	Base, Extent int64
	f            File
	stream       string
}

// ReadAt reads inside the segment (off is relative to Base).
func (sg *Segment) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= sg.Extent {
		return 0, io.EOF
	}
	q := p[:min(int64(len(p)), sg.Extent-off)]
	n, err := sg.f.ReadAt(q, sg.Base+off)
	if err == nil && len(q) < len(p) {
		err = io.EOF
	}
	return n, err
}

// WriteAt writes inside the segment; a write past its extent is refused.
func (sg *Segment) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > sg.Extent {
		return 0, fmt.Errorf("template: stream %s: segment %d: write of %d bytes at %d leaves its extent %d", sg.stream, sg.Index, len(p), off, sg.Extent)
	}
	return sg.f.WriteAt(p, sg.Base+off)
}

// View is the segment as a File of its own, for a stream opened on a
// sub-group: a newspaper of newspapers.
func (sg *Segment) View() File { return sg }

// Bounds are the segment's bounds as a part to divide further (relative to
// its View).
func (sg *Segment) Bounds() Bounds { return Bounds{Min: 0, Max: sg.Extent} }

func (s *Stream) segment(ctx context.Context, op int, i int) (*Segment, error) {
	r, err := s.cl.call(ctx, request{Op: op, Index: i})
	if err != nil {
		return nil, wrapErr(s, "segment", err)
	}
	if r.Done {
		return nil, io.EOF
	}
	return &Segment{Index: r.Seg.Index, Base: r.Seg.Base, Extent: r.Seg.Extent, f: s.f, stream: s.ann.Stream}, nil
}

// Next asks the parent for the next segment of a newspaper or report
// (from a constant extent or a segmentation function); io.EOF when none is
// left. Segments go to whichever rank asks first, each exactly once.
func (s *Stream) Next(ctx context.Context) (*Segment, error) {
	if err := s.want("Next", annot.Newspaper, annot.Report); err != nil {
		return nil, err
	}
	return s.segment(ctx, opNext, 0)
}

// Segment returns segment i of a report, granted by the parent whether or
// not this rank was given it; io.EOF past the last. A newspaper has no such
// access: its segments are its workers' alone.
func (s *Stream) Segment(ctx context.Context, i int) (*Segment, error) {
	if err := s.want("Segment", annot.Report); err != nil {
		return nil, err
	}
	return s.segment(ctx, opSegment, i)
}

// Out returns output segment i of a newspaper or report of constant
// extent: [Min + i*extent, Min + (i+1)*extent), written directly.
func (s *Stream) Out(i int) (*Segment, error) {
	if err := s.want("Out", annot.Newspaper, annot.Report); err != nil {
		return nil, err
	}
	if s.ann.Extent <= 0 {
		return nil, fmt.Errorf("template: stream %s: Out needs a constant extent (annotation line %d)", s.ann.Stream, s.ann.Line)
	}
	return &Segment{Index: i, Base: int64(i) * s.ann.Extent, Extent: s.ann.Extent, f: s.f, stream: s.ann.Stream}, nil
}

// Scratch is an output segment of unknown extent: written to a local
// scratch file, then sent to the parent by Close.
type Scratch struct {
	s     *Stream
	index int
	tmp   *os.File
	n     int64
	err   error
}

// Scratch starts output segment i of a newspaper whose extent is unknown
// (=0). Its index decides its place under an ordered or relaxed write
// order; a chaotic one is placed when it arrives.
func (s *Stream) Scratch(i int) (*Scratch, error) {
	if err := s.want("Scratch", annot.Newspaper); err != nil {
		return nil, err
	}
	if !s.ann.Unknown() {
		return nil, fmt.Errorf("template: stream %s: Scratch is for an unknown extent (=0; annotation line %d)", s.ann.Stream, s.ann.Line)
	}
	tmp, err := os.CreateTemp("", "pario-segment-*")
	if err != nil {
		return nil, fmt.Errorf("template: stream %s: segment %d: scratch file: %w", s.ann.Stream, i, err)
	}
	return &Scratch{s: s, index: i, tmp: tmp}, nil
}

// Write appends to the scratch segment.
func (sc *Scratch) Write(p []byte) (int, error) {
	if sc.err != nil {
		return 0, sc.err
	}
	n, err := sc.tmp.Write(p)
	sc.n += int64(n)
	if err != nil {
		sc.err = fmt.Errorf("template: stream %s: segment %d: scratch %s: %w", sc.s.ann.Stream, sc.index, sc.tmp.Name(), err)
	}
	return n, sc.err
}

// Err is the first write to the scratch file that failed, naming the
// file; nil if none did.
func (sc *Scratch) Err() error { return sc.err }

// Discard removes the scratch file without placing the segment: its
// worker failed, and the stream is to be aborted.
func (sc *Scratch) Discard() {
	sc.tmp.Close()
	os.Remove(sc.tmp.Name())
}

// Close sends the segment to the parent, which writes it whole (in
// index order under an ordered write order), and returns where it went.
// The scratch file is removed either way.
func (sc *Scratch) Close(ctx context.Context) (int64, error) {
	defer os.Remove(sc.tmp.Name())
	defer sc.tmp.Close()
	if sc.err != nil {
		return 0, sc.err
	}
	var turn int64
	switch sc.s.ann.Write {
	case annot.Ordered:
		turn = int64(sc.index)
	case annot.Relaxed:
		turn = int64(sc.index) / sc.s.size * sc.s.size
	}
	// In pieces: the segment may be larger than this rank's memory or the
	// parent's, which may have a placement from every rank waiting.
	data := make([]byte, min(sc.n, placeChunk))
	var base int64
	for off := int64(0); off == 0 || off < sc.n; {
		n := min(int64(len(data)), sc.n-off)
		if _, err := sc.tmp.ReadAt(data[:n], off); err != nil && n > 0 {
			err = fmt.Errorf("template: stream %s: segment %d: read scratch %s: %w", sc.s.ann.Stream, sc.index, sc.tmp.Name(), err)
			if off > 0 {
				// The parent holds the stream for the rest of it.
				sc.s.Abort(context.WithoutCancel(ctx), err.Error())
			}
			return 0, err
		}
		off += n
		r, err := sc.s.cl.call(ctx, request{Op: opPlace, Index: sc.index, MinTurn: turn, Value: sc.n, Data: data[:n], More: off < sc.n})
		if err != nil {
			return 0, wrapErr(sc.s, fmt.Sprintf("place segment %d", sc.index), err)
		}
		base = r.Value
		if n == 0 {
			break
		}
	}
	return base, nil
}

// Control is the meeting's floor: while a rank holds it, no other rank
// reads or writes the meeting's file, and the global pointer is its own.
type Control struct {
	s   *Stream
	pos int64
}

// Pos is the global pointer.
func (c *Control) Pos() int64 { return c.pos }

// SetPos moves the global pointer.
func (c *Control) SetPos(pos int64) { c.pos = pos }

// Read reads at the global pointer and moves it.
func (c *Control) Read(p []byte) (int, error) {
	n, err := c.s.f.ReadAt(p, c.pos)
	c.pos += int64(n)
	return n, err
}

// Write writes at the global pointer and moves it.
func (c *Control) Write(p []byte) (int, error) {
	n, err := c.s.f.WriteAt(p, c.pos)
	c.pos += int64(n)
	return n, err
}

// Do takes the meeting's floor, in the write order's turn, runs fn and
// hands the floor and the pointer back. One Do is one transaction (atomic:
// use it for one statement; block: for a block of them).
func (s *Stream) Do(ctx context.Context, fn func(c *Control) error) error {
	return s.meet(ctx, 1, fn)
}

// DoRead is Do in the read order's turn, for a reading statement.
func (s *Stream) DoRead(ctx context.Context, fn func(c *Control) error) error {
	return s.meet(ctx, 0, fn)
}

func (s *Stream) meet(ctx context.Context, k int, fn func(c *Control) error) error {
	if err := s.want("Do", annot.Meeting); err != nil {
		return err
	}
	key, turn := s.minTurn(k)
	r, err := s.cl.call(ctx, request{Op: opAcquire, Lock: true, Key: key, MinTurn: turn})
	if err != nil {
		return wrapErr(s, "take the floor", err)
	}
	c := &Control{s: s, pos: r.Value}
	ferr := fn(c)
	_, err = s.cl.call(ctx, request{Op: opRelease, Lock: true, Key: key, Advance: true, Set: true, Value: c.pos})
	if ferr != nil {
		return ferr
	}
	return wrapErr(s, "hand the floor back", err)
}
