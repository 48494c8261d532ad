// Command storebench measures pario's striped store against plain POSIX on
// the same disk, in one run: N rank processes write a shared file in
// fixed-size transfers (each rank one contiguous block, as IOR -s 1 -b
// SIZE/N -t XFER), sync it, and read it back cold; first with pwrite/pread
// on a local file, then through pario with its servers as separate
// processes. It prints medians and the ratios pario/POSIX, and the peak
// resident memory of each I/O server. With -wire-protection aead,integrity
// it runs one pario cluster per wire protection mode and measures each in
// every repetition, so that their ratios come from the same run.
//
//	go build -o pario ./cmd/pario
//	go run ./tools/storebench -pario ./pario -dir /scratch/bench -size 2g
//
// Run it through scripts/bench-store.sh, which builds everything first.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pario/pario/internal/benchutil"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/units"
	"github.com/pario/pario/wire"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) > 1 && os.Args[1] == "rank" {
		if err := runRank(os.Args[2:]); err != nil {
			log.Fatalf("rank: %v", err)
		}
		return
	}
	if err := run(); err != nil {
		log.Fatalf("storebench: %v", err)
	}
}

type config struct {
	pario   string
	dir     string
	size    int64
	xfer    int64
	ranks   int
	servers int
	reps    int
	layout  string
	keep    bool
	modes   []wire.Protection
}

func run() error {
	var c config
	c.size, c.xfer = 2<<30, 1<<20
	flag.StringVar(&c.pario, "pario", "", "path to the pario binary (required)")
	flag.StringVar(&c.dir, "dir", "", "directory on the disk under test (default: a new directory under ./tmp)")
	flag.Var(units.SizeFlag(&c.size), "size", "bytes in the shared file")
	flag.Var(units.SizeFlag(&c.xfer), "xfer", "bytes per transfer")
	flag.IntVar(&c.ranks, "ranks", 4, "rank processes")
	flag.IntVar(&c.servers, "servers", 4, "pario I/O servers")
	flag.IntVar(&c.reps, "reps", 3, "repetitions (medians are reported)")
	flag.StringVar(&c.layout, "layout", "", "pario layout of the file (default: the server default, simple_stripe 64 KiB)")
	flag.BoolVar(&c.keep, "keep", false, "keep the data directory")
	modes := flag.String("wire-protection", "aead", "wire protection of the pario cluster: aead or integrity, or a list (aead,integrity) to measure each in the same run")
	flag.Parse()
	var err error
	for _, m := range strings.Split(*modes, ",") {
		p, err := wire.ParseProtection(m)
		if err != nil {
			return fmt.Errorf("-wire-protection: %w", err)
		}
		c.modes = append(c.modes, p)
	}
	if c.pario == "" {
		return errors.New("-pario: path to the pario binary required")
	}
	if c.size%(int64(c.ranks)*c.xfer) != 0 {
		return fmt.Errorf("-size %d must be a multiple of ranks*xfer = %d", c.size, int64(c.ranks)*c.xfer)
	}
	if c.pario, err = filepath.Abs(c.pario); err != nil {
		return err
	}
	var removeDir func()
	if c.dir, removeDir, err = benchutil.WorkDir(c.dir, "storebench", c.keep); err != nil {
		return err
	}
	defer removeDir()
	ctx := context.Background()

	// One cluster per wire protection mode, named "pario-MODE".
	type system struct {
		procs *cluster.Processes
		cl    *client.Client
	}
	systems := map[string]system{}
	names := []string{"posix"}
	for _, m := range c.modes {
		name := "pario-" + m.String()
		procs, err := cluster.SpawnProcesses(ctx, cluster.ProcessConfig{
			Binary: c.pario, Dir: filepath.Join(c.dir, name), DataServers: c.servers, Output: os.Stderr, Protection: m,
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
		systems[name] = system{procs, cl}
		names = append(names, name)
	}
	localFile := filepath.Join(c.dir, "posix.dat")

	host, _ := os.Hostname()
	fmt.Printf("storebench %s  host=%s  %d ranks, %s shared file, %s transfers, %d I/O servers, %d reps\n",
		time.Now().Format("2006-01-02"), host, c.ranks, units.FormatBytesExact(c.size), units.FormatBytesExact(c.xfer), c.servers, c.reps)
	fmt.Printf("cache dropping: %s\n\n", benchutil.DropMethod())

	results := map[string][]float64{}
	for rep := 0; rep < c.reps; rep++ {
		// Each system goes first in turn, and the order reverses every
		// other repetition.
		order := slices.Clone(names)
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, mode := range order {
			path := localFile
			clusterFile := ""
			var servers []int // their CPU time counts too
			if mode == "posix" {
				_ = os.Remove(localFile)
			} else {
				path = "/storebench.dat"
				cl := systems[mode].cl
				clusterFile = systems[mode].procs.ClusterFile
				servers = append(servers, systems[mode].procs.PID("meta"))
				for i := 0; i < c.servers; i++ {
					servers = append(servers, systems[mode].procs.PID(fmt.Sprintf("data%d", i)))
				}
				_ = cl.Remove(ctx, path)
				opts := client.CreateOptions{Mode: client.DefaultFileMode}
				if c.layout != "" {
					if opts.Layout, err = dist.ParseLayout(c.layout); err != nil {
						return err
					}
				}
				f, err := cl.Create(ctx, path, opts)
				if err != nil {
					return err
				}
				f.Close()
			}
			w, wcpu, err := phase(c, clusterFile, mode, "write", path, servers)
			if err != nil {
				return err
			}
			if err := benchutil.DropCaches(c.dir); err != nil {
				return err
			}
			r, rcpu, err := phase(c, clusterFile, mode, "read", path, servers)
			if err != nil {
				return err
			}
			fmt.Printf("rep %d  %-15s  write+sync %8.1f MiB/s   cold read %8.1f MiB/s   CPU s/GiB write %5.2f read %5.2f\n", rep+1, mode, w, r, wcpu, rcpu)
			results[mode+" write cpu"] = append(results[mode+" write cpu"], wcpu)
			results[mode+" read cpu"] = append(results[mode+" read cpu"], rcpu)
			results[mode+" write"] = append(results[mode+" write"], w)
			results[mode+" read"] = append(results[mode+" read"], r)
		}
	}

	// Two ratios: of the medians, and the median of each repetition's
	// ratio (its POSIX and pario runs were back to back, so they saw the
	// same machine; on a noisy host that pairing is the steadier figure).
	fmt.Printf("\nmedians of %d reps                         local POSIX        pario     ratio   median paired ratio\n", c.reps)
	for _, op := range []string{"write", "read"} {
		posix := results["posix "+op]
		for _, name := range names[1:] {
			pario := results[name+" "+op]
			var paired []float64
			for i := range posix {
				paired = append(paired, pario[i]/posix[i])
			}
			p, q := benchutil.Median(posix), benchutil.Median(pario)
			label := map[string]string{"write": "durable write", "read": "cold read"}[op] + " " + name
			fmt.Printf("%-42s %9.1f MiB/s %9.1f MiB/s   %5.2fx   %5.2fx\n", label, p, q, q/p, benchutil.Median(paired))
		}
	}
	fmt.Println()
	// CPU time per GiB (ranks and servers) depends far less on the other
	// tenants than bandwidth does: it shows what protection costs.
	for _, name := range names {
		fmt.Printf("CPU per GiB, median: %-15s  write %5.2f s   read %5.2f s\n", name, benchutil.Median(results[name+" write cpu"]), benchutil.Median(results[name+" read cpu"]))
	}
	fmt.Println()
	for _, name := range names[1:] {
		for i := 0; i < c.servers; i++ {
			d := fmt.Sprintf("data%d", i)
			fmt.Printf("%s I/O server %s peak RSS: %s\n", name, d, peakRSS(systems[name].procs.PID(d)))
		}
	}
	return nil
}

// phase runs one operation on all ranks at once and returns the aggregate
// bandwidth in MiB/s over the window from the first rank's start to the
// last rank's end (IOR's definition).
//
// It also returns the CPU time the phase cost: the ranks' and the given
// server processes', in seconds per GiB moved.
func phase(c config, clusterFile, mode, op, path string, servers []int) (float64, float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	serverCPU := func() (t float64) {
		for _, pid := range servers {
			t += procCPU(pid)
		}
		return t
	}
	cpuBefore := serverCPU()
	var rankCPU sync.Map
	// Ranks start together at a common instant a little in the future:
	// process start-up is kept out of the timing window.
	startAt := time.Now().Add(300 * time.Millisecond).UnixNano()
	type report struct{ Start, End, Bytes int64 }
	reports := make([]report, c.ranks)
	errs := make([]error, c.ranks)
	var wg sync.WaitGroup
	for r := 0; r < c.ranks; r++ {
		wg.Go(func() {
			cmd := exec.Command(self, "rank", mode, op, path, strconv.Itoa(r), strconv.Itoa(c.ranks),
				strconv.FormatInt(c.size, 10), strconv.FormatInt(c.xfer, 10), strconv.FormatInt(startAt, 10), clusterFile)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if cmd.ProcessState != nil {
				rankCPU.Store(r, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
			}
			if err == nil {
				err = json.Unmarshal(out, &reports[r])
			}
			if err != nil {
				errs[r] = fmt.Errorf("rank %d %s %s: %w", r, mode, op, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	cpu := serverCPU() - cpuBefore
	rankCPU.Range(func(_, v any) bool { cpu += v.(float64); return true })
	first, last, bytes := reports[0].Start, reports[0].End, int64(0)
	for _, r := range reports {
		first, last, bytes = min(first, r.Start), max(last, r.End), bytes+r.Bytes
	}
	if bytes != c.size {
		return 0, 0, fmt.Errorf("%s %s moved %d bytes, want %d", mode, op, bytes, c.size)
	}
	return float64(bytes) / (1 << 20) / time.Duration(last-first).Seconds(), cpu / (float64(bytes) / (1 << 30)), nil
}

// procCPU is a process's user + system CPU time in seconds (0 if unknown).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command name (which may hold spaces), from state.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// file is what a rank writes to and reads from.
type file interface {
	WriteAt([]byte, int64) (int, error)
	ReadAt([]byte, int64) (int, error)
	Sync() error
	Close() error
}

func runRank(args []string) error {
	if len(args) != 9 {
		return fmt.Errorf("want 9 arguments, got %d", len(args))
	}
	mode, op, path, clusterFile := args[0], args[1], args[2], args[8]
	nums := make([]int64, 5)
	for i := range nums {
		v, err := strconv.ParseInt(args[3+i], 10, 64)
		if err != nil {
			return fmt.Errorf("argument %d: %w", 4+i, err)
		}
		nums[i] = v
	}
	rank, ranks, size, xfer, startAt := nums[0], nums[1], nums[2], nums[3], nums[4]
	ctx := context.Background()
	var f file
	switch mode {
	case "posix":
		flags := os.O_RDONLY
		if op == "write" {
			flags = os.O_WRONLY | os.O_CREATE
		}
		lf, err := os.OpenFile(path, flags, 0o644)
		if err != nil {
			return err
		}
		f = lf
	default:
		if !strings.HasPrefix(mode, "pario") {
			return fmt.Errorf("unknown mode %q", mode)
		}
		cf, err := cluster.ReadFile(clusterFile)
		if err != nil {
			return err
		}
		secret, err := cf.Secret()
		if err != nil {
			return err
		}
		cl, err := client.Dial(ctx, client.Options{Meta: cf.Meta, Secret: secret, Endpoint: wire.EndpointOptions{Protection: cf.Protection}})
		if err != nil {
			return err
		}
		defer cl.Close()
		pf, err := cl.Open(ctx, path)
		if err != nil {
			return err
		}
		f = pf
	}
	defer f.Close()

	// Incompressible data: random bytes, each transfer stamped with its
	// offset so that a read can tell a misplaced block.
	buf := make([]byte, xfer)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	block := size / ranks
	base := rank * block
	time.Sleep(time.Until(time.Unix(0, startAt)))
	start := time.Now()
	for off := base; off < base+block; off += xfer {
		if op == "write" {
			binary.LittleEndian.PutUint64(buf, uint64(off))
			if _, err := f.WriteAt(buf, off); err != nil {
				return err
			}
			continue
		}
		if _, err := f.ReadAt(buf, off); err != nil {
			return fmt.Errorf("read at %d: %w", off, err)
		}
		if got := binary.LittleEndian.Uint64(buf); got != uint64(off) {
			return fmt.Errorf("read at %d: block stamped %d", off, got)
		}
	}
	if op == "write" {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	end := time.Now()
	return json.NewEncoder(os.Stdout).Encode(map[string]int64{"Start": start.UnixNano(), "End": end.UnixNano(), "Bytes": block})
}

func peakRSS(pid int) string {
	if pid == 0 {
		return "unknown"
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
