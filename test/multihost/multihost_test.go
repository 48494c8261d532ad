package multihost

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/internal/testbin"
)

const (
	fileSize  = 8 << 20  // each test file: 128 strips
	stripSize = 64 << 10 // so 32 strips, 2 MiB, per I/O server
	layout    = "simple_stripe:strip_size=64k"
	ioServers = 4

	cliSeed = 1 // contents of /cli.dat, written by `pario cp`
	goSeed  = 2 // contents of /go.dat, written by the Go client

	// Environment of the test binary re-run inside the client namespace.
	envChild   = "PARIO_MULTIHOST_CHILD"
	envCluster = "PARIO_MULTIHOST_CLUSTER"
	envSubnet  = "PARIO_MULTIHOST_SUBNET"
)

var (
	buildOnce    sync.Once
	parioBin     string
	buildErr     error
	buildCleanup func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildCleanup != nil {
		buildCleanup()
	}
	os.Exit(code)
}

// buildPario builds the pario binary, once per test binary and only when a
// test gets past its skip checks.
func buildPario(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() { parioBin, buildCleanup, buildErr = testbin.Build() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return parioBin
}

// data is the deterministic content of a test file.
func data(seed uint64) []byte {
	b := make([]byte, fileSize)
	r := rand.NewChaCha8([32]byte{byte(seed)})
	_, _ = r.Read(b)
	return b
}

// TestMultiHost runs one metadata server, four I/O servers on two hosts and
// the clients in separate network namespaces, and checks that a striped
// file written from the client host reaches every I/O server over the
// virtual network and reads back intact.
func TestMultiHost(t *testing.T) {
	start := time.Now()
	tb := newTestbed(t)
	bin := buildPario(t)
	t.Logf("network %s0/24 up in %v", tb.subnet, time.Since(start).Round(time.Millisecond))

	// Servers: meta on its host, data0+data1 on io0, data2+data3 on io1.
	dataHost := func(i int) string { return "io" + strconv.Itoa(i/2) }
	var dataHosts []string
	for i := range ioServers {
		dataHosts = append(dataHosts, tb.hosts[dataHost(i)].ip)
	}
	serverLog := &testbin.LockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server output:\n%s", serverLog.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := cluster.SpawnProcesses(ctx, cluster.ProcessConfig{
		Binary:      bin,
		Dir:         filepath.Join(t.TempDir(), "cluster"),
		DataServers: ioServers,
		MetaHost:    tb.hosts["meta"].ip,
		DataHosts:   dataHosts,
		Wrap: func(name string) []string {
			if name == "meta" {
				return tb.wrap("meta")
			}
			i, err := strconv.Atoi(strings.TrimPrefix(name, "data"))
			if err != nil {
				panic("unexpected server name " + name)
			}
			return tb.wrap(dataHost(i))
		},
		Output: serverLog,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	t.Logf("cluster up in %v (since start)", time.Since(start).Round(time.Millisecond))

	// Every server runs in the namespace of its host.
	checkNamespace(t, tb, "meta", p.PID("meta"))
	for i := range ioServers {
		checkNamespace(t, tb, dataHost(i), p.PID(fmt.Sprintf("data%d", i)))
	}
	// The cluster file names only addresses on the test network, never loopback.
	cf, err := cluster.ReadFile(p.ClusterFile)
	if err != nil {
		t.Fatal(err)
	}
	checkAddr(t, tb.subnet, "meta", cf.Meta)
	for i, d := range cf.Data {
		checkAddr(t, tb.subnet, d.Name, d.Addr)
		if host, _, _ := net.SplitHostPort(d.Addr); host != tb.hosts[dataHost(i)].ip {
			t.Errorf("%s listens on %s, want host %s", d.Name, d.Addr, tb.hosts[dataHost(i)].ip)
		}
	}

	// Byte counters of every host's link before the client works.
	type ctr struct{ rx, tx int64 }
	snapshot := func() map[string]ctr {
		m := map[string]ctr{}
		for name, h := range tb.hosts {
			rx, tx := tb.counters(h.ns, "eth0")
			m[name] = ctr{rx, tx}
		}
		rx, tx := tb.counters("", tb.rootLink)
		m["admin"] = ctr{rx, tx}
		return m
	}
	before := snapshot()

	// pario runs in the client namespace, e.g. `pario cp` and `viewdist`.
	pario := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		argv := append([]string{"netns", "exec", tb.hosts["client"].ns, bin, "--cluster", p.ClusterFile}, args...)
		cmd := exec.CommandContext(ctx, "ip", argv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("pario %s (in %s): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), tb.hosts["client"].ns, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	local := t.TempDir()
	src := filepath.Join(local, "src.dat")
	if err := os.WriteFile(src, data(cliSeed), 0o644); err != nil {
		t.Fatal(err)
	}

	// 1. CLI: copy a multi-stripe file in, look at its distribution, copy it out.
	pario("cp", "-q", "--layout", layout, src, "pario:/cli.dat")
	vd := pario("viewdist", "/cli.dat")
	t.Logf("pario viewdist /cli.dat (from the client namespace):\n%s", vd)
	checkViewdist(t, vd, cf, func(i int) string { return tb.hosts[dataHost(i)].ip })
	pario("cp", "-q", "pario:/cli.dat", filepath.Join(local, "cli.out"))
	checkFile(t, filepath.Join(local, "cli.out"), data(cliSeed))

	// 2. Go client: this test binary, re-run inside the client namespace,
	// writes /go.dat and reads back both files.
	runChild(t, tb, p.ClusterFile)

	// 3. CLI reads what the Go client wrote.
	pario("cp", "-q", "pario:/go.dat", filepath.Join(local, "go.out"))
	checkFile(t, filepath.Join(local, "go.out"), data(goSeed))

	// The data crossed the veths: the client sent both files (16 MiB) and
	// received four reads (32 MiB); each I/O host holds half of every file,
	// so it took in at least half the writes and sent half the reads.
	// The test process's own link carried next to nothing meanwhile.
	after := snapshot()
	const written, read = 2 * fileSize, 4 * fileSize
	delta := func(name string) ctr {
		return ctr{after[name].rx - before[name].rx, after[name].tx - before[name].tx}
	}
	for name, c := range map[string]ctr{"client": {read, written}, "io0": {written / 2, read / 2}, "io1": {written / 2, read / 2}} {
		d := delta(name)
		t.Logf("%-6s eth0: rx %6.1f MiB  tx %6.1f MiB", name, float64(d.rx)/(1<<20), float64(d.tx)/(1<<20))
		if d.rx < c.rx || d.tx < c.tx {
			t.Errorf("host %s link moved rx %d tx %d bytes; want at least rx %d tx %d", name, d.rx, d.tx, c.rx, c.tx)
		}
	}
	m, a := delta("meta"), delta("admin")
	t.Logf("meta   eth0: rx %d B, tx %d B; admin link (test process): rx %d B, tx %d B", m.rx, m.tx, a.rx, a.tx)
	if a.rx+a.tx > fileSize/8 {
		t.Errorf("the test process's own link moved %d bytes during the client phase; file data went through it?", a.rx+a.tx)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// runChild re-runs this test binary inside the client namespace for
// TestClientInNamespace.
func runChild(t *testing.T, tb *testbed, clusterFile string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", tb.hosts["client"].ns, exe,
		"-test.run=^TestClientInNamespace$", "-test.v", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), envChild+"=1", envCluster+"="+clusterFile, envSubnet+"="+tb.subnet)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestClientInNamespace")) {
		t.Fatalf("Go client in namespace %s: %v\n%s", tb.hosts["client"].ns, err, out)
	}
	t.Logf("Go client in the client namespace:\n%s", indent(out))
}

// TestClientInNamespace is the Go-level client half of TestMultiHost, run
// by it inside the client namespace; on its own it does nothing.
func TestClientInNamespace(t *testing.T) {
	if os.Getenv(envChild) == "" {
		t.Log("helper of TestMultiHost: does its work only when re-run by it inside the client namespace")
		return
	}
	subnet := os.Getenv(envSubnet)
	cf, err := cluster.ReadFile(os.Getenv(envCluster))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := cf.Secret()
	if err != nil {
		t.Fatal(err)
	}

	// Isolation: this host has only lo and eth0, and nothing answers on
	// loopback at any server's port, so the servers are reachable only
	// across the network.
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ifc := range ifs {
		names = append(names, ifc.Name)
	}
	if len(names) != 2 || !strings.Contains(" "+strings.Join(names, " ")+" ", " eth0 ") {
		t.Errorf("client namespace interfaces %v, want lo and eth0", names)
	}
	for _, addr := range append([]string{cf.Meta}, addrsOf(cf)...) {
		_, port, _ := net.SplitHostPort(addr)
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second); err == nil {
			c.Close()
			t.Errorf("127.0.0.1:%s answers in the client namespace; the servers must be reachable only at %s", port, addr)
		}
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("cannot reach %s from the client namespace: %v", addr, err)
		}
		if host, _, _ := net.SplitHostPort(c.LocalAddr().String()); !strings.HasPrefix(host, subnet) {
			t.Errorf("connection to %s leaves from %s, not from the test network %s0/24", addr, host, subnet)
		}
		c.Close()
	}
	t.Logf("isolation: interfaces %v; servers unreachable on 127.0.0.1, reachable on %s*", names, subnet)

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dial := func() *client.Client {
		c, err := client.Dial(ctx, client.Options{Meta: cf.Meta, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	// Write /go.dat in chunks that do not line up with the strips.
	l, err := dist.ParseLayout(layout)
	if err != nil {
		t.Fatal(err)
	}
	want := data(goSeed)
	f, err := dial().Create(ctx, "/go.dat", client.CreateOptions{Layout: l, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 3<<20/2 + 4093
	for off := 0; off < len(want); off += chunk {
		end := min(off+chunk, len(want))
		if n, err := f.WriteAtContext(ctx, want[off:end], int64(off)); err != nil || n != end-off {
			t.Fatalf("WriteAt(%d, %d): %d, %v", off, end-off, n, err)
		}
	}
	if err := f.SyncContext(ctx); err != nil {
		t.Fatal(err)
	}

	// Read both files back through a fresh connection.
	c := dial()
	for _, tc := range []struct {
		path string
		want []byte
	}{{"/go.dat", want}, {"/cli.dat", data(cliSeed)}} {
		f, err := c.Open(ctx, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if size, err := f.Size(ctx); err != nil || size != fileSize {
			t.Fatalf("%s: size %d, %v; want %d", tc.path, size, err, fileSize)
		}
		got := make([]byte, fileSize)
		if n, err := f.ReadAtContext(ctx, got, 0); err != nil || n != fileSize {
			t.Fatalf("%s: ReadAt: %d, %v", tc.path, n, err)
		}
		if i := firstDiff(got, tc.want); i >= 0 {
			t.Fatalf("%s: read back differs at byte %d", tc.path, i)
		}
		// A short read across a strip boundary, too.
		small := make([]byte, 100)
		if _, err := f.ReadAtContext(ctx, small, 5*stripSize-50); err != nil || !bytes.Equal(small, tc.want[5*stripSize-50:5*stripSize+50]) {
			t.Fatalf("%s: ReadAt across strips 4/5: %v", tc.path, err)
		}
		dfs, err := f.Datafiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hosts := map[string]bool{}
		servers := map[string]bool{}
		for _, d := range dfs {
			host, _, _ := net.SplitHostPort(d.Server.Addr)
			hosts[host], servers[d.Server.Name] = true, true
			if !strings.HasPrefix(host, subnet) || d.Size != fileSize/ioServers {
				t.Errorf("%s datafile %d: %s at %s holds %d bytes; want %d on %s*", tc.path, d.Datafile, d.Server.Name, d.Server.Addr, d.Size, fileSize/ioServers, subnet)
			}
		}
		if len(dfs) != ioServers || len(servers) != ioServers || len(hosts) != 2 {
			t.Errorf("%s: %d datafiles on servers %v, hosts %v; want %d servers on 2 hosts", tc.path, len(dfs), servers, hosts, ioServers)
		}
		t.Logf("%s: %d bytes read back intact from %d I/O servers on hosts %v", tc.path, fileSize, len(servers), keys(hosts))
	}
}

// checkNamespace checks that process pid runs in host h's network namespace.
func checkNamespace(t *testing.T, tb *testbed, h string, pid int) {
	t.Helper()
	var proc, want syscall.Stat_t
	err1 := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &proc)
	err2 := syscall.Stat("/run/netns/"+tb.hosts[h].ns, &want)
	if err1 != nil || err2 != nil {
		t.Fatalf("namespace of pid %d: %v %v", pid, err1, err2)
	}
	if proc.Ino != want.Ino || proc.Dev != want.Dev {
		t.Errorf("server pid %d is not in namespace %s", pid, tb.hosts[h].ns)
	}
}

// checkAddr checks a cluster-file address is on the test network.
func checkAddr(t *testing.T, subnet, name, addr string) {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	parsed := net.ParseIP(host)
	if err != nil || parsed == nil || parsed.IsLoopback() || !strings.HasPrefix(host, subnet) {
		t.Errorf("cluster file: %s at %q; want an address in %s0/24, not loopback", name, addr, subnet)
	}
}

// checkViewdist checks `pario viewdist` output: four datafiles, one per I/O
// server, each on its host's address and holding a quarter of the file.
func checkViewdist(t *testing.T, out string, cf *cluster.File, hostOf func(int) string) {
	t.Helper()
	seen := map[string]bool{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		df, err := strconv.Atoi(f[0])
		if err != nil {
			continue // the header
		}
		name, addr, size := f[1], f[2], f[3]
		i := slices.IndexFunc(cf.Data, func(d cluster.ServerEntry) bool { return d.Name == name })
		if i < 0 {
			t.Errorf("viewdist: datafile %d on unknown server %q", df, name)
			continue
		}
		seen[name] = true
		if addr != cf.Data[i].Addr || !strings.HasPrefix(addr, hostOf(i)+":") {
			t.Errorf("viewdist: %s at %s, want %s on host %s", name, addr, cf.Data[i].Addr, hostOf(i))
		}
		if size != strconv.Itoa(fileSize/ioServers) {
			t.Errorf("viewdist: %s holds %s bytes, want %d", name, size, fileSize/ioServers)
		}
	}
	if len(seen) != ioServers || !strings.Contains(out, fmt.Sprintf("%d datafiles", ioServers)) {
		t.Errorf("viewdist shows servers %v, want all %d:\n%s", keys(seen), ioServers, out)
	}
}

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d bytes, want %d", path, len(got), len(want))
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("%s differs from what was written at byte %d", path, i)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func addrsOf(cf *cluster.File) []string {
	var out []string
	for _, d := range cf.Data {
		out = append(out, d.Addr)
	}
	return out
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

func indent(b []byte) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", "\n    ")
}
