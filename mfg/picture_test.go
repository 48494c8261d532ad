package mfg

import (
	"fmt"
	"strings"
	"testing"
)

// The picture of docs/mfg.md, drawn from the map: which rank writes each
// place of the file in each generation.
func TestDocPicture(t *testing.T) {
	c := Config{3, 5, 4}
	m := mustMap(t, Desc{FileHeader: 1, Sections: []Section{{Name: "t", Header: 1, Record: 1}, {Name: "p", Header: 1, Record: 1}},
		Runs: 3, Gens: 3, SampleFreq: 1})
	holders := []Assignment{c.Initial(), {1, 2, 2}, {0, 1, 3}}
	var rows []string
	for i, a := range holders {
		p, err := c.Classify(a)
		if err != nil {
			t.Fatal(err)
		}
		row := []byte(strings.Repeat(".", int(m.Size())))
		for k := range c.Procs {
			v, err := m.View(k, int64(i), []Assignment{a})
			if err != nil {
				t.Fatal(err)
			}
			for _, piece := range v {
				for b := piece.Off; b < piece.End(); b++ {
					row[b] = byte('0' + k)
				}
			}
		}
		// Lay the bytes out as the doc does: FH, then per run t:H123 p:H123.
		var b strings.Builder
		fmt.Fprintf(&b, "gen %d       %c   ", i+1, row[0])
		for r := range 3 {
			for s := range 2 {
				off := 1 + r*8 + s*4
				fmt.Fprintf(&b, "  %c %c %c %c  ", row[off], row[off+1], row[off+2], row[off+3])
			}
		}
		rows = append(rows, strings.TrimRight(b.String(), " ")+"   "+p.String())
	}
	want := []string{
		"gen 1       0     0 0 . .    0 0 . .    1 1 . .    1 1 . .    2 2 . .    2 2 . .   Partial-1",
		"gen 2       .     . . 1 .    . . 1 .    . . 2 .    . . 2 .    . . 2 .    . . 2 .   Partial+1",
		"gen 3       .     . . . 0    . . . 0    . . . 1    . . . 1    . . . 3    . . . 3   Partial-1",
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i, rows[i], want[i])
		}
	}
	if n, _ := Moves(holders[0], holders[1]); n != 2 {
		t.Errorf("I/O swaps between generations 1 and 2: %d, want 2", n)
	}
}
