package meta

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/pario/pario/dist"
)

// BenchmarkCreateRemove measures creates, then removes, of files in
// directories of their own by 4 goroutines, as mdtest's 4 ranks through
// one mount, with the commits' fsyncs (the datafiles are fakes, precreated
// in pools). commits/op is how many write transactions each operation
// cost: below 1 when group commit shared them.
func BenchmarkCreateRemove(b *testing.B) {
	const workers = 4
	for _, op := range []string{"create", "remove"} {
		b.Run(op, func(b *testing.B) {
			s := openT(b, Options{Servers: 4, Datafiles: newFakeBatch(4)})
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
		})
	}
}
