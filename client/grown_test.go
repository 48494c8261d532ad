package client

import (
	"testing"

	"github.com/pario/pario/dist"
	"pgregory.net/rapid"
)

func TestGrownTable(t *testing.T) {
	d, err := dist.New(dist.SimpleStripe, "strip_size=65536", 4)
	if err != nil {
		t.Fatal(err)
	}
	const k = DiskBlock
	for _, c := range []struct {
		name   string
		u      Usage
		off, n int64
		want   Usage
		wantOK bool
	}{
		{"first write of a new file", Usage{}, 0, 100, Usage{100, k}, true},
		{"an append in the same block", Usage{100, k}, 100, 100, Usage{200, k}, true},
		{"an append into the next block", Usage{4000, k}, 4000, 200, Usage{4200, 2 * k}, true},
		{"an overwrite inside the file", Usage{4200, 2 * k}, 10, 50, Usage{4200, 2 * k}, true},
		{"past the first strip: the second datafile's first block", Usage{65536, 16 * k}, 65536, 1, Usage{65537, 17 * k}, true},
		{"four strips, one on each datafile", Usage{}, 0, 4 * 65536, Usage{4 * 65536, 64 * k}, true},
		{"an empty write", Usage{100, k}, 100, 0, Usage{100, k}, true},
		{"a write past the end leaves a hole", Usage{100, k}, 8192, 10, Usage{}, false},
		{"a file with a hole already", Usage{1 << 20, k}, 0, 10, Usage{}, false},
		{"a file whose blocks the servers counted otherwise", Usage{100, 2 * k}, 100, 10, Usage{}, false},
		{"a negative offset", Usage{}, -1, 10, Usage{}, false},
		{"an end past the largest offset", Usage{100, k}, 100, 1<<63 - 1, Usage{}, false},
	} {
		got, ok := c.u.Grown(d, c.off, c.n)
		if ok != c.wantOK || (ok && got != c.want) {
			t.Errorf("%s: %+v.Grown(%d, %d) = %+v, %v; want %+v, %v", c.name, c.u, c.off, c.n, got, ok, c.want, c.wantOK)
		}
	}
}

// TestGrownFollowsTheDatafiles: under any distribution, a file written
// from its start without a gap, in any order of writes, has the size and
// the whole blocks its datafiles' written bytes give (modelled byte run
// by byte run with dist.Split), and Grown follows it write by write.
func TestGrownFollowsTheDatafiles(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := drawDistribution(t, 20000)
		ends := make([]int64, d.Datafiles()) // each datafile's written end
		var u Usage
		for range rapid.IntRange(1, 20).Draw(t, "writes") {
			off := rapid.Int64Range(0, u.Size).Draw(t, "off")
			length := rapid.Int64Range(0, 100000).Draw(t, "len")
			got, ok := u.Grown(d, off, length)
			if !ok {
				t.Fatalf("%+v.Grown(%d, %d) refused a write that leaves no hole", u, off, length)
			}
			var alloc int64
			for _, p := range dist.Split(d, off, length) {
				ends[p.Datafile] = max(ends[p.Datafile], p.Physical+p.Length)
			}
			for _, e := range ends {
				alloc += (e + DiskBlock - 1) / DiskBlock * DiskBlock
			}
			want := Usage{Size: max(u.Size, off+length), Allocated: alloc}
			if got != want {
				t.Fatalf("%+v.Grown(%d, %d) = %+v, want %+v", u, off, length, got, want)
			}
			u = got
		}
	})
}
