// Command metabench measures metadata operations as mdtest does (`mdtest
// -n N -F -C -T -r`, with and without -u): R ranks each create N empty
// files, then stat them, then remove them, once with a directory per rank
// and once all in one shared directory. It runs the same phases on a local
// directory (the disk under the cluster), through a pario FUSE mount (`pario
// mount`, its own process) and with the native Go client, against one
// cluster of separate server processes, and prints ops/s and the ratios to
// local: medians of the repetitions, the modes' order rotating from one
// repetition to the next so that none always runs first.
//
// Ranks are goroutines of this process; each operation is its own system
// call (or client call), as mdtest's ranks make them. mdtest itself is not
// needed; given one (-mdtest, built from github.com/hpc/ior), it also runs
// under mpirun on the local directory and on the mount, and its rates are
// printed beside.
//
//	scripts/bench-meta.sh                        # builds everything, runs this
//	scripts/bench-meta.sh -n 2000 -mdtest /opt/ior/bin/mdtest
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/benchutil"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatalf("metabench: %v", err)
	}
}

type config struct {
	pario, dir, mdtest, mpirun, mount, meta string
	files, ranks, reps, servers             int
	keep                                    bool
}

// fsys is one way of reaching a file system: a local or mounted directory,
// or the native client. Paths are relative to the benchmark's root.
type fsys interface {
	mkdir(p string) error
	create(p string) error // creates an empty file and closes it
	stat(p string) error
	remove(p string) error // a file or an empty directory
}

type osFS string

func (r osFS) mkdir(p string) error { return os.Mkdir(filepath.Join(string(r), p), 0o755) }
func (r osFS) create(p string) error {
	f, err := os.OpenFile(filepath.Join(string(r), p), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
func (r osFS) stat(p string) error {
	_, err := os.Stat(filepath.Join(string(r), p))
	return err
}
func (r osFS) remove(p string) error { return os.Remove(filepath.Join(string(r), p)) }

type nativeFS struct {
	ctx context.Context
	c   *client.Client
}

func (n nativeFS) mkdir(p string) error { return n.c.Mkdir(n.ctx, "/"+p, 0o755) }
func (n nativeFS) create(p string) error {
	f, err := n.c.Create(n.ctx, "/"+p, client.CreateOptions{})
	if err != nil {
		return err
	}
	return f.Close()
}
func (n nativeFS) stat(p string) error {
	_, err := n.c.Stat(n.ctx, "/"+p)
	return err
}
func (n nativeFS) remove(p string) error { return n.c.Remove(n.ctx, "/"+p) }

var (
	layouts = []string{"unique", "shared"}
	phases  = []string{"create", "stat", "remove"}
)

func run() error {
	var c config
	flag.StringVar(&c.pario, "pario", "", "path to the pario binary (required)")
	flag.StringVar(&c.dir, "dir", "", "directory on the disk under test (default: a new directory under ./tmp)")
	flag.IntVar(&c.files, "n", 1000, "files per rank (mdtest -n)")
	flag.IntVar(&c.ranks, "ranks", 4, "ranks")
	flag.IntVar(&c.reps, "reps", 3, "repetitions (medians are reported)")
	flag.IntVar(&c.servers, "servers", 4, "pario I/O servers")
	flag.StringVar(&c.mdtest, "mdtest", "", "optional mdtest binary to run beside, under mpirun, on the local directory and the mount")
	flag.StringVar(&c.mpirun, "mpirun", "mpirun", "mpirun for -mdtest")
	flag.StringVar(&c.mount, "mount-flags", "", "extra flags for `pario mount`, space-separated")
	flag.StringVar(&c.meta, "meta-flags", "", "extra flags for `pario meta`, space-separated (e.g. --meta-sync-interval 0)")
	flag.BoolVar(&c.keep, "keep", false, "keep the data directory")
	flag.Parse()
	if c.pario == "" {
		return errors.New("-pario: path to the pario binary required")
	}
	if c.files < 1 || c.ranks < 1 || c.reps < 1 {
		return fmt.Errorf("-n %d, -ranks %d, -reps %d: each must be at least 1", c.files, c.ranks, c.reps)
	}
	var err error
	if c.pario, err = filepath.Abs(c.pario); err != nil {
		return err
	}
	var removeDir func()
	if c.dir, removeDir, err = benchutil.WorkDir(c.dir, "metabench", c.keep); err != nil {
		return err
	}
	defer removeDir()
	ctx := context.Background()
	procs, err := cluster.SpawnProcesses(ctx, cluster.ProcessConfig{
		Binary: c.pario, Dir: filepath.Join(c.dir, "pario"), DataServers: c.servers, Output: os.Stderr,
		MetaArgs: strings.Fields(c.meta),
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
	local := filepath.Join(c.dir, "local")
	if err := os.Mkdir(local, 0o755); err != nil {
		return err
	}

	host, _ := os.Hostname()
	fmt.Printf("metabench %s  host=%s  %d ranks x %d files, create/stat/remove, %d I/O servers (processes), %d reps\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), host, c.ranks, c.files, c.servers, c.reps)
	mountFlags := c.mount
	if mountFlags == "" {
		mountFlags = "(default flags)"
	}
	fmt.Printf("local: %s; mount: pario mount %s; pario meta %s\n\n", local, mountFlags, c.meta)

	targets := map[string]fsys{"local": osFS(local), "mount": osFS(mnt), "native": nativeFS{ctx, cl}}
	modes := []string{"local", "mount", "native"}
	if c.mdtest != "" {
		targets["mdtest-local"], targets["mdtest-mount"] = osFS(local), osFS(mnt)
		modes = append(modes, "mdtest-local", "mdtest-mount")
	}
	// results[mode][layout+" "+phase] holds one rate per repetition.
	results := map[string]map[string][]float64{}
	for _, m := range modes {
		results[m] = map[string][]float64{}
	}
	for rep := range c.reps {
		order := append(slices.Clone(modes[rep%len(modes):]), modes[:rep%len(modes)]...)
		for _, mode := range order {
			for _, layout := range layouts {
				base := fmt.Sprintf("r%d.%s.%s", rep, mode, layout)
				var rates map[string]float64
				if root, ok := strings.CutPrefix(mode, "mdtest-"); ok {
					rates, err = runMdtest(c, filepath.Join(string(targets[root].(osFS)), base), layout == "unique")
				} else {
					rates, err = runPhases(targets[mode], base, layout == "unique", c.ranks, c.files)
				}
				if err != nil {
					return fmt.Errorf("rep %d, %s, %s directory: %w", rep+1, mode, layout, err)
				}
				fmt.Printf("rep %d  %-12s %-6s  create %10.0f  stat %10.0f  remove %10.0f ops/s\n",
					rep+1, mode, layout, rates["create"], rates["stat"], rates["remove"])
				for _, p := range phases {
					results[mode][layout+" "+p] = append(results[mode][layout+" "+p], rates[p])
				}
			}
		}
	}

	fmt.Printf("\nmedians of %d reps, ops/s   %10s %10s %10s   %11s %12s", c.reps, "local", "mount", "native", "mount/local", "native/local")
	if c.mdtest != "" {
		fmt.Printf("   %12s %12s %8s", "mdtest local", "mdtest mount", "ratio")
	}
	fmt.Println()
	for _, layout := range layouts {
		for _, p := range phases {
			k := layout + " " + p
			l, m, n := benchutil.Median(results["local"][k]), benchutil.Median(results["mount"][k]), benchutil.Median(results["native"][k])
			fmt.Printf("%-26s %10.0f %10.0f %10.0f   %10.3fx %11.3fx", k, l, m, n, m/l, n/l)
			if c.mdtest != "" {
				ml, mm := benchutil.Median(results["mdtest-local"][k]), benchutil.Median(results["mdtest-mount"][k])
				fmt.Printf("   %12.0f %12.0f %7.3fx", ml, mm, mm/ml)
			}
			fmt.Println()
		}
	}
	return nil
}

// runPhases makes base (and a directory per rank in it when unique), runs
// the create, stat and remove phases, each with all ranks at once, removes
// the directories, and returns each phase's rate: operations over the time
// from the phase's start to its last rank's end.
func runPhases(fs fsys, base string, unique bool, ranks, files int) (map[string]float64, error) {
	if err := fs.mkdir(base); err != nil {
		return nil, err
	}
	dirs := make([]string, ranks)
	for r := range dirs {
		dirs[r] = base
		if unique {
			dirs[r] = fmt.Sprintf("%s/rank.%d", base, r)
			if err := fs.mkdir(dirs[r]); err != nil {
				return nil, err
			}
		}
	}
	ops := map[string]func(string) error{"create": fs.create, "stat": fs.stat, "remove": fs.remove}
	rates := map[string]float64{}
	for _, p := range phases {
		op := ops[p]
		errs := make([]error, ranks)
		var wg sync.WaitGroup
		start := time.Now()
		for r := range ranks {
			wg.Go(func() {
				for i := range files {
					if err := op(fmt.Sprintf("%s/file.%d.%d", dirs[r], r, i)); err != nil {
						errs[r] = fmt.Errorf("%s: %w", p, err)
						return
					}
				}
			})
		}
		wg.Wait()
		rates[p] = float64(ranks*files) / time.Since(start).Seconds()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	if unique {
		for _, d := range dirs {
			if err := fs.remove(d); err != nil {
				return nil, err
			}
		}
	}
	return rates, fs.remove(base)
}

// mdtestRate matches a line of mdtest's rate summary: the operation, then
// max, min and mean. mdtest 4.0 puts a colon after the operation, 4.1
// does not.
var mdtestRate = regexp.MustCompile(`^\s*File (creation|stat|removal)\s*:?\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)`)

// runMdtest runs mdtest's create, stat and remove phases in dir (which it
// makes and removes) and returns the mean rates of its summary.
func runMdtest(c config, dir string, unique bool) (map[string]float64, error) {
	args := []string{"-np", strconv.Itoa(c.ranks), "--oversubscribe", c.mdtest,
		"-n", strconv.Itoa(c.files), "-F", "-C", "-T", "-r", "-d", dir}
	if unique {
		args = append(args, "-u")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(c.mpirun, args...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_mpi_yield_when_idle=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", c.mpirun, strings.Join(args, " "), err, out)
	}
	names := map[string]string{"creation": "create", "stat": "stat", "removal": "remove"}
	rates := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := mdtestRate.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if _, seen := rates[names[m[1]]]; seen {
			continue // the time summary, after the rate summary
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return nil, fmt.Errorf("mdtest output %q: %w", sc.Text(), err)
		}
		rates[names[m[1]]] = v
	}
	if len(rates) != len(phases) {
		return nil, fmt.Errorf("mdtest output has no rate summary for create, stat and remove:\n%s", out)
	}
	return rates, nil
}
