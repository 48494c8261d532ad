// Command mountbench compares, in one run, sequential I/O of one large file
// in fixed-size transfers (1 MiB by default) three ways: through a pario
// FUSE mount (`pario mount`, its own process), through the native Go client,
// and on the local disk under the cluster. One stream writes the file, then
// fsyncs it (the time includes the sync), the page cache is dropped, and the
// stream reads it back and checks each transfer's stamp. The three modes
// alternate within each repetition; medians and the ratios mount/native and
// mount/local are printed.
//
//	scripts/bench-mount.sh                   # builds everything, runs this
//	go run ./tools/mountbench -pario bin/pario -size 2g -reps 3
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pario/pario/internal/benchutil"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/units"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatalf("mountbench: %v", err)
	}
}

type config struct {
	pario   string
	dir     string
	size    int64
	xfer    int64
	servers int
	reps    int
	layout  string
	mount   string
	keep    bool
}

// stream is what one mode writes to and reads from.
type stream interface {
	WriteAt([]byte, int64) (int, error)
	ReadAt([]byte, int64) (int, error)
	Sync() error
	Close() error
}

func run() error {
	var c config
	c.size, c.xfer = 2<<30, 1<<20
	flag.StringVar(&c.pario, "pario", "", "path to the pario binary (required)")
	flag.StringVar(&c.dir, "dir", "", "directory on the disk under test (default: a new directory under ./tmp)")
	flag.Var(units.SizeFlag(&c.size), "size", "bytes in the file")
	flag.Var(units.SizeFlag(&c.xfer), "xfer", "bytes per transfer")
	flag.IntVar(&c.servers, "servers", 4, "pario I/O servers")
	flag.IntVar(&c.reps, "reps", 3, "repetitions (medians are reported)")
	flag.StringVar(&c.layout, "layout", "", "default layout of the cluster (default simple_stripe, 64 KiB strips)")
	flag.StringVar(&c.mount, "mount-flags", "", "extra flags for `pario mount`, space-separated (e.g. \"--read-ahead 8m\")")
	flag.BoolVar(&c.keep, "keep", false, "keep the data directory")
	flag.Parse()
	var err error
	if c.pario == "" {
		return errors.New("-pario: path to the pario binary required")
	}
	if c.size%c.xfer != 0 {
		return fmt.Errorf("-size %d must be a multiple of -xfer %d", c.size, c.xfer)
	}
	if c.pario, err = filepath.Abs(c.pario); err != nil {
		return err
	}
	var removeDir func()
	if c.dir, removeDir, err = benchutil.WorkDir(c.dir, "mountbench", c.keep); err != nil {
		return err
	}
	defer removeDir()
	ctx := context.Background()

	var metaArgs []string
	if c.layout != "" {
		metaArgs = []string{"--layout", c.layout}
	}
	procs, err := cluster.SpawnProcesses(ctx, cluster.ProcessConfig{
		Binary: c.pario, Dir: filepath.Join(c.dir, "pario"), DataServers: c.servers, MetaArgs: metaArgs, Output: os.Stderr,
	})
	if err != nil {
		return err
	}
	defer procs.Close()
	cl, err := procs.Client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()

	mnt := filepath.Join(c.dir, "mnt")
	unmount, err := benchutil.Mount(c.pario, procs.ClusterFile, mnt, strings.Fields(c.mount))
	if err != nil {
		return err
	}
	defer unmount()

	host, _ := os.Hostname()
	fmt.Printf("mountbench %s  host=%s  one stream, %s file, %s transfers, %d I/O servers (processes), %d reps\n",
		time.Now().Format("2006-01-02"), host, units.FormatBytesExact(c.size), units.FormatBytesExact(c.xfer), c.servers, c.reps)
	fmt.Printf("layout: %s; pario mount %s; cache dropping: %s\n\n", orDefault(c.layout, "simple_stripe:strip_size=65536 (default)"), orDefault(c.mount, "(default flags)"), benchutil.DropMethod())

	open := map[string]func(write bool) (stream, error){
		"mount": func(write bool) (stream, error) {
			p := filepath.Join(mnt, "bench.dat")
			if write {
				return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			}
			return os.Open(p)
		},
		"native": func(write bool) (stream, error) {
			if write {
				return cl.Create(ctx, "/bench-native.dat", client.CreateOptions{Mode: client.DefaultFileMode})
			}
			return cl.Open(ctx, "/bench-native.dat")
		},
		"local": func(write bool) (stream, error) {
			p := filepath.Join(c.dir, "local.dat")
			if write {
				return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			}
			return os.Open(p)
		},
	}
	modes := []string{"mount", "native", "local"}
	results := map[string][]float64{}
	for rep := 0; rep < c.reps; rep++ {
		order := slices.Clone(modes)
		// Rotate, so that no mode always runs first or last.
		order = append(order[rep%3:], order[:rep%3]...)
		for _, mode := range order {
			w, err := phase(c, open[mode], true)
			if err != nil {
				return fmt.Errorf("%s write: %w", mode, err)
			}
			if err := benchutil.DropCaches(c.dir); err != nil {
				return err
			}
			r, err := phase(c, open[mode], false)
			if err != nil {
				return fmt.Errorf("%s read: %w", mode, err)
			}
			fmt.Printf("rep %d  %-6s  write+fsync %8.1f MiB/s   cold read %8.1f MiB/s\n", rep+1, mode, w, r)
			results[mode+" write"] = append(results[mode+" write"], w)
			results[mode+" read"] = append(results[mode+" read"], r)
			if err := benchutil.DropCaches(c.dir); err != nil {
				return err
			}
		}
	}
	fmt.Printf("\nmedians of %d reps        mount        native        local   mount/native  mount/local  (paired mount/native)\n", c.reps)
	for _, op := range []string{"write", "read"} {
		m, n, l := results["mount "+op], results["native "+op], results["local "+op]
		var paired []float64
		for i := range m {
			paired = append(paired, m[i]/n[i])
		}
		label := map[string]string{"write": "write+fsync", "read": "cold read"}[op]
		fmt.Printf("%-18s %8.1f MiB/s %8.1f MiB/s %8.1f MiB/s   %5.2fx       %5.2fx       %5.2fx\n",
			label, benchutil.Median(m), benchutil.Median(n), benchutil.Median(l), benchutil.Median(m)/benchutil.Median(n), benchutil.Median(m)/benchutil.Median(l), benchutil.Median(paired))
	}
	return nil
}

// phase writes (then fsyncs) or reads the whole file sequentially and
// returns MiB/s.
func phase(c config, open func(write bool) (stream, error), write bool) (float64, error) {
	buf := make([]byte, c.xfer)
	if _, err := rand.Read(buf); err != nil {
		return 0, err
	}
	start := time.Now()
	f, err := open(write)
	if err != nil {
		return 0, err
	}
	for off := int64(0); off < c.size; off += c.xfer {
		if write {
			binary.LittleEndian.PutUint64(buf, uint64(off))
			if _, err := f.WriteAt(buf, off); err != nil {
				f.Close()
				return 0, err
			}
			continue
		}
		if n, err := f.ReadAt(buf, off); n < len(buf) {
			f.Close()
			return 0, fmt.Errorf("read at %d: %d bytes: %w", off, n, err)
		}
		if got := binary.LittleEndian.Uint64(buf); got != uint64(off) {
			f.Close()
			return 0, fmt.Errorf("read at %d: block stamped %d", off, got)
		}
	}
	if write {
		if err := f.Sync(); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return float64(c.size) / (1 << 20) / time.Since(start).Seconds(), nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
