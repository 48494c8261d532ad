package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/testbin"
)

// benchClient starts a cluster of server processes (a metadata server
// and 4 I/O servers on loopback) for b and returns a client of it; both
// go when b ends.
func benchClient(b *testing.B) *client.Client {
	b.Helper()
	var logs testbin.LockedBuffer
	p, err := cluster.SpawnProcesses(context.Background(), cluster.ProcessConfig{
		Binary: parioBin, Dir: b.TempDir(), DataServers: 4, Output: &logs,
	})
	if err != nil {
		b.Fatalf("spawn cluster: %v\n%s", err, logs.String())
	}
	b.Cleanup(func() { p.Close() })
	c, err := p.Client(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkFileIO measures the client's side of 1 MiB writes and reads
// striped over 4 I/O server processes (64 KiB strips: 4 requests of
// 256 KiB each). The servers run in their own processes, so allocs/op
// counts the client only: the path whose payload goes from and into the
// caller's slices without a copy.
func BenchmarkFileIO(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	f, err := c.Create(ctx, "/bench", client.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	if _, err := f.WriteAtContext(ctx, buf, 0); err != nil {
		b.Fatal(err)
	}
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := f.WriteAtContext(ctx, buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := f.ReadAtContext(ctx, buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMetaOps measures the round trips a metadata operation costs
// against a cluster of real server processes (a metadata server and 4 I/O
// servers on loopback, AEAD protection on): a lookup, a stat (a lookup,
// then the sizes of the file's datafiles), a create (Close asks no server)
// and a remove, one goroutine at a time ("serial") and 4 at once, each in
// a directory of its own ("parallel4"; time per operation is wall time
// over all four goroutines' operations). The floor to compare with is a
// bare TCP round trip: BenchmarkRoundTrip in package wire measures both.
func BenchmarkMetaOps(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	const stat = "/stat-me"
	f, err := c.Create(ctx, stat, client.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	f.Close()

	for _, par := range []int{1, 4} {
		name := "serial"
		if par > 1 {
			name = fmt.Sprintf("parallel%d", par)
		}
		dirs := make([]string, par)
		for g := range dirs {
			dirs[g] = fmt.Sprintf("/%s-%d", name, g)
			if err := c.Mkdir(ctx, dirs[g], 0o755); err != nil {
				b.Fatal(err)
			}
		}
		// run does n operations split over par goroutines: op(g, i) is
		// goroutine g's i-th.
		run := func(b *testing.B, op func(g, i int) error) {
			var wg sync.WaitGroup
			errs := make([]error, par)
			for g := range par {
				wg.Go(func() {
					for i := g; i < b.N; i += par {
						if err := op(g, i); err != nil {
							errs[g] = err
							return
						}
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name+"/lookup", func(b *testing.B) {
			run(b, func(int, int) error { _, err := c.Lookup(ctx, stat); return err })
		})
		b.Run(name+"/stat", func(b *testing.B) {
			run(b, func(int, int) error { _, err := c.Stat(ctx, stat); return err })
		})
		round := 0
		b.Run(name+"/create", func(b *testing.B) {
			round++ // b.N grows from one run of this function to the next
			run(b, func(g, i int) error {
				f, err := c.Create(ctx, fmt.Sprintf("%s/c%d-%d", dirs[g], round, i), client.CreateOptions{Exclusive: true})
				if err != nil {
					return err
				}
				return f.Close()
			})
		})
		b.Run(name+"/remove", func(b *testing.B) {
			round++
			b.StopTimer()
			run(b, func(g, i int) error {
				f, err := c.Create(ctx, fmt.Sprintf("%s/r%d-%d", dirs[g], round, i), client.CreateOptions{Exclusive: true})
				if err != nil {
					return err
				}
				return f.Close()
			})
			b.StartTimer()
			run(b, func(g, i int) error { return c.Remove(ctx, fmt.Sprintf("%s/r%d-%d", dirs[g], round, i)) })
		})
	}
}
