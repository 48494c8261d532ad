package meta

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/dist"
)

// BenchmarkCreateRemove measures creates, then removes, of files by 4
// goroutines in directories of their own (mdtest's 4 ranks through one
// mount) and by one (one shared directory, where the kernel serialises
// them), with the datafiles fakes precreated in pools. "each" fsyncs
// every commit before answering (SyncInterval -1, the rule before
// durable.go), "deferred" answers once written and syncs within the
// interval: compare the two with benchstat, in one run. commits/op is how
// many write transactions each operation cost (below 1 when group commit
// shared them), syncs/op how many checkpoints.
func BenchmarkCreateRemove(b *testing.B) {
	for _, mode := range []struct {
		name     string
		interval time.Duration
	}{{"each", -1}, {"deferred", 0}} {
		for _, workers := range []int{4, 1} {
			for _, op := range []string{"create", "remove"} {
				b.Run(fmt.Sprintf("%s/workers=%d/%s", mode.name, workers, op), func(b *testing.B) {
					benchCreateRemove(b, mode.interval, workers, op)
				})
			}
		}
	}
}

func benchCreateRemove(b *testing.B, interval time.Duration, workers int, op string) {
	{
		{
			s := openT(b, Options{Servers: 4, Datafiles: newFakeBatch(4), SyncInterval: interval})
			ctx := context.Background()
			for w := range workers {
				if _, err := s.Mkdir(ctx, fmt.Sprintf("/d%d", w), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			n := b.N/workers + 1
			run := func(f func(w, i int) error) {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range n {
							if err := f(w, i); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			}
			create := func(w, i int) error {
				_, err := s.Create(ctx, fmt.Sprintf("/d%d/f%d", w, i), 0o644, dist.Layout{})
				return err
			}
			if op == "remove" {
				run(create)
			}
			c0 := s.commit.commits.Load()
			var k0 uint64
			if s.dur != nil {
				k0 = s.dur.checkpoints.Load()
			}
			b.ResetTimer()
			if op == "create" {
				run(create)
			} else {
				run(func(w, i int) error {
					_, err := s.Remove(ctx, fmt.Sprintf("/d%d/f%d", w, i))
					return err
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(s.commit.commits.Load()-c0)/float64(n*workers), "commits/op")
			if s.dur != nil {
				b.ReportMetric(float64(s.dur.checkpoints.Load()-k0)/float64(n*workers), "syncs/op")
			}
		}
	}
}
