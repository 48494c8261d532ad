package model

import "testing"

var benchSink float64

// BenchmarkModelSystemTime is the per-point cost of E(T) (target: well
// under a microsecond, no allocations).
func BenchmarkModelSystemTime(b *testing.B) {
	for _, c := range []struct {
		name string
		M    float64
		n    int
	}{{"n=20", 50, 20}, {"n=399", 1000, 399}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, err := SystemTime(paperParams, c.M, c.n)
				if err != nil {
					b.Fatal(err)
				}
				benchSink += v
			}
		})
	}
}

func BenchmarkPaperSystemTime(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		v, _ := PaperSystemTime(paperParams, 1000, 399)
		benchSink += v
	}
}

func BenchmarkOptimalN(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, v, _ := OptimalN(paperParams, 1000, 100000)
		benchSink += v
	}
}

func BenchmarkMeanWait(b *testing.B) {
	for _, t := range []struct {
		name string
		t    float64
	}{{"t=10", 10}, {"t=1000", 1000}, {"t=20000", 20000}} {
		b.Run(t.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, _ := MeanWait(paperParams, t.t)
				benchSink += v
			}
		})
	}
}

func BenchmarkP0(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		v, _ := P0(paperParams, 1000)
		benchSink += v
	}
}
