package fusefs_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/metrics/metricstest"
	"github.com/pario/pario/server/meta"
)

// largeDirEntries is the size of the directory a test lists:
// far more than one frame of names (20,000 7-character names used to fail
// with "frame too large"): normal, or small under the race detector or
// -short (the race detector checks the paging code, not the size).
// PARIO_LARGEDIR_ENTRIES overrides both.
func largeDirEntries(t *testing.T, normal, small int) int {
	if v := os.Getenv("PARIO_LARGEDIR_ENTRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PARIO_LARGEDIR_ENTRIES=%q: want a positive count", v)
		}
		return n
	}
	if testenv.RaceEnabled || testing.Short() {
		return small
	}
	return normal
}

// largeName is entry i's name: 7 characters, as in the report.
func largeName(i int) string { return fmt.Sprintf("f%06d", i) }

// makeLargeDir creates /big with n empty files, from 32 goroutines.
func makeLargeDir(t *testing.T, c *client.Client, n int) {
	t.Helper()
	ctx := context.Background()
	if err := c.Mkdir(ctx, "/big", 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if _, err := c.Create(ctx, "/big/"+largeName(i), client.CreateOptions{Mode: client.DefaultFileMode, Exclusive: true}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create: %v", err)
	}
	t.Logf("created %d files in %v", n, time.Since(start).Round(time.Millisecond))
}

// checkLargeNames asserts that names are exactly largeName(0..n-1), in order.
func checkLargeNames(t *testing.T, how string, names []string, n int) {
	t.Helper()
	if len(names) != n {
		t.Fatalf("%s: %d entries, want %d", how, len(names), n)
	}
	for i, got := range names {
		if got != largeName(i) {
			t.Fatalf("%s: entry %d is %q, want %q", how, i, got, largeName(i))
		}
	}
}

// spawnFast is spawn with the servers' directory on tmpfs when there is
// one: a create is one fsynced metadata transaction, and fsync on tmpfs
// costs nothing, which is all this test needs from it.
func spawnFast(t *testing.T) *cluster.Processes {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "pario-largedir-")
	if err != nil {
		dir = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	return spawnIn(t, dir)
}

// TestLargeDirectory: a directory of 200,000 files is listed whole through
// the client, `pario ls`, and `ls` and `ls -l` on a `pario mount`, and
// removed with `pario rm -r`; the metadata server, the mount and `pario
// ls` stay within memory bounds that do not grow with the directory.
func TestLargeDirectory(t *testing.T) {
	need(t, "ls", "fusermount3")
	n := largeDirEntries(t, 200_000, 25_000)
	p := spawnFast(t)
	c := dial(t, p)
	ctx := context.Background()
	makeLargeDir(t, c, n)
	checkNames := func(how string, names []string) { t.Helper(); checkLargeNames(t, how, names, n) }

	// The client, a page at a time.
	start := time.Now()
	var names []string
	for e, err := range c.Dir(ctx, "/big") {
		if err != nil {
			t.Fatalf("client listing: %v", err)
		}
		if e.Attr.Kind != meta.KindFile {
			t.Fatalf("client listing: %q is not a file: %+v", e.Name, e.Attr)
		}
		names = append(names, e.Name)
	}
	checkNames("client listing", names)
	names = nil
	t.Logf("client listing: %v", time.Since(start).Round(time.Millisecond))

	// pario ls: streams, in byte order.
	start = time.Now()
	cmd := exec.Command(parioBin, "--cluster", p.ClusterFile, "ls", "/big")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pario ls /big: %v\n%s", err, stderr.String())
	}
	checkNames("pario ls", strings.Fields(string(out)))
	out = nil
	lsRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("pario ls: %v, peak RSS %d MiB", time.Since(start).Round(time.Millisecond), lsRSS>>20)
	// The bounds hold memory to a page, not the directory. They tell the
	// two apart only for a large directory (200,000 entries, the normal
	// run): a smaller one (the race run's) held whole fits under them too,
	// and there the Go runtime's own footprint, which varies with the
	// machine's load, is most of what is measured.
	lsBound, metaBound, mountBound, mountBase := int64(96<<20), int64(64<<20), int64(64<<20), int64(32<<20)
	if n < 100_000 {
		lsBound, metaBound, mountBound, mountBase = 4*lsBound, 4*metaBound, 4*mountBound, 4*mountBase
	}
	if lsRSS > lsBound {
		t.Errorf("pario ls of %d entries peaked at %d MiB resident, want under %d MiB", n, lsRSS>>20, lsBound>>20)
	}

	// pario ls -l: the sizes of a page of files in one request per I/O
	// server.
	start = time.Now()
	cmd = exec.Command(parioBin, "--cluster", p.ClusterFile, "ls", "-l", "/big")
	stderr.Reset()
	cmd.Stderr = &stderr
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("pario ls -l /big: %v\n%s", err, stderr.String())
	}
	if lines := bytes.Count(out, []byte("\n")); lines != n {
		t.Fatalf("pario ls -l /big: %d lines, want %d", lines, n)
	}
	out = nil
	t.Logf("pario ls -l: %v, peak RSS %d MiB", time.Since(start).Round(time.Millisecond), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss>>10)

	// `pario mount`, a process of its own so that its memory is measured
	// apart from the test's.
	dir := t.TempDir()
	mcmd, mout, exited := mountCommand(t, dir, "--cluster", p.ClusterFile, "mount", "--metrics", "127.0.0.1:0")
	addr := regexp.MustCompile(`metrics: http://([^/\s]+)/metrics`).FindStringSubmatch(mout.String())
	if addr == nil {
		t.Fatalf("pario mount printed no metrics address:\n%s", mout.String())
	}
	big := filepath.Join(dir, "big")

	// ls on the mount: getdents, a page at a time through the kernel.
	before := scrapeCounts(t, addr[1])
	start = time.Now()
	plain := strings.Fields(sh(t, "ls "+big))
	checkNames("ls on the mount", plain)
	plain = nil
	t.Logf("ls on the mount: %v; %s", time.Since(start).Round(time.Millisecond), scrapeCounts(t, addr[1]).since(before))
	mountRSS := procStatus(t, mcmd.Process.Pid, "VmHWM:")
	t.Logf("pario mount: peak RSS %d MiB after ls", mountRSS>>20)
	if mountRSS > mountBound {
		t.Errorf("pario mount peaked at %d MiB resident for ls of %d entries, want under %d MiB", mountRSS>>20, n, mountBound>>20)
	}

	// ls -l on the mount: getdents a page at a time with attributes
	// (READDIRPLUS), and a stat of every entry, answered by the kernel.
	before = scrapeCounts(t, addr[1])
	start = time.Now()
	lsl := sh(t, "ls -l "+big)
	sc := bufio.NewScanner(strings.NewReader(lsl))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "total" {
			continue
		}
		if len(f) < 9 || f[0] != "-rw-r--r--" || f[4] != "0" {
			t.Fatalf("ls -l line %q: want a 0-byte file with mode -rw-r--r--", sc.Text())
		}
		names = append(names, f[8])
	}
	lsl = ""
	checkNames("ls -l on the mount", names)
	names = nil
	after := scrapeCounts(t, addr[1])
	t.Logf("ls -l on the mount: %v; %s", time.Since(start).Round(time.Millisecond), after.since(before))
	// The attributes come with the pages (READDIRPLUS): neither the
	// kernel nor the mount looks entries up one by one (before the
	// directory handle answered READDIRPLUS itself, the mount asked the
	// metadata server about every entry). Nothing changes meanwhile;
	// none is looked up on a quiet machine, but on one at load 37 the
	// kernel asked again about 7% of the entries (11,371 lookups and
	// 14,856 getattrs of 200,000; its inode cache had shrunk too).
	for _, op := range []string{"fuse lookup", "meta lookup", "meta getbyid"} {
		if d := after[op] - before[op]; d > float64(n/4) {
			t.Errorf("ls -l of %d entries: %.0f %s requests, want under %d", n, d, op, n/4)
		}
	}
	// The sizes come in one usageBatch per page and I/O server; single
	// size requests only for entries the kernel asks about again (4
	// datafiles each).
	grew := func(op string) float64 { return after[op] - before[op] }
	if d, asked := grew("data size"), grew("fuse getattr")+grew("fuse lookup"); d > 4*asked {
		t.Errorf("ls -l of %d entries: %.0f size requests for %.0f entries asked about again, want 4 at most for each", n, d, asked)
	}
	// The first page may come from the mount's recent listings (the plain
	// ls's, if that ended under plusMaxAge ago: dir.go), with no readdir
	// to the metadata server.
	if d, pages := grew("data usageBatch"), grew("meta readdir")+1; d > 4*pages {
		t.Errorf("ls -l of %d entries: %.0f usageBatch requests for %.0f pages, want 4 at most for each (one per server)", n, d, pages)
	}

	// What grows with the directory in the mount is the kernel's inode
	// cache: every entry ls -l stat()ed stays in it (as on any file
	// system), and FUSE makes the mount keep a node for each until the
	// kernel forgets it (go-fuse's inode and its tables, about 450 bytes).
	// The listing itself holds one page.
	live := liveHeap(t, addr[1])
	t.Logf("pario mount: peak RSS %d MiB, live heap %d MiB after ls -l (%d bytes an entry)",
		procStatus(t, mcmd.Process.Pid, "VmHWM:")>>20, live>>20, live/int64(n))
	if bound := mountBase + 512*int64(n); live > bound {
		t.Errorf("pario mount holds %d MiB of live heap after ls -l of %d entries, want under %d MiB (%d MiB and 512 bytes an entry)", live>>20, n, bound>>20, mountBase>>20)
	}

	// The metadata server's resident set includes the pages of meta.db it
	// mapped (bbolt), which grow with the namespace; its own memory
	// (anonymous) is what paging bounds.
	metaRSS, metaAnon := procStatus(t, p.PID("meta"), "VmHWM:"), procStatus(t, p.PID("meta"), "RssAnon:")
	t.Logf("metadata server: peak RSS %d MiB, anonymous now %d MiB", metaRSS>>20, metaAnon>>20)
	if metaAnon > metaBound {
		t.Errorf("metadata server holds %d MiB of anonymous memory after listing %d entries, want under %d MiB", metaAnon>>20, n, metaBound>>20)
	}

	// The mount is done: unmounted, it no longer holds a lease whose
	// acknowledgement every removal waits for.
	if err := mcmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitsCleanly(t, exited, dir)

	// pario rm -r, page by page.
	start = time.Now()
	if out, err := exec.Command(parioBin, "--cluster", p.ClusterFile, "rm", "-r", "/big").CombinedOutput(); err != nil {
		t.Fatalf("pario rm -r /big: %v\n%s", err, out)
	}
	t.Logf("pario rm -r: %v", time.Since(start).Round(time.Millisecond))
	if _, err := c.Stat(ctx, "/big"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat /big after rm -r: %v, want ENOENT", err)
	}
	if files, _, err := c.MetaStats(ctx); err != nil || files != 0 {
		t.Fatalf("after rm -r: %d files left (%v)", files, err)
	}
}

// liveHeap is the Go heap the process serving the metrics endpoint at
// addr holds live: its pprof endpoint collects garbage first.
func liveHeap(t *testing.T, addr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, m := range metricstest.Scrape(t, addr)["go_memstats_heap_alloc_bytes"].GetMetric() {
		return int64(m.GetGauge().GetValue())
	}
	t.Fatalf("metrics of %s: no go_memstats_heap_alloc_bytes", addr)
	return 0
}

// opCounts are counters of a mount's metrics endpoint: FUSE requests by op
// ("fuse lookup") and the client's calls to the metadata server ("meta
// getattr").
type opCounts map[string]float64

// scrapeCounts reads the counters from the metrics endpoint at addr.
func scrapeCounts(t *testing.T, addr string) opCounts {
	t.Helper()
	fams := metricstest.Scrape(t, addr)
	counts := opCounts{}
	for _, m := range fams["pario_fuse_requests_total"].GetMetric() {
		counts["fuse "+label(m, "op")] += m.GetCounter().GetValue()
	}
	for _, m := range fams["pario_client_requests_total"].GetMetric() {
		counts[label(m, "service")+" "+label(m, "op")] += m.GetCounter().GetValue()
	}
	return counts
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// since says what grew since before, in order of names.
func (c opCounts) since(before opCounts) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if d := c[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, d))
		}
	}
	return strings.Join(parts, ", ")
}

// procStatus reads a size field ("VmHWM:", "RssAnon:") of a process's
// /proc status.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestLargeDirectoryRemoveOnMount: `rm -r` on the mount of a directory of
// several pages: coreutils reads the directory while it unlinks the names
// it read, so the listing goes on from its cookie past removed names.
// 5,000 entries by default: each unlink is a metadata transaction and
// datafile removals before the reply, and at 200,000 entries this takes
// minutes (docs/BENCHMARKS.md); TestLargeDirectory removes its 200,000
// with `pario rm -r`. PARIO_LARGEDIR_ENTRIES sets the size here too.
func TestLargeDirectoryRemoveOnMount(t *testing.T) {
	need(t, "rm")
	n := largeDirEntries(t, 5_000, 2_500)
	p := spawnFast(t)
	m := mount(t, p, fusefs.Options{})
	makeLargeDir(t, m.c, n)
	start := time.Now()
	sh(t, "rm -r "+m.path("big"))
	t.Logf("rm -r on the mount: %v", time.Since(start).Round(time.Millisecond))
	if files, _, err := m.c.MetaStats(context.Background()); err != nil || files != 0 {
		t.Fatalf("after rm -r on the mount: %d files left (%v)", files, err)
	}
	if _, err := os.Stat(m.path("big")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat big after rm -r: %v, want ENOENT", err)
	}
}

// TestDirectorySeek: telldir/seekdir and rewinddir on a directory of
// several pages give the same entries again (a seek back re-reads the
// listing from the metadata server a page at a time).
func TestDirectorySeek(t *testing.T) {
	need(t, "perl")
	const n = 2500
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	makeLargeDir(t, m.c, n)
	out := sh(t, `perl -e '
		opendir(my $d, $ARGV[0]) or die "opendir: $!";
		my @head = map { scalar readdir($d) } 1..1500;
		my $pos = telldir($d);
		my @rest = readdir($d);
		seekdir($d, $pos);
		my @again = readdir($d);
		rewinddir($d);
		my @all = readdir($d);
		print join(" ", scalar(@head), scalar(@rest), join(",", @rest) eq join(",", @again) ? "same" : "differ",
			scalar(@all), join(",", @head, @rest) eq join(",", @all) ? "same" : "differ"), "\n";
		print "$_\n" for @all;
	' `+m.path("big"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if want := fmt.Sprintf("1500 %d same %d same", n-1500, n); lines[0] != want {
		t.Fatalf("perl: %q, want %q", lines[0], want)
	}
	checkLargeNames(t, "after rewinddir", lines[1:], n)
}
