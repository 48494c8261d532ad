// Command soak checks that a misbehaving client cannot starve pario's
// servers. It starts a cluster of server processes on loopback and runs 16
// honest clients doing mixed operations (create, write, sync, read, stat,
// remove) in alternating phases: alone, then next to a misbehaving client
// that, from another loopback address, keeps half-open connections open,
// sends garbage, stalls in the middle of 64 MiB frames (with the secret)
// and pipelines 64 MiB reads it never reads. It prints the honest clients'
// throughput in both phases (medians of the rounds) and their ratio, and
// each server's peak resident memory against its memory budget. It exits
// non-zero if the ratio is under -target, an honest operation failed, or a
// server went over its budget.
//
//	go build -o pario ./cmd/pario
//	go run ./tools/soak -pario ./pario -rounds 3 -phase 10s
//
// scripts/soak.sh builds everything and runs it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/benchutil"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/wire"
)

type config struct {
	pario    string
	dir      string
	clients  int
	servers  int
	rounds   int
	phase    time.Duration
	fileSize int
	target   float64
	budget   int64
}

func main() {
	log.SetFlags(0)
	var c config
	flag.StringVar(&c.pario, "pario", "", "path to the pario binary (required)")
	flag.StringVar(&c.dir, "dir", "", "directory for the cluster (default: a new temporary directory)")
	flag.IntVar(&c.clients, "clients", 16, "honest clients")
	flag.IntVar(&c.servers, "servers", 4, "I/O servers")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds of (alone, attacked) phases; medians are reported")
	flag.DurationVar(&c.phase, "phase", 10*time.Second, "length of one phase")
	flag.IntVar(&c.fileSize, "file-size", 4<<20, "bytes each honest operation writes and reads back")
	flag.Float64Var(&c.target, "target", 0.8, "lowest accepted ratio of attacked to alone throughput")
	flag.Parse()
	c.budget = wire.DefaultMemoryBudget
	if err := run(c); err != nil {
		log.Fatalf("soak: %v", err)
	}
}

func run(c config) error {
	if c.pario == "" {
		return errors.New("-pario is required")
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "pario-soak-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.dir = d
	}
	ctx := context.Background()
	logFile, err := os.Create(filepath.Join(c.dir, "servers.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	procs, err := cluster.SpawnProcesses(ctx, cluster.ProcessConfig{Binary: c.pario, Dir: filepath.Join(c.dir, "cluster"), DataServers: c.servers, Output: logFile})
	if err != nil {
		return err
	}
	defer procs.Close()

	clients := make([]*client.Client, c.clients)
	for i := range clients {
		if clients[i], err = procs.Client(ctx); err != nil {
			return err
		}
		defer clients[i].Close()
	}
	if err := clients[0].MkdirAll(ctx, "/soak", 0o755); err != nil {
		return err
	}
	fmt.Printf("soak: metadata server + %d I/O servers (processes, loopback), %d honest clients, %d rounds of %v alone and %v attacked\n",
		c.servers, c.clients, c.rounds, c.phase, c.phase)

	// The attacker holds the secret: it makes one sparse file whose
	// datafile on every I/O server is 64 MiB, for the reads it never collects.
	sparse, err := sparseFile(ctx, clients[0], int64(c.servers)*wire.MaxDataLen)
	if err != nil {
		return err
	}
	var alone, attacked, ratios []float64
	var honestErrs atomic.Int64
	var stats attackStats
	for r := range c.rounds {
		a := honest(c, clients, r*2, &honestErrs)
		actx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { attack(actx, procs, sparse, &stats) })
		time.Sleep(500 * time.Millisecond) // let the attack take hold
		b := honest(c, clients, r*2+1, &honestErrs)
		stop()
		wg.Wait()
		fmt.Printf("round %d: alone %7.1f MiB/s   attacked %7.1f MiB/s   ratio %.2f\n", r+1, a, b, b/a)
		alone, attacked, ratios = append(alone, a), append(attacked, b), append(ratios, b/a)
	}
	// The check uses the median of each round's ratio: the two phases of
	// a round are adjacent in time, so the load other tenants put on a
	// shared machine mostly cancels out.
	ma, mb := benchutil.Median(alone), benchutil.Median(attacked)
	ratio := benchutil.Median(ratios)
	fmt.Printf("median:  alone %7.1f MiB/s   attacked %7.1f MiB/s   ratio of medians %.2f\n", ma, mb, mb/ma)
	fmt.Printf("median of the rounds' ratios: %.2f (target >= %.2f)\n", ratio, c.target)
	fmt.Printf("honest operations failed: %d\n", honestErrs.Load())
	fmt.Printf("misbehaving client: %d half-open connections, %d garbage connections, %d stalled 64 MiB frames, %d unread 64 MiB reads\n",
		stats.halfOpen.Load(), stats.garbage.Load(), stats.stalled.Load(), stats.unread.Load())
	over := false
	names := []string{"meta"}
	for i := range c.servers {
		names = append(names, fmt.Sprintf("data%d", i))
	}
	for _, name := range names {
		peak := peakRSS(procs.PID(name))
		mark := "under"
		if peak > c.budget {
			mark, over = "OVER", true
		}
		fmt.Printf("%-6s peak RSS %4d MiB, memory budget %d MiB: %s\n", name, peak>>20, c.budget>>20, mark)
	}
	logText, _ := os.ReadFile(logFile.Name())
	fmt.Printf("server log: %d warning lines (rate-limited), %d lines in all\n",
		bytes.Count(logText, []byte("level=WARN")), bytes.Count(logText, []byte("\n")))
	switch {
	case honestErrs.Load() > 0:
		return fmt.Errorf("%d honest operations failed", honestErrs.Load())
	case ratio < c.target:
		return fmt.Errorf("attacked throughput is %.2f of alone, under the %.2f target", ratio, c.target)
	case over:
		return errors.New("a server went over its memory budget")
	}
	return nil
}

// honest runs every client's mixed workload for one phase and returns the
// bytes written and read per second, in MiB/s.
func honest(c config, clients []*client.Client, phase int, errs *atomic.Int64) float64 {
	end := time.Now().Add(c.phase)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var moved atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i, cl := range clients {
		wg.Go(func() {
			wbuf := make([]byte, c.fileSize)
			rand.Read(wbuf)
			rbuf := make([]byte, c.fileSize)
			for k := 0; ctx.Err() == nil; k++ {
				n, err := honestOp(ctx, cl, fmt.Sprintf("/soak/p%d-c%d-%d", phase, i, k), k, wbuf, rbuf)
				moved.Add(n)
				// An operation cut by the end of the phase is not a failure
				// (its socket deadline may fire just before ctx reports it).
				if err != nil && ctx.Err() == nil && time.Until(end) > 100*time.Millisecond {
					errs.Add(1)
					log.Printf("honest client %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	return float64(moved.Load()) / (1 << 20) / time.Since(start).Seconds()
}

// honestOp creates a file, writes it, syncs every fourth, reads it back and
// checks it, stats and removes it. It returns the bytes moved.
func honestOp(ctx context.Context, cl *client.Client, path string, k int, wbuf, rbuf []byte) (int64, error) {
	f, err := cl.Create(ctx, path, client.CreateOptions{Mode: client.DefaultFileMode})
	if err != nil {
		return 0, err
	}
	defer cl.Remove(context.WithoutCancel(ctx), path)
	if _, err := f.WriteAtContext(ctx, wbuf, 0); err != nil {
		return 0, err
	}
	if k%4 == 0 {
		if err := f.SyncContext(ctx); err != nil {
			return int64(len(wbuf)), err
		}
	}
	if _, err := f.ReadAtContext(ctx, rbuf, 0); err != nil {
		return int64(len(wbuf)), err
	}
	if !bytes.Equal(wbuf, rbuf) {
		return int64(2 * len(wbuf)), fmt.Errorf("%s reads back different bytes", path)
	}
	if _, err := cl.Stat(ctx, path); err != nil {
		return int64(2 * len(wbuf)), err
	}
	return int64(2 * len(wbuf)), nil
}

type attackStats struct {
	halfOpen, garbage, stalled, unread atomic.Int64
}

// attacker is the misbehaving client's address: another loopback host, so
// that the per-host caps tell it apart from the honest clients.
var attacker = &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 2 * time.Second}

// attack misbehaves against every server until ctx ends.
func attack(ctx context.Context, procs *cluster.Processes, sparse uint64, st *attackStats) {
	addrs := []string{procs.File.Meta}
	for _, d := range procs.File.Data {
		addrs = append(addrs, d.Addr)
	}
	var wg sync.WaitGroup
	for si, addr := range addrs {
		for range 64 {
			wg.Go(func() { halfOpen(ctx, addr, st) })
		}
		wg.Go(func() { garbage(ctx, addr, st) })
		for range 2 {
			wg.Go(func() { stall(ctx, addr, procs.Secret, st) })
		}
		if si > 0 {
			wg.Go(func() { unreadReads(ctx, addr, procs.Secret, sparse, st) })
		}
	}
	wg.Wait()
}

// hold keeps nc open until the server closes it or ctx ends.
func hold(ctx context.Context, nc net.Conn) {
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	var b [4096]byte
	for {
		if _, err := nc.Read(b[:]); err != nil {
			nc.Close()
			return
		}
	}
}

// halfOpen connects and never authenticates, again whenever dropped.
func halfOpen(ctx context.Context, addr string, st *attackStats) {
	for ctx.Err() == nil {
		nc, err := attacker.DialContext(ctx, "tcp", addr)
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		st.halfOpen.Add(1)
		hold(ctx, nc)
	}
}

// garbage connects and sends random bytes, 10 connections a second per
// server: the attacker shares the honest clients' CPU here, which a real
// one on another host would not.
func garbage(ctx context.Context, addr string, st *attackStats) {
	junk := make([]byte, 4096)
	for ctx.Err() == nil {
		rand.Read(junk)
		if nc, err := attacker.DialContext(ctx, "tcp", addr); err == nil {
			st.garbage.Add(1)
			nc.SetDeadline(time.Now().Add(time.Second))
			nc.Write(junk)
			nc.Close()
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// stall authenticates, announces a 64 MiB write, sends 1 MiB of it and
// stops.
func stall(ctx context.Context, addr string, secret []byte, st *attackStats) {
	for ctx.Err() == nil {
		nc, err := rawConn(ctx, addr, secret)
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		var a wire.Enc
		data.WriteRequest{ID: 1<<62 + 1}.Encode(&a)
		h := wire.Header{Op: data.OpWrite.Code, ReqID: 1, ArgLen: uint32(len(a.Bytes())), DataLen: wire.MaxDataLen}
		var hb [wire.HeaderSize]byte
		h.Encode(hb[:])
		nc.Write(append(hb[:], a.Bytes()...))
		nc.Write(make([]byte, 1<<20))
		st.stalled.Add(1)
		hold(ctx, nc)
	}
}

// sparseFile creates /soak-sparse of the given size (all holes) and
// returns its ID, which names its datafile on every I/O server.
func sparseFile(ctx context.Context, cl *client.Client, size int64) (uint64, error) {
	f, err := cl.Create(ctx, "/soak-sparse", client.CreateOptions{Mode: client.DefaultFileMode})
	if err != nil {
		return 0, fmt.Errorf("misbehaving client: sparse file: %w", err)
	}
	defer f.Close()
	if err := f.TruncateContext(ctx, size); err != nil {
		return 0, fmt.Errorf("misbehaving client: sparse file: %w", err)
	}
	return uint64(f.Attr().ID), nil
}

// unreadReads pipelines 32 reads of all of datafile id (64 MiB of holes)
// and never reads the answers.
func unreadReads(ctx context.Context, addr string, secret []byte, id uint64, st *attackStats) {
	nc, err := rawConn(ctx, addr, secret)
	if err != nil {
		log.Printf("misbehaving client: %s: %v", addr, err)
		return
	}
	defer nc.Close()
	var frames []byte
	for i := range 32 {
		var a wire.Enc
		a.U64(id)
		a.I64(0)
		a.I64(wire.MaxDataLen)
		frames = wire.AppendFrame(frames, data.OpRead.Code, 0, uint64(i+1), a.Bytes(), nil)
	}
	nc.Write(frames)
	st.unread.Add(32)
	// Never read the answers; the server drops the connection once one
	// has waited past its frame deadline (94 s, longer than a phase).
	<-ctx.Done()
}

// rawConn connects from the attacker's address and authenticates.
func rawConn(ctx context.Context, addr string, secret []byte) (net.Conn, error) {
	nc, err := attacker.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	raw, err := wire.AuthenticateRaw(ctx, nc, secret)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return raw, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// peakRSS is a process's peak resident memory (VmHWM), 0 if unknown.
func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
