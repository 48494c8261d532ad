package client_test

import (
	"context"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/testbin"
)

// BenchmarkFileIO measures the client's side of 1 MiB writes and reads
// striped over 4 I/O server processes (64 KiB strips: 4 requests of
// 256 KiB each). The servers run in their own processes, so allocs/op
// counts the client only: the path whose payload goes from and into the
// caller's slices without a copy.
func BenchmarkFileIO(b *testing.B) {
	var logs testbin.LockedBuffer
	p, err := cluster.SpawnProcesses(context.Background(), cluster.ProcessConfig{
		Binary: parioBin, Dir: b.TempDir(), DataServers: 4, Output: &logs,
	})
	if err != nil {
		b.Fatalf("spawn cluster: %v\n%s", err, logs.String())
	}
	defer p.Close()
	c, err := p.Client(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
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
