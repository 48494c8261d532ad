package wire

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkRoundTrip measures a small call (a 64-byte request, an 8-byte
// answer, no bulk data) through Endpoint and Server, AEAD on, against the
// floor: a bare TCP ping-pong of 64 bytes on loopback between two
// goroutines, measured in the same run in alternating blocks of calls (the
// machine is shared: what matters is the ratio, reported as x-tcp). With
// par > 1, that many goroutines call at once on one endpoint, against as
// many ping-pong connections.
func BenchmarkRoundTrip(b *testing.B) {
	for _, par := range []int{1, 4} {
		b.Run(fmt.Sprintf("par%d", par), func(b *testing.B) {
			s := startServer(b, handlerFunc(noteHandler), ServerOptions{})
			e := NewEndpoint("bench", s.Addr, testSecret, EndpointOptions{})
			defer e.Close()
			ctx := context.Background()
			req := noteRequest{Text: strings.Repeat("x", 48), N: 1}
			wireCall := func() error {
				_, _, err := Call(ctx, e, opNote, req, nil, nil)
				return err
			}
			pings := make([]func() error, par)
			for g := range pings {
				pings[g] = pingPong(b)
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

// pingPong starts a loopback echo of 64-byte messages and returns one
// round trip on it.
func pingPong(b *testing.B) func() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
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
	nc, err := net.Dial("tcp", ln.Addr().String())
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
