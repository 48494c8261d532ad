package client

import (
	"bytes"
	"runtime"
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

// drawDistribution draws one of the built-in distributions over 1 to 6
// datafiles, with strips of up to maxStrip bytes.
func drawDistribution(t *rapid.T, maxStrip int) dist.Distribution {
	n := rapid.IntRange(1, 6).Draw(t, "servers")
	layouts := []string{
		"simple_stripe:strip_size=" + itoa(rapid.IntRange(1, maxStrip).Draw(t, "strip")),
		"basic",
		"twod_stripe:num_groups=2,strip_size=" + itoa(rapid.IntRange(1, maxStrip*3/5).Draw(t, "tstrip")) + ",group_strip_factor=3",
	}
	l, err := dist.ParseLayout(layouts[rapid.IntRange(0, len(layouts)-1).Draw(t, "layout")])
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Build(n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestExtentsCoverExactly: under any distribution, the extents' buffers
// are exactly the caller's bytes, each once, and each extent is one
// contiguous physical run on its datafile.
func TestExtentsCoverExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := drawDistribution(t, 5000)
		off := int64(rapid.IntRange(0, 100000).Draw(t, "off"))
		p := make([]byte, rapid.IntRange(0, 50000).Draw(t, "len"))
		for i := range p {
			p[i] = byte(i * 7)
		}
		max := int64(rapid.IntRange(1, 20000).Draw(t, "max"))
		var covered int64
		seen := make([]bool, len(p))
		xs := extents(d, p, off, max)
		gather(d, p, off, xs)
		for _, x := range xs {
			if x.length > max {
				t.Fatalf("extent of %d bytes exceeds cap %d", x.length, max)
			}
			if x.staged {
				// A buffer of its own: each of its bytes is the one of p
				// that the distribution puts at that physical offset.
				if len(x.bufs) != 1 || int64(len(x.bufs[0])) != x.length || x.pieces <= maxSlices {
					t.Fatalf("staged extent of %d pieces has %d buffers", x.pieces, len(x.bufs))
				}
				for j := int64(0); j < x.length; j++ {
					i := d.ToLogical(x.datafile, x.physical+j) - off
					if i < 0 || i >= int64(len(p)) || seen[i] {
						t.Fatalf("staged byte %d of extent maps to p[%d] (outside or twice)", j, i)
					}
					seen[i] = true
					if x.bufs[0][j] != p[i] {
						t.Fatalf("staged byte %d = %d, want p[%d] = %d", j, x.bufs[0][j], i, p[i])
					}
				}
				covered += x.length
				continue
			}
			if len(x.bufs) > maxSlices {
				t.Fatalf("extent lists %d slices, more than %d", len(x.bufs), maxSlices)
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
		// A read fills p back from the staged buffers.
		want := append([]byte(nil), p...)
		for i := range xs {
			if xs[i].staged {
				eachPiece(d, p, off, &xs[i], func(inP []byte, _ int64) { clear(inP) })
			}
		}
		scatter(d, p, off, xs)
		if !bytes.Equal(p, want) {
			t.Fatal("scatter did not restore the bytes gather staged")
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

// TestExtentsMemoryBounded: the memory to split a request is bounded by the
// request's bytes, not by how many strips it crosses. A 1-byte strip over
// 4 servers once cost 32 bytes of pieces and 24 of slices per byte (an
// 8 MiB copy chunk took 450 MB).
func TestExtentsMemoryBounded(t *testing.T) {
	for _, layout := range []string{"simple_stripe:strip_size=1", "simple_stripe:strip_size=7", "twod_stripe:num_groups=2,strip_size=1,group_strip_factor=1"} {
		l, err := dist.ParseLayout(layout)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Build(4)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 4<<20)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		xs := extents(d, p, 12345, 4<<20)
		gather(d, p, 12345, xs)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(p))+1<<20 {
			t.Errorf("%s: splitting %d bytes allocated %d bytes; want at most the request plus 1 MiB", layout, len(p), alloc)
		}
	}
}
