package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/wire"
)

// ProcessConfig describes a cluster whose servers run as separate `pario
// meta` and `pario data` processes, as on a real machine room, for tests
// and benchmarks.
type ProcessConfig struct {
	// Binary is the pario executable. Required.
	Binary string
	// Dir holds the cluster file, the secret and each server's directory.
	Dir string
	// DataServers is the number of I/O servers (default 4).
	DataServers int
	// MetaHost and DataHosts are the addresses servers listen on (default
	// 127.0.0.1 for all); DataHosts[i] is used for I/O server i.
	MetaHost  string
	DataHosts []string
	// Wrap, if set, returns a command prefix for a server, e.g.
	// {"ip", "netns", "exec", "host1"} to run it in a network namespace.
	// name is "meta" or "data0", "data1", ...
	Wrap func(name string) []string
	// MetaArgs are extra arguments for `pario meta` (e.g. --stuffing);
	// DataArgs for every `pario data` (e.g. --memory-budget 64m).
	MetaArgs []string
	DataArgs []string
	// Output receives the servers' stderr (default: discarded).
	Output io.Writer
	// Protection is the wire protection written into the cluster file.
	Protection wire.Protection
	// RootSquash leaves root squashing on (the cluster file default);
	// test clusters turn it off unless asked, as their tests run as root.
	RootSquash bool
}

// Processes is a running multi-process cluster.
type Processes struct {
	cfg         ProcessConfig
	File        *File
	ClusterFile string
	Secret      []byte
	procs       map[string]*exec.Cmd
}

// SpawnProcesses writes a cluster file with free ports and starts one
// metadata and cfg.DataServers I/O server processes, returning when every
// server answers an authenticated handshake.
func SpawnProcesses(ctx context.Context, cfg ProcessConfig) (_ *Processes, err error) {
	if cfg.Binary == "" || cfg.Dir == "" {
		return nil, errors.New("cluster: SpawnProcesses needs Binary and Dir")
	}
	if cfg.DataServers <= 0 {
		cfg.DataServers = 4
	}
	if cfg.MetaHost == "" {
		cfg.MetaHost = "127.0.0.1"
	}
	for len(cfg.DataHosts) < cfg.DataServers {
		cfg.DataHosts = append(cfg.DataHosts, "127.0.0.1")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	secret, err := EnsureSecret(filepath.Join(cfg.Dir, "secret"))
	if err != nil {
		return nil, err
	}
	f := &File{SecretFile: "secret", Dir: cfg.Dir, Protection: cfg.Protection, NoRootSquash: !cfg.RootSquash}
	ports, err := FreePorts(cfg.DataServers + 1)
	if err != nil {
		return nil, err
	}
	f.Meta = net.JoinHostPort(cfg.MetaHost, strconv.Itoa(ports[0]))
	for i := 0; i < cfg.DataServers; i++ {
		f.Data = append(f.Data, ServerEntry{Name: fmt.Sprintf("data%d", i), Addr: net.JoinHostPort(cfg.DataHosts[i], strconv.Itoa(ports[i+1]))})
	}
	p := &Processes{cfg: cfg, File: f, ClusterFile: filepath.Join(cfg.Dir, "cluster"), Secret: secret, procs: map[string]*exec.Cmd{}}
	if err := f.WriteFile(p.ClusterFile); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for i := range f.Data {
		if err := p.StartData(ctx, i); err != nil {
			return nil, err
		}
	}
	if err := p.StartMeta(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// FreePorts returns n TCP ports on loopback that are free now, for
// servers started as processes to bind. They are drawn below the kernel's ephemeral range
// (and below 20000, where rank derives its rendezvous ports): a port the
// kernel handed out for listen(:0) and took back goes to the next
// connection anyone opens, a client's included, before the server
// binds it. Below the range only an explicit bind can take it.
func FreePorts(n int) ([]int, error) {
	top := min(ephemeralLow(), 20000)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			return nil, fmt.Errorf("no %d free ports below %d on loopback in %d tries", n, top, tries)
		}
		port := 10000 + rand.IntN(top-10000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		lns = append(lns, ln)
		ports = append(ports, port)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (Linux's default where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	v, err := strconv.Atoi(f[0])
	if err != nil || v <= 10000 {
		return 32768
	}
	return v
}

func (p *Processes) start(ctx context.Context, name, addr string, args ...string) error {
	argv := append([]string{p.cfg.Binary}, args...)
	argv = append(argv, "--cluster", p.ClusterFile)
	if p.cfg.Wrap != nil {
		argv = append(p.cfg.Wrap(name), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = p.cfg.Output
	cmd.Stdout = p.cfg.Output
	// Its own process group, so a test's Ctrl-C does not reach it first and
	// Close can stop wrappers (ip netns exec) and server together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: start %s: %w", name, err)
	}
	p.procs[name] = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Poll until it completes a handshake, or dies.
	deadline := time.Now().Add(15 * time.Second)
	for {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := wire.DialProtected(dctx, addr, name, p.Secret, p.File.Protection)
		cancel()
		if err == nil {
			c.Close()
			go func() { <-exited }()
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("cluster: %s exited during startup: %v", name, werr)
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: %s did not come up on %s: %w", name, addr, err)
		}
	}
}

// StartData starts (or restarts) I/O server i.
func (p *Processes) StartData(ctx context.Context, i int) error {
	e := p.File.Data[i]
	args := append([]string{"data", "--name", e.Name, "--dir", p.DataDir(i), "--log-level", "warn"}, p.cfg.DataArgs...)
	return p.start(ctx, e.Name, e.Addr, args...)
}

// StartMeta starts (or restarts) the metadata server.
func (p *Processes) StartMeta(ctx context.Context) error {
	args := append([]string{"meta", "--dir", filepath.Join(p.cfg.Dir, "meta"), "--log-level", "warn"}, p.cfg.MetaArgs...)
	return p.start(ctx, "meta", p.File.Meta, args...)
}

// DataDir is I/O server i's data directory.
func (p *Processes) DataDir(i int) string { return filepath.Join(p.cfg.Dir, p.File.Data[i].Name) }

// PID returns the process id of a server ("meta", "data0", ...), 0 if not running.
func (p *Processes) PID(name string) int {
	if c := p.procs[name]; c != nil && c.Process != nil {
		return c.Process.Pid
	}
	return 0
}

// Kill stops a server the hard way (SIGKILL), as a crash would.
func (p *Processes) Kill(name string) error { return p.signal(name, syscall.SIGKILL) }

// Stop stops a server cleanly (SIGTERM) and waits for it to exit.
func (p *Processes) Stop(name string) error { return p.signal(name, syscall.SIGTERM) }

func (p *Processes) signal(name string, sig syscall.Signal) error {
	c := p.procs[name]
	if c == nil || c.Process == nil {
		return fmt.Errorf("cluster: no process %s", name)
	}
	_ = syscall.Kill(-c.Process.Pid, sig)
	// Wait for the whole group to go, so the port is free for a restart.
	for i := 0; i < 200; i++ {
		if syscall.Kill(-c.Process.Pid, 0) != nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	return nil
}

// Client connects a client to the cluster.
func (p *Processes) Client(ctx context.Context, opts ...func(*client.Options)) (*client.Client, error) {
	o := client.Options{Meta: p.File.Meta, Secret: p.Secret, Endpoint: wire.EndpointOptions{Protection: p.File.Protection}, Links: p.File.Emulation.Links(-1)}
	for _, fn := range opts {
		fn(&o)
	}
	return client.Dial(ctx, o)
}

// Close stops every server cleanly.
func (p *Processes) Close() error {
	for name := range p.procs {
		_ = p.Stop(name)
	}
	return nil
}
