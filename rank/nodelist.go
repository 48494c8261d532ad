package rank

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxNodelistHosts bounds how many hosts ExpandNodelist returns, so that a
// list such as n[0-999999999] is an error rather than an exhausted memory.
const MaxNodelistHosts = 1 << 20

// NodelistError reports a malformed Slurm node list. Pos is the byte offset
// (from 0) in List where the problem was found.
type NodelistError struct {
	List string
	Pos  int
	Msg  string
}

func (e *NodelistError) Error() string {
	return fmt.Sprintf("rank: node list %q: position %d: %s", e.List, e.Pos, e.Msg)
}

// ExpandNodelist expands a Slurm host list expression into host names, in
// order. Items are separated by commas; an item is a name in which each
// bracket group [a,b-c,...] stands for the listed numbers, printed at least as
// wide as the lower bound's text (zero padding kept):
//
//	n[001-003]         n001 n002 n003
//	a[1,3-5],b7        a1 a3 a4 a5 b7
//	node-[01-02]-ib    node-01-ib node-02-ib
//	r[1-2]n[1-2]       r1n1 r1n2 r2n1 r2n2
//
// Names may hold letters, digits, '-', '.' and '_'.
func ExpandNodelist(list string) ([]string, error) {
	items, err := parseNodelist(list)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, it := range items {
		n := it.count()
		if n > MaxNodelistHosts || total+n > MaxNodelistHosts {
			return nil, &NodelistError{list, 0, fmt.Sprintf("expands to more than %d hosts", MaxNodelistHosts)}
		}
		total += n
	}
	hosts := make([]string, 0, total)
	for _, it := range items {
		hosts = it.expand(hosts)
	}
	return hosts, nil
}

// FirstNode returns the first host of a Slurm host list (see ExpandNodelist)
// without expanding the rest. The whole list is still checked.
func FirstNode(list string) (string, error) {
	items, err := parseNodelist(list)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range items[0] {
		if p.groups == nil {
			b.WriteString(p.lit)
		} else {
			r := p.groups[0]
			b.WriteString(pad(r.lo, r.width))
		}
	}
	return b.String(), nil
}

// nodeItem is one comma-separated item: literal text and bracket groups.
type nodeItem []nodePart

type nodePart struct {
	lit    string      // when groups is nil
	groups []nodeRange // a bracket group
}

type nodeRange struct {
	lo, hi uint64
	width  int
}

// count is the number of hosts the item stands for, saturating above
// MaxNodelistHosts.
func (it nodeItem) count() int {
	n := 1
	for _, p := range it {
		if p.groups == nil {
			continue
		}
		g := 0
		for _, r := range p.groups {
			g += int(min(r.hi-r.lo+1, MaxNodelistHosts+1))
			if g > MaxNodelistHosts {
				return MaxNodelistHosts + 1
			}
		}
		n *= g
		if n > MaxNodelistHosts {
			return MaxNodelistHosts + 1
		}
	}
	return n
}

func (it nodeItem) expand(out []string) []string {
	var rec func(i int, prefix string)
	rec = func(i int, prefix string) {
		if i == len(it) {
			out = append(out, prefix)
			return
		}
		p := it[i]
		if p.groups == nil {
			rec(i+1, prefix+p.lit)
			return
		}
		for _, r := range p.groups {
			for v := r.lo; ; v++ {
				rec(i+1, prefix+pad(v, r.width))
				if v == r.hi {
					break
				}
			}
		}
	}
	rec(0, "")
	return out
}

func pad(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_'
}

// maxDigits keeps bracket numbers well inside uint64.
const maxDigits = 18

func parseNodelist(list string) ([]nodeItem, error) {
	fail := func(pos int, format string, args ...any) ([]nodeItem, error) {
		return nil, &NodelistError{list, pos, fmt.Sprintf(format, args...)}
	}
	if list == "" {
		return fail(0, "empty")
	}
	var items []nodeItem
	var cur nodeItem
	litStart := -1 // start of the current literal run, or -1
	endLit := func(i int) {
		if litStart >= 0 {
			cur = append(cur, nodePart{lit: list[litStart:i]})
			litStart = -1
		}
	}
	for i := 0; i < len(list); {
		c := list[i]
		switch {
		case c == ',':
			endLit(i)
			if len(cur) == 0 {
				return fail(i, "empty host name before ','")
			}
			items = append(items, cur)
			cur = nil
			i++
			if i == len(list) {
				return fail(i, "empty host name after ','")
			}
		case c == '[':
			endLit(i)
			open := i
			i++
			var groups []nodeRange
			for {
				// One entry: digits, optionally '-' digits.
				if i == len(list) {
					return fail(open, "'[' is never closed")
				}
				lo, w, next, err := parseDigits(list, i)
				if err != "" {
					return fail(next, "%s in '[' at position %d", err, open)
				}
				r := nodeRange{lo: lo, hi: lo, width: w}
				i = next
				if i < len(list) && list[i] == '-' {
					i++
					if i == len(list) {
						return fail(open, "'[' is never closed")
					}
					hi, _, next, err := parseDigits(list, i)
					if err != "" {
						return fail(next, "%s after '-'", err)
					}
					if hi < lo {
						return fail(i, "range %d-%d runs backwards", lo, hi)
					}
					r.hi = hi
					i = next
				}
				groups = append(groups, r)
				if i == len(list) {
					return fail(open, "'[' is never closed")
				}
				if list[i] == ']' {
					i++
					break
				}
				if list[i] != ',' {
					return fail(i, "unexpected %q in '[' at position %d", list[i], open)
				}
				i++
			}
			cur = append(cur, nodePart{groups: groups})
		case c == ']':
			return fail(i, "']' without '['")
		case isNameByte(c):
			if litStart < 0 {
				litStart = i
			}
			i++
		default:
			return fail(i, "unexpected %q", c)
		}
	}
	endLit(len(list))
	items = append(items, cur)
	return items, nil
}

// parseDigits reads a run of decimal digits at list[i:]; it returns the
// value, the number of digits, the index after them, or a problem.
func parseDigits(list string, i int) (v uint64, width, next int, problem string) {
	start := i
	for i < len(list) && list[i] >= '0' && list[i] <= '9' {
		if i-start == maxDigits {
			return 0, 0, i, fmt.Sprintf("number longer than %d digits", maxDigits)
		}
		v = v*10 + uint64(list[i]-'0')
		i++
	}
	if i == start {
		if i == len(list) {
			return 0, 0, i, "missing number at the end"
		}
		return 0, 0, i, fmt.Sprintf("expected a number, found %q", list[i])
	}
	return v, i - start, i, ""
}
