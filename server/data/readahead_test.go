package data

import (
	"math/rand/v2"
	"testing"
)

type raCall struct{ from, length int64 }

// TestStreamsReadAhead: sequential readers get read-ahead from their second
// read on, half a window at a time; random readers never do.
func TestStreamsReadAhead(t *testing.T) {
	const w, k = readaheadWindow, 256 << 10
	for _, tc := range []struct {
		name  string
		reads [][2]int64 // off, n
		want  []raCall   // the read-ahead asked by each read ({0, 0}: none)
	}{
		{"one read is no pattern", [][2]int64{{0, k}}, []raCall{{}}},
		{"sequential", [][2]int64{{0, k}, {k, k}, {2 * k, k}}, []raCall{{}, {2 * k, w}, {}}},
		{"every half window", seqReads(0, k, 11), append(append([]raCall{{}, {2 * k, w}}, make([]raCall, 8)...), raCall{2*k + w, 11*k + w - (2*k + w)})},
		{"out of order within a reader's requests", [][2]int64{{0, k}, {2 * k, k}, {k, k}}, []raCall{{}, {3 * k, w}, {}}},
		{"far apart: two streams", [][2]int64{{0, k}, {64 << 20, k}, {k, k}, {64<<20 + k, k}}, []raCall{{}, {}, {2 * k, w}, {64<<20 + 2*k, w}}},
		{"backwards beyond the slack", [][2]int64{{8 << 20, k}, {4 << 20, k}, {0, k}}, []raCall{{}, {}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ss streams
			for i, r := range tc.reads {
				from, length := ss.read(r[0], r[1])
				if got := (raCall{from, length}); got != tc.want[i] {
					t.Errorf("read %d (%d bytes at %d): read-ahead %+v, want %+v", i, r[1], r[0], got, tc.want[i])
				}
			}
		})
	}
}

func seqReads(off, n int64, count int) [][2]int64 {
	var out [][2]int64
	for i := range count {
		out = append(out, [2]int64{off + int64(i)*n, n})
	}
	return out
}

// TestStreamsInterleaved: the ranks of a shared file, each reading its own
// region with its requests interleaved with the others', each get their
// region read ahead exactly, from their second read on, and never past
// what the window allows; the table stays bounded.
func TestStreamsInterleaved(t *testing.T) {
	const ranks, k, region = 4, 64 << 10, 64 << 20
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		var ss streams
		next := make([]int64, ranks)  // each rank's next offset in its region
		asked := make([]int64, ranks) // how far read-ahead reaches in each region
		for range 4000 {
			rank := r.IntN(ranks)
			off := int64(rank)*region + next[rank]
			next[rank] += k
			from, length := ss.read(off, k)
			if length == 0 {
				continue
			}
			if from < int64(rank)*region || from+length > int64(rank)*region+next[rank]+readaheadWindow {
				t.Fatalf("seed %d: rank %d at %d: read-ahead [%d, %d) outside its region or past the window", seed, rank, off, from, from+length)
			}
			if from != max(asked[rank], off+k) && asked[rank] != 0 {
				t.Fatalf("seed %d: rank %d: read-ahead from %d, want it to follow %d", seed, rank, from, asked[rank])
			}
			asked[rank] = from + length
		}
		for rank := range ranks {
			if end := int64(rank)*region + next[rank]; next[rank] > 2*k && asked[rank] < end {
				t.Errorf("seed %d: rank %d read to %d but read-ahead stopped at %d", seed, rank, end, asked[rank])
			}
		}
		if len(ss.s) > maxStreams {
			t.Fatalf("%d streams kept, more than %d", len(ss.s), maxStreams)
		}
	}
}
