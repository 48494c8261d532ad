package periodic

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Event is one trace record. Time is in hundredths of a second.
type Event struct {
	Time int64
	Rank int64
	Kind string
	Peer int64
	Tag  int64
	Size int64
}

// Append appends the canonical line for e to b.
func (e Event) Append(b []byte) []byte {
	b = strconv.AppendInt(b, e.Time/100, 10)
	b = append(b, '.', byte('0'+e.Time%100/10), byte('0'+e.Time%10), ' ')
	b = strconv.AppendInt(b, e.Rank, 10)
	b = append(b, ' ')
	b = append(b, e.Kind...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Peer, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Tag, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Size, 10)
	return append(b, '\n')
}

// Format writes the canonical text of a trace.
func Format(evs []Event) []byte {
	b := make([]byte, 0, 32*len(evs))
	for _, e := range evs {
		b = e.Append(b)
	}
	return b
}

// Parse reads a trace in the canonical form. It accepts exactly what Format
// produces: Format(Parse(b)) == b whenever Parse succeeds.
func Parse(b []byte) ([]Event, error) {
	var evs []Event
	line := 0
	for len(b) > 0 {
		line++
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil, fmt.Errorf("periodic: line %d: no final newline", line)
		}
		e, err := parseLine(b[:i])
		if err != nil {
			return nil, fmt.Errorf("periodic: line %d: %w", line, err)
		}
		evs = append(evs, e)
		b = b[i+1:]
	}
	return evs, nil
}

var errField = errors.New("want <time> <rank> <event> <peer> <tag> <size>")

func parseLine(l []byte) (Event, error) {
	f := bytes.Split(l, []byte{' '})
	if len(f) != 6 {
		return Event{}, errField
	}
	var e Event
	t := f[0]
	if len(t) < 4 || t[len(t)-3] != '.' {
		return e, fmt.Errorf("time %q: want seconds with two decimals", t)
	}
	sec, err := canonInt(t[:len(t)-3], false)
	if err != nil {
		return e, fmt.Errorf("time %q: %w", t, err)
	}
	d1, d2 := t[len(t)-2], t[len(t)-1]
	if d1 < '0' || d1 > '9' || d2 < '0' || d2 > '9' || sec > (1<<62)/100 {
		return e, fmt.Errorf("time %q: want seconds with two decimals", t)
	}
	e.Time = sec*100 + int64(d1-'0')*10 + int64(d2-'0')
	if e.Rank, err = canonInt(f[1], false); err != nil {
		return e, fmt.Errorf("rank: %w", err)
	}
	if len(f[2]) == 0 || len(f[2]) > 32 {
		return e, fmt.Errorf("event %q: want a lower-case word", f[2])
	}
	for _, c := range f[2] {
		if c < 'a' || c > 'z' {
			if c != '_' {
				return e, fmt.Errorf("event %q: want a lower-case word", f[2])
			}
		}
	}
	e.Kind = string(f[2])
	if e.Peer, err = canonInt(f[3], true); err != nil {
		return e, fmt.Errorf("peer: %w", err)
	}
	if e.Tag, err = canonInt(f[4], true); err != nil {
		return e, fmt.Errorf("tag: %w", err)
	}
	if e.Size, err = canonInt(f[5], false); err != nil {
		return e, fmt.Errorf("size: %w", err)
	}
	return e, nil
}

// canonInt parses a decimal integer in canonical form: no '+', no leading
// zeros, no "-0", a '-' only when neg allows negative values.
func canonInt(s []byte, neg bool) (int64, error) {
	if len(s) == 0 {
		return 0, errors.New("empty number")
	}
	d := s
	if d[0] == '-' {
		if !neg {
			return 0, fmt.Errorf("%q: negative", s)
		}
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || (d[0] == '0' && len(d) > 1) || (s[0] == '-' && d[0] == '0') {
		return 0, fmt.Errorf("%q: not a canonical integer", s)
	}
	var v int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q: not a number", s)
		}
		v = v*10 + int64(c-'0')
	}
	if s[0] == '-' {
		v = -v
	}
	return v, nil
}
