package sim

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkSimEvents measures simulator throughput in events per second
// (one event = one arrival processed by Lindley's recursion, see the
// package doc), on one worker ("1core") and on GOMAXPROCS workers; the
// "events/s/core" metric is the total divided by the workers. The job is
// the paper's 50 GB file on 20 targets, arriving at t = 1000 s, so about
// 100 background arrivals per queue.
func BenchmarkSimEvents(b *testing.B) {
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		name := "1core"
		if workers > 1 {
			name = "allcores"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{Lambda: 0.1, Gamma: 0.125, V: 0.0625, FileSize: 50, Stripes: 20, Time: 1000,
				Experiments: 256 * workers, Workers: workers}
			var events int64
			for b.Loop() {
				r, err := Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				events += r.Events
				cfg.Seed++
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(events)/s, "events/s")
			b.ReportMetric(float64(events)/s/float64(workers), "events/s/core")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}

// BenchmarkSweep is the cost of one 256-experiment sweep over n = 1..40.
func BenchmarkSweep(b *testing.B) {
	cfg := Config{Lambda: 0.1, Gamma: 0.125, V: 0.0625, FileSize: 100, Stripes: 40, Time: 100, Experiments: 256, Workers: 1}
	var events int64
	for b.Loop() {
		r, err := Sweep(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
