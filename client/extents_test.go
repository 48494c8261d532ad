package client

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/pario/pario/dist"
	"pgregory.net/rapid"
)

func TestExtentsMergeWholeStripes(t *testing.T) {
	d, err := dist.New(dist.SimpleStripe, "strip_size=65536", 4)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 1<<20)
	xs := extents(d, p, 0, 4<<20)
	// 1 MiB over 4 servers at 64 KiB strips: one request per server, each
	// 256 KiB gathered from 4 strips.
	if len(xs) != 4 {
		t.Fatalf("%d extents, want 4", len(xs))
	}
	for i, x := range xs {
		if x.datafile != i || x.physical != 0 || x.length != 256<<10 || len(x.bufs) != 4 {
			t.Errorf("extent %d = datafile %d phys %d len %d in %d buffers", i, x.datafile, x.physical, x.length, len(x.bufs))
		}
	}
	// A cap on the request size cuts extents.
	if xs := extents(d, p, 0, 100<<10); len(xs) != 16 {
		t.Fatalf("with 100 KiB requests: %d extents, want 16 (one per strip)", len(xs))
	}
}

// TestExtentsCoverExactly: under any distribution, the extents' buffers
// are exactly the caller's bytes, each once, and each extent is one
// contiguous physical run on its datafile.
func TestExtentsCoverExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "servers")
		layouts := []string{
			"simple_stripe:strip_size=" + itoa(rapid.IntRange(1, 5000).Draw(t, "strip")),
			"basic",
			"twod_stripe:num_groups=2,strip_size=" + itoa(rapid.IntRange(1, 3000).Draw(t, "tstrip")) + ",group_strip_factor=3",
		}
		l, err := dist.ParseLayout(layouts[rapid.IntRange(0, len(layouts)-1).Draw(t, "layout")])
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Build(n)
		if err != nil {
			t.Fatal(err)
		}
		off := int64(rapid.IntRange(0, 100000).Draw(t, "off"))
		p := make([]byte, rapid.IntRange(0, 50000).Draw(t, "len"))
		for i := range p {
			p[i] = byte(i * 7)
		}
		max := int64(rapid.IntRange(1, 20000).Draw(t, "max"))
		var covered int64
		seen := make([]bool, len(p))
		for _, x := range extents(d, p, off, max) {
			if x.length > max {
				t.Fatalf("extent of %d bytes exceeds cap %d", x.length, max)
			}
			var got int64
			for _, b := range x.bufs {
				// Locate b inside p through its first byte's address.
				start := int64(cap(p) - cap(b))
				for i := range b {
					if seen[start+int64(i)] {
						t.Fatalf("byte %d sent twice", start+int64(i))
					}
					seen[start+int64(i)] = true
					df, phys := d.ToPhysical(off + start + int64(i))
					if df != x.datafile || phys != x.physical+got+int64(i) {
						t.Fatalf("byte %d lands on (%d,%d), extent says (%d,%d)", off+start+int64(i), df, phys, x.datafile, x.physical+got+int64(i))
					}
				}
				got += int64(len(b))
			}
			if got != x.length {
				t.Fatalf("extent length %d but buffers hold %d", x.length, got)
			}
			covered += got
		}
		if covered != int64(len(p)) {
			t.Fatalf("extents cover %d of %d bytes", covered, len(p))
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestZeroFrom(t *testing.T) {
	a, b := []byte{1, 2, 3}, []byte{4, 5, 6}
	zeroFrom([][]byte{a, b}, 4)
	if !bytes.Equal(a, []byte{1, 2, 3}) || !bytes.Equal(b, []byte{4, 0, 0}) {
		t.Fatalf("zeroFrom(4) = %v %v", a, b)
	}
	zeroFrom([][]byte{a, b}, 0)
	if !bytes.Equal(a, []byte{0, 0, 0}) || !bytes.Equal(b, []byte{0, 0, 0}) {
		t.Fatalf("zeroFrom(0) = %v %v", a, b)
	}
}
