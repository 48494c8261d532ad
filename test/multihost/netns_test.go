package multihost

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// The virtual network, for a test process with pid P:
//
//	namespace pario-mh-P-sw       bridge br0, one port per host below
//	namespace pario-mh-P-meta     eth0 10.201.X.10   metadata server
//	namespace pario-mh-P-io0      eth0 10.201.X.11   I/O servers data0, data1
//	namespace pario-mh-P-io1      eth0 10.201.X.12   I/O servers data2, data3
//	namespace pario-mh-P-client   eth0 10.201.X.20   pario cp / viewdist, Go client
//	root namespace                pmhP 10.201.X.1    the test itself ("admin host")
//
// The bridge sits in a namespace of its own rather than in the root one: a
// fresh namespace has no iptables/nftables rules, so br_netfilter (loaded,
// with bridge-nf-call-iptables=1, wherever Docker runs) cannot drop the
// bridged traffic, and nothing of the host's network is touched except the
// one veth the test process needs to reach the servers (cluster.SpawnProcesses
// dials every server from the calling process to wait for it).
//
// Every name carries the pid of the test process that made it, so a later
// run can tell leftovers of a crashed run (pid gone) from those of a run
// still going, and remove only the former.
const (
	nsPrefix   = "pario-mh-" // namespaces: pario-mh-<pid>-<host>
	linkPrefix = "pmh"       // root-namespace veth: pmh<pid> (≤ 10 chars)
)

// host is one simulated machine.
type host struct {
	name string // "meta", "io0", "io1", "client"
	ns   string // its network namespace
	ip   string // its address on the test network
}

// testbed is the virtual network of one test.
type testbed struct {
	t        *testing.T
	pid      string
	subnet   string // "10.201.X." (a /24)
	sw       string // the switch namespace
	rootLink string // the root-namespace end of the admin veth
	hosts    map[string]*host
}

// skipOrFail skips the test for a missing prerequisite, or fails it under
// CI (testenv.SkipOrFail).
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	testenv.SkipOrFail(t, "multi-host test cannot run: %s (it needs root and iproute2)", fmt.Sprintf(format, args...))
}

// ip runs the ip command and returns its combined output.
func ip(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// newTestbed builds the network, registering its teardown with t.Cleanup.
// It skips (or, under CI, fails) when the machine cannot host it.
func newTestbed(t *testing.T) *testbed {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root for network namespaces (euid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skipOrFail(t, "needs the ip command from iproute2: %v", err)
	}
	removeLeftovers(t)

	tb := &testbed{t: t, pid: strconv.Itoa(os.Getpid()), hosts: map[string]*host{}}
	tb.sw = tb.nsName("sw")
	tb.rootLink = linkPrefix + tb.pid
	var err error
	if tb.subnet, err = pickSubnet(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.teardown)

	// Probe: a namespace, running a command in it, and a bridge. Failing
	// here means the kernel or container does not allow it.
	if _, err := ip("netns", "add", tb.sw); err != nil {
		skipOrFail(t, "ip netns unsupported: %v", err)
	}
	if _, err := ip("netns", "exec", tb.sw, "true"); err != nil {
		skipOrFail(t, "ip netns exec unsupported: %v", err)
	}
	if _, err := ip("-n", tb.sw, "link", "add", "name", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"); err != nil {
		skipOrFail(t, "cannot create a bridge: %v", err)
	}
	tb.must("-n", tb.sw, "link", "set", "lo", "up")
	tb.must("-n", tb.sw, "link", "set", "br0", "up")

	// The admin link: this process reaches the servers through it.
	if _, err := ip("link", "add", "name", tb.rootLink, "type", "veth", "peer", "name", "admin", "netns", tb.sw); err != nil {
		skipOrFail(t, "cannot create a veth pair: %v", err)
	}
	tb.must("-n", tb.sw, "link", "set", "admin", "master", "br0")
	tb.must("-n", tb.sw, "link", "set", "admin", "up")
	tb.must("addr", "add", tb.subnet+"1/24", "dev", tb.rootLink)
	tb.must("link", "set", tb.rootLink, "up")

	for _, h := range []struct {
		name string
		last int
	}{{"meta", 10}, {"io0", 11}, {"io1", 12}, {"client", 20}} {
		tb.addHost(h.name, tb.subnet+strconv.Itoa(h.last))
	}

	// Wait for every link to report carrier (veths need both ends up).
	deadline := time.Now().Add(10 * time.Second)
	for _, h := range tb.hosts {
		tb.waitUp(deadline, "-n", h.ns, "eth0")
		tb.waitUp(deadline, "-n", tb.sw, h.name)
	}
	tb.waitUp(deadline, "-n", tb.sw, "br0")
	tb.waitUp(deadline, tb.rootLink)
	return tb
}

func (tb *testbed) nsName(host string) string { return nsPrefix + tb.pid + "-" + host }

func (tb *testbed) must(args ...string) {
	tb.t.Helper()
	if _, err := ip(args...); err != nil {
		tb.t.Fatal(err)
	}
}

// addHost makes a namespace with eth0 at addr, plugged into the bridge.
func (tb *testbed) addHost(name, addr string) {
	tb.t.Helper()
	h := &host{name: name, ns: tb.nsName(name), ip: addr}
	tb.hosts[name] = h
	tb.must("netns", "add", h.ns)
	// Made inside the switch namespace with its peer put straight into the
	// host's, so no half-built veth is ever left in the root namespace.
	tb.must("-n", tb.sw, "link", "add", "name", name, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
	tb.must("-n", tb.sw, "link", "set", name, "master", "br0")
	tb.must("-n", tb.sw, "link", "set", name, "up")
	tb.must("-n", h.ns, "link", "set", "lo", "up")
	tb.must("-n", h.ns, "addr", "add", addr+"/24", "dev", "eth0")
	tb.must("-n", h.ns, "link", "set", "eth0", "up")
}

// waitUp polls until a link's operational state is UP. args are an
// optional "-n NS" and the device.
func (tb *testbed) waitUp(deadline time.Time, args ...string) {
	tb.t.Helper()
	dev := args[len(args)-1]
	q := append(append([]string{}, args[:len(args)-1]...), "-o", "link", "show", "dev", dev)
	for {
		out, err := ip(q...)
		if err == nil && strings.Contains(out, "state UP") {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("link %v did not come up: %v %s", args, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wrap is the cluster.ProcessConfig.Wrap prefix running a server on host h.
func (tb *testbed) wrap(h string) []string {
	return []string{"ip", "netns", "exec", tb.hosts[h].ns}
}

// counters reads a link's received and sent byte counters; ns "" is the
// root namespace. `ip netns exec` mounts the namespace's own /sys.
func (tb *testbed) counters(ns, dev string) (rx, tx int64) {
	tb.t.Helper()
	files := []string{"/sys/class/net/" + dev + "/statistics/rx_bytes", "/sys/class/net/" + dev + "/statistics/tx_bytes"}
	var out []byte
	var err error
	if ns == "" {
		var b []byte
		for _, f := range files {
			if b, err = os.ReadFile(f); err != nil {
				break
			}
			out = append(out, b...)
		}
	} else {
		out, err = exec.Command("ip", append([]string{"netns", "exec", ns, "cat"}, files...)...).Output()
	}
	fields := strings.Fields(string(out))
	if err != nil || len(fields) != 2 {
		tb.t.Fatalf("read counters of %s in %q: %v (%q)", dev, ns, err, out)
	}
	rx, err1 := strconv.ParseInt(fields[0], 10, 64)
	tx, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		tb.t.Fatalf("counters of %s in %q: %v", dev, ns, err)
	}
	return rx, tx
}

// teardown removes everything this test made, then checks nothing is left.
// Servers must be stopped first (t.Cleanup runs in reverse order, and the
// cluster's Close is registered after this).
func (tb *testbed) teardown() {
	// Deleting the admin veth deletes its peer; deleting the switch
	// namespace deletes the bridge and the host veths with it.
	_, _ = ip("link", "del", tb.rootLink)
	removeNamespaces(tb.t, func(name string) bool { return strings.HasPrefix(name, nsPrefix+tb.pid+"-") })
	if left := listNamespaces(tb.t, func(name string) bool { return strings.HasPrefix(name, nsPrefix+tb.pid+"-") }); len(left) > 0 {
		tb.t.Errorf("teardown left namespaces behind: %v", left)
	}
	if _, err := os.Stat("/sys/class/net/" + tb.rootLink); err == nil {
		tb.t.Errorf("teardown left link %s behind", tb.rootLink)
	}
}

// removeLeftovers deletes namespaces and links of earlier runs whose test
// process is gone (a crash, a kill -9, a timeout), including any server
// still running inside them.
func removeLeftovers(t *testing.T) {
	stale := func(pid string) bool {
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 {
			return false
		}
		return n == os.Getpid() || errors.Is(syscall.Kill(n, 0), syscall.ESRCH)
	}
	removeNamespaces(t, func(name string) bool {
		rest, ok := strings.CutPrefix(name, nsPrefix)
		pid, _, ok2 := strings.Cut(rest, "-")
		return ok && ok2 && stale(pid)
	})
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return
	}
	for _, e := range entries {
		if pid, ok := strings.CutPrefix(e.Name(), linkPrefix); ok && stale(pid) {
			t.Logf("removing leftover link %s", e.Name())
			_, _ = ip("link", "del", e.Name())
		}
	}
}

// listNamespaces lists the named network namespaces that match.
func listNamespaces(t *testing.T, match func(string) bool) []string {
	out, err := ip("netns", "list")
	if err != nil {
		t.Logf("%v", err)
		return nil
	}
	var names []string
	for line := range strings.Lines(out) {
		// "NAME" or "NAME (id: N)"
		if f := strings.Fields(line); len(f) > 0 && match(f[0]) {
			names = append(names, f[0])
		}
	}
	return names
}

// removeNamespaces kills whatever runs in the matching namespaces and
// deletes them.
func removeNamespaces(t *testing.T, match func(string) bool) {
	for _, ns := range listNamespaces(t, match) {
		if out, err := ip("netns", "pids", ns); err == nil {
			for _, f := range strings.Fields(out) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != os.Getpid() {
					t.Logf("killing process %d left in namespace %s", pid, ns)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if _, err := ip("netns", "del", ns); err != nil {
			t.Logf("%v", err)
		}
	}
}

// pickSubnet picks a random 10.201.X.0/24 that no address or route of the
// root namespace uses.
func pickSubnet() (string, error) {
	addrs, err1 := ip("-4", "-o", "addr", "show")
	routes, err2 := ip("-4", "route", "show", "table", "all")
	if err := errors.Join(err1, err2); err != nil {
		return "", err
	}
	used := addrs + routes
	for range 100 {
		s := fmt.Sprintf("10.201.%d.", 1+rand.IntN(254))
		if !strings.Contains(used, s) {
			return s, nil
		}
	}
	return "", errors.New("no free 10.201.X.0/24 subnet")
}
