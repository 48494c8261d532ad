package bench

import (
	"context"
	"testing"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/dummy"
	"github.com/pario/pario/pattern"
)

// dummyRunner is a one-rank runner on the DUMMY back end with zero delays,
// for measuring the engine's own cost per transfer.
func dummyRunner(t testing.TB, transfers int64, xfer int64) (*runner, backend.File) {
	o := DefaultOptions()
	o.API = "DUMMY"
	o.TransferSize, o.BlockSize = xfer, xfer*transfers
	r := &runner{o: o, rank: 0, tasks: 1}
	r.p = o.Pattern(1, 1)
	if err := r.p.Validate(); err != nil {
		t.Fatal(err)
	}
	r.wbuf = alignedBuffer(int(xfer))
	r.rbuf = alignedBuffer(int(xfer))
	be, _ := (&dummy.Driver{}).Open(context.Background(), backend.Env{})
	f, _ := be.Create(context.Background(), "x")
	return r, f
}

// The hot loop allocates nothing per transfer: a phase of 4096 transfers
// costs the same few allocations (the iterator) as a phase of 16.
func TestHotLoopAllocationFree(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []int{modeWrite, modeRead} {
		allocs := func(n int64) float64 {
			r, f := dummyRunner(t, n, 4096)
			return testing.AllocsPerRun(20, func() {
				var rec RankRecord
				if err := r.loop(ctx, f, pattern.Write, mode, 0, -1, &rec, nil); err != nil {
					t.Fatal(err)
				}
			})
		}
		small, large := allocs(16), allocs(4096)
		if large > small || large > 32 {
			t.Errorf("mode %d: %v allocations for 4096 transfers, %v for 16", mode, large, small)
		}
	}
}

// BenchmarkDummyTransfers measures the harness overhead: transfers per
// second of one rank on DUMMY with zero delay (4 KiB transfers, written
// with the data signature).
func BenchmarkDummyTransfers(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		mode int
		xfer int64
	}{{"write-4k", modeWrite, 4 << 10}, {"read-4k", modeRead, 4 << 10}, {"write-1m", modeWrite, 1 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			const per = 1 << 14
			r, f := dummyRunner(b, per, c.xfer)
			b.ReportAllocs()
			b.ResetTimer()
			var n int64
			for b.Loop() {
				var rec RankRecord
				if err := r.loop(ctx, f, pattern.Write, c.mode, 0, -1, &rec, nil); err != nil {
					b.Fatal(err)
				}
				n += rec.Transfers
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "transfers/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
