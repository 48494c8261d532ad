package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkRoundTrip measures a small call (a 64-byte request, an 8-byte
// answer, no bulk data) through Endpoint and Server, AEAD on, against the
// floor: a bare TCP ping-pong of 64 bytes on loopback. Both servers run in
// a child process (this test binary again, see TestMain), as a
// client and its servers do: a wake-up across processes costs more than
// one within a process on some VMs. The two are measured in the same run,
// in alternating blocks of calls (the machine is shared: what matters is
// the ratio, reported as x-tcp). With par > 1, that many goroutines call
// at once on one endpoint, against as many ping-pong connections; fan4
// starts 4 goroutines for each operation, each calling an endpoint of its
// own (as a stat asks every I/O server of a file), against 4 pings at once.
func BenchmarkRoundTrip(b *testing.B) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), rttServerEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var wireAddr, tcpAddr string
	if _, err := fmt.Fscan(out, &wireAddr, &tcpAddr); err != nil {
		b.Fatalf("round-trip server: %v", err)
	}
	for _, mode := range []struct {
		name string
		par  int
		fan  bool
	}{{"par1", 1, false}, {"par4", 4, false}, {"fan4", 4, true}} {
		b.Run(mode.name, func(b *testing.B) {
			par := mode.par
			eps := make([]*Endpoint, par)
			for i := range eps {
				eps[i] = NewEndpoint("bench", wireAddr, testSecret, EndpointOptions{})
				defer eps[i].Close()
			}
			ctx := context.Background()
			req := noteRequest{Text: strings.Repeat("x", 48), N: 1}
			wireCall := func(g int) error {
				ep := eps[0]
				if mode.fan {
					ep = eps[g]
				}
				_, _, err := Call(ctx, ep, opNote, req, nil, nil)
				return err
			}
			pings := make([]func() error, par)
			for g := range pings {
				pings[g] = pingPong(b, tcpAddr)
			}
			// Warm up: dial every connection of the endpoints.
			for range 8 {
				for g := range par {
					if err := wireCall(g); err != nil {
						b.Fatal(err)
					}
				}
			}
			// run does n operations: with fan, each is par calls at once,
			// one per goroutine started for it, as a stat asks every I/O
			// server of a file; else par goroutines share the n calls.
			run := func(n int, op func(g int) error) error {
				if !mode.fan {
					return spread(par, n, op)
				}
				for range n {
					if err := fanOut(par, op); err != nil {
						return err
					}
				}
				return nil
			}
			const block = 64
			var tcp, wire time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += block {
				n := min(block, b.N-done)
				start := time.Now()
				if err := run(n, wireCall); err != nil {
					b.Fatal(err)
				}
				wire += time.Since(start)
				b.StopTimer()
				start = time.Now()
				if err := run(n, func(g int) error { return pings[g]() }); err != nil {
					b.Fatal(err)
				}
				tcp += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(tcp.Nanoseconds())/float64(b.N), "tcp-ns/op")
			b.ReportMetric(float64(wire)/float64(tcp), "x-tcp")
		})
	}
}

// fanOut runs op once in each of n new goroutines and waits for them.
func fanOut(n int, op func(g int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Go(func() { errs[g] = op(g) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// rttServerEnv makes the test binary serve (TestMain).
const rttServerEnv = "PARIO_WIRE_RTT_SERVER"

// TestMain runs this test binary as BenchmarkRoundTrip's child process
// when rttServerEnv is set (serveRoundTrip never returns), and the tests
// otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(rttServerEnv) != "" {
		serveRoundTrip()
	}
	os.Exit(m.Run())
}

// serveRoundTrip serves the test ops and a 64-byte echo, prints both
// addresses and serves until it is killed.
func serveRoundTrip() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "round-trip server:", err)
		os.Exit(2)
	}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	srv := NewServer(handlerFunc(noteHandler), ServerOptions{Name: "test server", Secret: testSecret, Logger: quietLogger()})
	go func() { fail(srv.Serve(context.Background(), sl)) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	fmt.Println(sl.Addr(), ln.Addr())
	for {
		nc, err := ln.Accept()
		if err != nil {
			fail(err)
		}
		go func() {
			defer nc.Close()
			var m [64]byte
			for {
				if _, err := io.ReadFull(nc, m[:]); err != nil {
					return
				}
				if _, err := nc.Write(m[:]); err != nil {
					return
				}
			}
		}()
	}
}

// spread runs n calls of op over par goroutines (op gets the goroutine's
// number), inline when par is 1.
func spread(par, n int, op func(g int) error) error {
	if par == 1 {
		for range n {
			if err := op(0); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, par)
	for g := range par {
		wg.Go(func() {
			for i := g; i < n; i += par {
				if errs[g] = op(g); errs[g] != nil {
					return
				}
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

// pingPong connects to a 64-byte echo at addr and returns one round trip
// on it.
func pingPong(b *testing.B, addr string) func() error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	var m [64]byte
	return func() error {
		if _, err := nc.Write(m[:]); err != nil {
			return err
		}
		_, err := io.ReadFull(nc, m[:])
		return err
	}
}
