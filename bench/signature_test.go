package bench

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestStampRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		off := rapid.Int64Range(0, 1<<43-1).Draw(t, "off") &^ 7
		rank := rapid.IntRange(0, 65535).Draw(t, "rank")
		rep := rapid.IntRange(0, 255).Draw(t, "rep")
		o, r, p := DecodeStamp(Stamp(off, rank, rep))
		if o != off || r != rank || p != rep {
			t.Fatalf("decode(stamp(%d,%d,%d)) = %d,%d,%d", off, rank, rep, o, r, p)
		}
		if Stamp(off, rank, rep) == 0 {
			t.Fatal("a stamp is zero")
		}
	})
}

func transferOf(off int64, n, rank, rep int) []byte {
	b := make([]byte, n)
	FillBody(b, rank, rep, 0)
	StampTransfer(b, off, rank, rep)
	return b
}

// The signature tells apart transfers of different offsets, ranks and
// repetitions, and names the block found in the wrong place.
func TestSignatureDetectsMisplacedBlocks(t *testing.T) {
	const n = 64 << 10
	want := transferOf(3<<20, n, 2, 1)
	if !bytes.Equal(want, transferOf(3<<20, n, 2, 1)) {
		t.Fatal("not deterministic")
	}
	cases := []struct {
		name string
		got  []byte
		say  string
	}{
		{"other offset", transferOf(2<<20, n, 2, 1), "found a block stamped for offset 2097152 by rank 2 in repetition 1 (misplaced by +1048576 bytes)"},
		{"other rank", transferOf(3<<20, n, 3, 1), "by rank 3"},
		{"stale repetition", transferOf(3<<20, n, 2, 0), "stale data from an earlier repetition"},
		{"zeros", make([]byte, n), "found zeros"},
	}
	for _, c := range cases {
		if bytes.Equal(c.got, want) {
			t.Fatalf("%s: same bytes", c.name)
		}
		m := findMismatch(c.got, want, 3<<20, 2, 1)
		if m.Offset != 3<<20 || !strings.Contains(m.Describe(), c.say) {
			t.Errorf("%s: offset %d, %q; want offset %d and %q", c.name, m.Offset, m.Describe(), 3<<20, c.say)
		}
	}
	// One corrupted 4 KiB block in the middle: the offset of that block.
	got := bytes.Clone(want)
	copy(got[20<<10:24<<10], transferOf(0, 4<<10, 2, 1))
	m := findMismatch(got, want, 3<<20, 2, 1)
	if m.Offset != 3<<20+20<<10 || !strings.Contains(m.Describe(), "stamped for offset 0") {
		t.Errorf("corrupt block: %+v %s", m, m.Describe())
	}
	// A flipped byte inside the body.
	got = bytes.Clone(want)
	got[5000] ^= 1
	m = findMismatch(got, want, 3<<20, 2, 1)
	if m.Offset != 3<<20+5000 || m.Words != 1 || m.Stamp {
		t.Errorf("flipped byte: %+v", m)
	}
}
