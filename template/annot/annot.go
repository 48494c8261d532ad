// Package annot parses PI/OT template annotations: one line per I/O stream
// and function, in the seed's own syntax,
//
//	fin NEWSPAPER ro wo b ComputeMolecule=BSize
//
// (stream, template, read order, write order, transaction, function =
// segmentation). Lines naming the same stream again describe the next level
// down of a hierarchy: a newspaper of newspapers. The parser is pure: it
// reads bytes given to it, so a program can change its I/O behaviour by
// changing a line of a file it reads at start, with no rebuild.
package annot

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/pario/pario/units"
)

// Template is one of the five PI/OT templates.
type Template uint8

// The templates.
const (
	Photocopy Template = iota + 1
	Newspaper
	Log
	Report
	Meeting
)

var templateNames = [...]string{Photocopy: "PHOTOCOPY", Newspaper: "NEWSPAPER", Log: "LOG", Report: "REPORT", Meeting: "MEETING"}

func (t Template) String() string {
	if t >= Photocopy && t <= Meeting {
		return templateNames[t]
	}
	return fmt.Sprintf("Template(%d)", uint8(t))
}

// Segmented reports whether the template divides its file into segments.
func (t Template) Segmented() bool { return t == Newspaper || t == Report }

// Order is the order attribute, for reads or for writes.
type Order uint8

// The orders: the sequential program's; any order inside a round, every
// round done before the next starts; any order at all.
const (
	Ordered Order = iota + 1
	Relaxed
	Chaotic
)

func (o Order) String() string {
	switch o {
	case Ordered:
		return "ordered"
	case Relaxed:
		return "relaxed"
	case Chaotic:
		return "chaotic"
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// Transaction is the transaction attribute.
type Transaction uint8

// Atomic: each I/O statement is indivisible. Block: all the I/O of a block
// (between Begin and End) is one transaction.
const (
	Atomic Transaction = iota + 1
	Block
)

func (t Transaction) String() string {
	switch t {
	case Atomic:
		return "atomic"
	case Block:
		return "block"
	}
	return fmt.Sprintf("Transaction(%d)", uint8(t))
}

// Annotation is one line: how one stream behaves in one function.
type Annotation struct {
	Stream   string
	Template Template
	Read     Order
	Write    Order
	Tx       Transaction
	Function string
	// Segmentation: Extent > 0 is a constant extent; SegFunc names a
	// segmentation function; both zero means unknown (the seed's "=0").
	Extent  int64
	SegFunc string
	Line    int
}

// Unknown reports whether the extent is unknown until a segment is written.
func (a Annotation) Unknown() bool { return a.Extent == 0 && a.SegFunc == "" }

// String is the annotation's line, in the form Parse reads.
func (a Annotation) String() string {
	seg := a.SegFunc
	if seg == "" {
		seg = strconv.FormatInt(a.Extent, 10)
	}
	return fmt.Sprintf("%s %s r%c w%c %c %s=%s", a.Stream, a.Template, a.Read.String()[0], a.Write.String()[0], a.Tx.String()[0], a.Function, seg)
}

// File is a parsed annotation file.
type File struct {
	Name  string
	Lines []Annotation
}

// Levels returns the annotations of stream in order: the outermost level
// first, each next one describing the segments of the one before.
func (f *File) Levels(stream string) []Annotation {
	var out []Annotation
	for _, a := range f.Lines {
		if a.Stream == stream {
			out = append(out, a)
		}
	}
	return out
}

// Lookup returns the annotation of stream in function.
func (f *File) Lookup(stream, function string) (Annotation, bool) {
	for _, a := range f.Lines {
		if a.Stream == stream && a.Function == function {
			return a, true
		}
	}
	return Annotation{}, false
}

// Error is a parse error: the file, line and field (1-based; 0 when the
// whole line is wrong) and what was wrong.
type Error struct {
	File  string
	Line  int
	Field int
	Name  string // the field's name
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: field %d (%s): %s", e.File, e.Line, e.Field, e.Name, e.Msg)
}

var fieldNames = [...]string{"", "stream", "template", "read order", "write order", "transaction", "function=segmentation"}

// Parse reads an annotation file; name is used in errors. Blank lines and
// text from '#' on are ignored.
func Parse(name string, src []byte) (*File, error) {
	f := &File{Name: name}
	seen := map[[2]string]int{}
	// Editors on Windows start a UTF-8 file with a byte order mark, which
	// would otherwise make the first stream's name "\ufeffin".
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	for i, raw := range bytes.Split(src, []byte("\n")) {
		line := string(raw)
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		a, err := parseLine(fields)
		if err != nil {
			err.File, err.Line = name, i+1
			if err.Field > 0 {
				err.Name = fieldNames[err.Field]
			}
			return nil, err
		}
		a.Line = i + 1
		k := [2]string{a.Stream, a.Function}
		if prev, ok := seen[k]; ok {
			return nil, &Error{File: name, Line: i + 1, Field: 6, Name: fieldNames[6],
				Msg: fmt.Sprintf("stream %q in function %q is already annotated on line %d", a.Stream, a.Function, prev)}
		}
		seen[k] = i + 1
		f.Lines = append(f.Lines, a)
	}
	return f, nil
}

func parseLine(fields []string) (Annotation, *Error) {
	bad := func(field int, format string, args ...any) (Annotation, *Error) {
		return Annotation{}, &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(fields) != 6 {
		return Annotation{}, &Error{Msg: fmt.Sprintf("%d fields, want 6: stream TEMPLATE r{o,r,c} w{o,r,c} {a,b} function=segmentation", len(fields))}
	}
	var a Annotation
	a.Stream = fields[0]
	if !isName(a.Stream) {
		return bad(1, "%q is not a name (letters, digits, _ . -)", a.Stream)
	}
	switch strings.ToUpper(fields[1]) {
	case "PHOTOCOPY":
		a.Template = Photocopy
	case "NEWSPAPER":
		a.Template = Newspaper
	case "LOG":
		a.Template = Log
	case "REPORT":
		a.Template = Report
	case "MEETING":
		a.Template = Meeting
	default:
		return bad(2, "%q is not PHOTOCOPY, NEWSPAPER, LOG, REPORT or MEETING", fields[1])
	}
	var ok bool
	if a.Read, ok = order(fields[2], 'r'); !ok {
		return bad(3, "%q is not ro, rr or rc (ordered, relaxed, chaotic)", fields[2])
	}
	if a.Write, ok = order(fields[3], 'w'); !ok {
		return bad(4, "%q is not wo, wr or wc (ordered, relaxed, chaotic)", fields[3])
	}
	switch fields[4] {
	case "a":
		a.Tx = Atomic
	case "b":
		a.Tx = Block
	default:
		return bad(5, "%q is not a (atomic) or b (block)", fields[4])
	}
	fn, seg, found := strings.Cut(fields[5], "=")
	if !found {
		return bad(6, "%q has no '=': want function=segmentation (a size, a function name, or 0 for unknown)", fields[5])
	}
	if !isName(fn) {
		return bad(6, "function %q is not a name (letters, digits, _ . -)", fn)
	}
	a.Function = fn
	switch {
	case seg == "":
		return bad(6, "empty segmentation: want a size, a function name, or 0 for unknown")
	case seg[0] >= '0' && seg[0] <= '9' || seg[0] == '-' || seg[0] == '+':
		n, err := units.ParseSize(seg, units.AllowZero)
		if err != nil {
			return bad(6, "segmentation %q: %v", seg, err)
		}
		a.Extent = n
	case isName(seg):
		a.SegFunc = seg
	default:
		return bad(6, "segmentation %q is neither a size nor a function name", seg)
	}
	if !a.Template.Segmented() && !a.Unknown() {
		return bad(6, "segmentation %q given for %s, which is not segmented (only NEWSPAPER and REPORT are): write %s=0", seg, a.Template, fn)
	}
	return a, nil
}

func order(s string, prefix byte) (Order, bool) {
	if len(s) != 2 || s[0] != prefix {
		return 0, false
	}
	switch s[1] {
	case 'o':
		return Ordered, true
	case 'r':
		return Relaxed, true
	case 'c':
		return Chaotic, true
	}
	return 0, false
}

func isName(s string) bool {
	if s == "" || !(s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
