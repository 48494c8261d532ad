package client

import (
	"bytes"
	"testing"

	"github.com/pario/pario/dist"
	"pgregory.net/rapid"
)

// A view whose pieces sit end to end on each datafile costs one request
// per datafile: two ranks' lines interleaved over 4 servers at 100-byte
// strips, each rank writing every other strip.
func TestListExtentsOneRequestPerServer(t *testing.T) {
	d, err := dist.New(dist.SimpleStripe, "strip_size=100", 4)
	if err != nil {
		t.Fatal(err)
	}
	var spans []Span
	for k := int64(0); k < 16; k += 2 { // strips 0, 2, 4, ...: datafiles 0 and 2
		spans = append(spans, Span{k * 100, 100})
	}
	p := make([]byte, 800)
	xs := listExtents(d, spans, p, 1<<20)
	if len(xs) != 2 {
		t.Fatalf("%d requests, want 2 (one per datafile written)", len(xs))
	}
	for _, x := range xs {
		if x.length != 400 || x.physical != 0 {
			t.Errorf("datafile %d: %d bytes at %d, want 400 at 0", x.datafile, x.length, x.physical)
		}
	}
}

// Under any distribution the requests carry exactly the spans' bytes, each
// at its place.
func TestListExtentsCoverExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		servers := rapid.IntRange(1, 5).Draw(t, "servers")
		d, err := dist.New(dist.SimpleStripe, "strip_size="+itoa(rapid.IntRange(1, 64).Draw(t, "strip")), servers)
		if err != nil {
			t.Fatal(err)
		}
		var spans []Span
		var p []byte
		off := int64(0)
		for range rapid.IntRange(1, 10).Draw(t, "spans") {
			off += int64(rapid.IntRange(0, 50).Draw(t, "gap"))
			n := int64(rapid.IntRange(0, 80).Draw(t, "len"))
			spans = append(spans, Span{off, n})
			for i := range n {
				p = append(p, byte(off+i))
			}
			off += n
		}
		max := int64(rapid.IntRange(1, 200).Draw(t, "max"))
		xs := listExtents(d, spans, p, max)
		want := make(map[int64]byte)
		for _, s := range spans {
			for i := range s.Len {
				want[s.Off+i] = byte(s.Off + i)
			}
		}
		got := 0
		for _, x := range xs {
			if x.length > max {
				t.Fatalf("request of %d bytes, max %d", x.length, max)
			}
			b := bytes.Join(x.bufs, nil)
			if int64(len(b)) != x.length {
				t.Fatalf("extent of %d bytes holds %d", x.length, len(b))
			}
			for i, c := range b {
				lo := d.ToLogical(x.datafile, x.physical+int64(i))
				if w, ok := want[lo]; !ok || w != c {
					t.Fatalf("datafile %d byte %d (logical %d) = %d, want %d (in a span: %v)", x.datafile, x.physical+int64(i), lo, c, w, ok)
				}
				got++
			}
		}
		if got != len(want) {
			t.Fatalf("requests carry %d bytes, spans %d", got, len(want))
		}
	})
}

// Ranges of a datafile that do not touch still go in one request, up to
// the request size.
func TestListRequestsOnePerServer(t *testing.T) {
	d, err := dist.New(dist.SimpleStripe, "strip_size=100", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Strips 0, 4 and 8 (datafile 0 at 0, 200, 400) and 3 (datafile 1 at 100).
	spans := []Span{{0, 100}, {300, 100}, {400, 100}, {800, 100}}
	p := make([]byte, 400)
	xs := listExtents(d, spans, p, 1<<20)
	if len(xs) != 4 {
		t.Fatalf("%d extents, want 4", len(xs))
	}
	reqs := listRequests(xs, 1<<20)
	if len(reqs) != 2 || len(reqs[0]) != 3 || len(reqs[1]) != 1 {
		t.Fatalf("requests %v, want one of 3 ranges (datafile 0) and one of 1 (datafile 1)", reqs)
	}
	if reqs := listRequests(xs, 200); len(reqs) != 3 {
		t.Errorf("at 200 B a request: %d requests, want 3", len(reqs))
	}
}
