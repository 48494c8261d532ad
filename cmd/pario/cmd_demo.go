package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/units"
)

func newDemoCommand() *cobra.Command {
	var (
		size    = int64(64 << 20)
		servers int
		writers int
		keep    bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start an embedded cluster, stripe files over it with every distribution, verify",
		Long: `Show the store working, with nothing to set up: start a metadata server and
--servers I/O servers in this process on loopback (data in a temporary
directory), then for each distribution function write a file of --size
bytes from --writers concurrent writers (disjoint ranges), sync it, read it
back, verify every byte, and print the bandwidth and the bytes on each server.
It holds each file and its read-back copy in memory, so twice --size must
fit in the memory available.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if servers < 2 {
				return usageError{fmt.Errorf("--servers: want at least 2 to show striping")}
			}
			if err := cluster.CheckServerCount(servers); err != nil {
				return usageError{fmt.Errorf("--servers %d: %w", servers, err)}
			}
			if writers < 1 || writers > maxDemoWriters {
				return usageError{fmt.Errorf("--writers %d: want 1 to %d", writers, maxDemoWriters)}
			}
			if err := checkDemoMemory(size, bench.AvailableMemory()); err != nil {
				return usageError{err}
			}
			return runDemo(cmd.Context(), size, servers, writers, keep)
		},
	}
	f := cmd.Flags()
	f.Var(units.SizeFlag(&size), "size", "bytes per file")
	f.IntVar(&servers, "servers", 4, "number of I/O servers")
	f.IntVar(&writers, "writers", 4, "concurrent writers per file (1 to 1024)")
	f.BoolVar(&keep, "keep", false, "keep the data directory and print its path")
	return cmd
}

// maxDemoWriters bounds --writers: each is a goroutine with requests of
// its own, and a million of them writing a byte each shows nothing more
// than 1024 do (and took minutes).
const maxDemoWriters = 1024

// checkDemoMemory refuses a --size whose file and its read-back copy (the
// demo holds both) do not fit in the memory available (avail, 0: unknown):
// a --size of 1p was a Go panic, one of 20g on a 24 GiB machine a kill by
// the kernel's OOM killer.
func checkDemoMemory(size, avail int64) error {
	const maxAlloc = 1 << 46 // what make([]byte) takes on 64-bit Linux, and more than any machine holds
	if size <= maxAlloc && (avail <= 0 || 2*size <= avail) {
		return nil
	}
	have := "this machine cannot address that much"
	if avail > 0 {
		have = units.FormatBytes(avail) + " is available"
	}
	return fmt.Errorf("--size %s: the demo holds each file and its read-back copy in memory (2 x %s), and %s; use a smaller --size",
		units.FormatSize(size), units.FormatBytes(size), have)
}

func runDemo(ctx context.Context, size int64, servers, writers int, keep bool) error {
	dir, err := os.MkdirTemp("", "pario-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	c, err := cluster.Start(ctx, cluster.Config{Dir: dir, DataServers: servers})
	if err != nil {
		return err
	}
	defer c.Close()
	cl, err := c.Client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Printf("embedded cluster: metadata server %s, %d I/O servers on loopback, data in %s\n\n", c.Meta.Addr, servers, dir)

	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		return err
	}
	var strips []string
	for i := 0; i < servers; i++ {
		strips = append(strips, fmt.Sprintf("%d:%d", i, (i+1)*256<<10))
	}
	layouts := []string{
		"simple_stripe:strip_size=65536",
		"simple_stripe:strip_size=1048576",
		"basic",
		"varstrip:strips=" + strings.Join(strips, ";"),
		"twod_stripe:num_groups=2,strip_size=65536,group_strip_factor=16",
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "layout\twrite+sync MiB/s\tread MiB/s\tverified\tbytes per server")
	for i, ls := range layouts {
		l, err := dist.ParseLayout(ls)
		if err != nil {
			return err
		}
		p := fmt.Sprintf("/demo-%d", i)
		f, err := cl.Create(ctx, p, client.CreateOptions{Mode: client.DefaultFileMode, Layout: l})
		if err != nil {
			return err
		}
		start := time.Now()
		if err := parallelChunks(size, writers, func(off, n int64) error {
			_, err := f.WriteAtContext(ctx, data[off:off+n], off)
			return err
		}); err != nil {
			return err
		}
		if err := f.SyncContext(ctx); err != nil {
			return err
		}
		wsecs := time.Since(start).Seconds()
		back := make([]byte, size)
		start = time.Now()
		if err := parallelChunks(size, writers, func(off, n int64) error {
			_, err := f.ReadAtContext(ctx, back[off:off+n], off)
			return err
		}); err != nil {
			return err
		}
		rsecs := time.Since(start).Seconds()
		ok := "ok"
		if !bytes.Equal(back, data) {
			ok = "MISMATCH"
		}
		dfs, err := f.Datafiles(ctx)
		if err != nil {
			return err
		}
		perServer := make([]int64, servers)
		for _, d := range dfs {
			perServer[d.Index] += d.Size
		}
		var parts []string
		for s, b := range perServer {
			parts = append(parts, fmt.Sprintf("%s=%s", cl.Servers()[s].Name, units.FormatBytes(b)))
		}
		mib := float64(size) / (1 << 20)
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%s\t%s\n", f.Attr().Layout, mib/wsecs, mib/rsecs, ok, strings.Join(parts, " "))
		if ok != "ok" {
			w.Flush()
			return fmt.Errorf("%s: data read back differs from data written", p)
		}
	}
	w.Flush()
	fmt.Printf("\n%d files of %s written by %d writers each, read back and verified.\n", len(layouts), units.FormatBytes(size), writers)
	if keep {
		fmt.Printf("data kept in %s\n", dir)
	}
	return nil
}

// parallelChunks splits [0, size) into n nearly equal ranges and runs fn on
// each concurrently, as n ranks writing disjoint blocks of a shared file do.
func parallelChunks(size int64, n int, fn func(off, length int64) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	per := (size + int64(n) - 1) / int64(n)
	for i := 0; i < n; i++ {
		off := int64(i) * per
		length := min(per, size-off)
		if length <= 0 {
			break
		}
		wg.Go(func() {
			const step = 4 << 20
			for o := off; o < off+length && errs[i] == nil; o += step {
				errs[i] = fn(o, min(step, off+length-o))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
