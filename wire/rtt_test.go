package wire

import (
	"context"
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
// a child process (this test binary again, see TestRoundTripServer), as a
// client and its servers do: a wake-up across processes costs more than
// one within a process on some VMs. The two are measured in the same run,
// in alternating blocks of calls (the machine is shared: what matters is
// the ratio, reported as x-tcp). With par > 1, that many goroutines call
// at once on one endpoint, against as many ping-pong connections.
func BenchmarkRoundTrip(b *testing.B) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRoundTripServer$")
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
	for _, par := range []int{1, 4} {
		b.Run(fmt.Sprintf("par%d", par), func(b *testing.B) {
			e := NewEndpoint("bench", wireAddr, testSecret, EndpointOptions{})
			defer e.Close()
			ctx := context.Background()
			req := noteRequest{Text: strings.Repeat("x", 48), N: 1}
			wireCall := func() error {
				_, _, err := Call(ctx, e, opNote, req, nil, nil)
				return err
			}
			pings := make([]func() error, par)
			for g := range pings {
				pings[g] = pingPong(b, tcpAddr)
			}
			// Warm up: dial every connection of the endpoint.
			for range 8 {
				if err := wireCall(); err != nil {
					b.Fatal(err)
				}
			}
			const block = 64
			var tcp, wire time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += block {
				n := min(block, b.N-done)
				start := time.Now()
				if err := spread(par, n, func(g int) error { return wireCall() }); err != nil {
					b.Fatal(err)
				}
				wire += time.Since(start)
				b.StopTimer()
				start = time.Now()
				if err := spread(par, n, func(g int) error { return pings[g]() }); err != nil {
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

// rttServerEnv makes TestRoundTripServer serve.
const rttServerEnv = "PARIO_WIRE_RTT_SERVER"

// TestRoundTripServer is BenchmarkRoundTrip's child process: it serves the
// test ops and a 64-byte echo, prints both addresses and serves until it
// is killed. Without the environment variable it does nothing.
func TestRoundTripServer(t *testing.T) {
	if os.Getenv(rttServerEnv) == "" {
		t.Skip("the child process of BenchmarkRoundTrip")
	}
	s := startServer(t, handlerFunc(noteHandler), ServerOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(s.Addr, ln.Addr())
	for {
		nc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
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
