package pattern

import "testing"

func benchTransfers(b *testing.B, p IOR) {
	b.Helper()
	if err := p.Validate(); err != nil {
		b.Fatal(err)
	}
	n := p.Count(0, Write)
	b.ReportAllocs()
	b.ResetTimer()
	var sink int64
	for b.Loop() {
		for tr := range p.Transfers(0, Write) {
			sink += tr.Offset
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*n), "ns/transfer")
	_ = sink
}

// The thesis' 1-OST configuration (Table 4.5) for one rank: 20480 calls.
func BenchmarkTransfersSequential(b *testing.B) {
	benchTransfers(b, IOR{Block: 1 << 20, Transfer: 1 << 20, Segments: 20480, Tasks: 10})
}

func BenchmarkTransfersSmall(b *testing.B) {
	benchTransfers(b, IOR{Block: 1 << 20, Transfer: 4 << 10, Segments: 64, Tasks: 10})
}

func BenchmarkTransfersRandomFPP(b *testing.B) {
	benchTransfers(b, IOR{Block: 64 << 20, Transfer: 4 << 10, Segments: 1, Tasks: 10, FilePerProc: true, Random: true, Seed: 1})
}

func BenchmarkTransfersRandomShared(b *testing.B) {
	benchTransfers(b, IOR{Block: 16 << 20, Transfer: 4 << 10, Segments: 1, Tasks: 10, Random: true, Seed: 1})
}

func BenchmarkTransfersStrided(b *testing.B) {
	benchTransfers(b, IOR{Block: 1 << 20, Transfer: 512 << 20, Segments: 20480, Tasks: 10, Strided: true})
}

func BenchmarkAnalyze(b *testing.B) {
	d := mustDist(b, "simple_stripe:strip_size=1m", 10)
	p := IOR{Block: 1 << 20, Transfer: 1 << 20, Segments: 2048, Tasks: 10, DataStart: 4096}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(p, Config{Dist: d, LinkRate: 117e6}); err != nil {
			b.Fatal(err)
		}
	}
}
