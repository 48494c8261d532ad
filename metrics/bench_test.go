package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pario/pario/metrics"
	"github.com/pario/pario/metrics/metricstest"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/wire"
)

// The serving path must not allocate for metrics: every series of an op
// is looked up when the server is observed.
func TestObserverDoesNotAllocate(t *testing.T) {
	reg := metrics.New()
	srv := reg.ObserveServer("data", "data0", data.Ops)
	cl := reg.ObserveClient("data", "data0", data.Ops)
	mnt := reg.ObserveMount([]string{"read", "write"}, func() metrics.MountStats { return metrics.MountStats{} })
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"server request", func() {
			srv.RequestStarted(data.OpWrite.Code)
			srv.RequestDone(data.OpWrite.Code, 1<<20, 0, time.Millisecond, nil)
		}},
		{"unknown op", func() {
			srv.RequestStarted(200)
			srv.RequestDone(200, 10, 0, time.Millisecond, nil)
		}},
		{"connection", func() { srv.ConnAccepted(); srv.ConnClosed() }},
		{"frame error", func() { srv.Error(wire.ErrKindCRC) }},
		{"client call", func() { cl.CallDone(data.OpRead.Code, 40, 1<<20, time.Millisecond, nil) }},
		{"fuse op", func() { mnt.FuseOp("write", time.Millisecond, 0) }},
		{"fuse op failed", func() { mnt.FuseOp("read", time.Millisecond, syscall.EIO) }},
	} {
		if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tc.name, n)
		}
	}
}

// A handler's errno becomes the error kind, whatever the error's text.
func TestRequestErrorKinds(t *testing.T) {
	reg := metrics.New()
	srv := reg.ObserveServer("meta", "meta", nil)
	cl := reg.ObserveClient("meta", "meta", nil)
	srv.RequestStarted(1)
	srv.RequestDone(1, 0, 0, time.Millisecond, errors.Join(errors.New("lookup /x"), syscall.ENOENT))
	srv.RequestStarted(1)
	srv.RequestDone(1, 0, 0, time.Millisecond, errors.New("no errno"))
	cl.CallDone(1, 0, 0, time.Millisecond, &wire.RemoteError{Server: "meta", Errno: syscall.EEXIST})
	cl.CallDone(1, 0, 0, time.Millisecond, &wire.DialError{Server: "meta", Err: syscall.ECONNREFUSED})
	cl.CallDone(1, 0, 0, time.Millisecond, &wire.ConnError{Server: "meta", Err: context.DeadlineExceeded})
	cl.CallDone(1, 0, 0, time.Millisecond, &wire.ConnError{Server: "meta", Err: syscall.ECONNRESET})
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	for _, tc := range []struct {
		name, kind string
	}{
		{"pario_errors_total", "ENOENT"},
		{"pario_errors_total", "EIO"},
		{"pario_client_errors_total", "EEXIST"},
		{"pario_client_errors_total", "dial"},
		{"pario_client_errors_total", "timeout"},
		{"pario_client_errors_total", "conn"},
	} {
		if v, _ := metricstest.Sum(byName, tc.name, labels("kind", tc.kind)); v != 1 {
			t.Errorf("%s{kind=%q} = %v, want 1", tc.name, tc.kind, v)
		}
	}
	if v, _ := metricstest.Sum(byName, "pario_requests_total", labels("op", "unknown", "result", "error")); v != 2 {
		t.Errorf("failed requests of an op outside the table: %v, want 2", v)
	}
}

// BenchmarkCall compares a small request's round trip through a server
// and an endpoint without observers and with the metrics observers.
func BenchmarkCall(b *testing.B) {
	for _, observed := range []bool{false, true} {
		name := "nil"
		if observed {
			name = "metrics"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			secret := bytes.Repeat([]byte{7}, 32)
			opts := wire.ServerOptions{Name: "b", Secret: secret, Logger: slog.New(slog.DiscardHandler)}
			var eopts wire.EndpointOptions
			if observed {
				reg := metrics.New()
				opts.Observer = reg.ObserveServer("data", "b", data.Ops)
				eopts.Observer = reg.ObserveClient("data", "b", data.Ops)
			}
			srv := wire.NewServer(echo{}, opts)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(ctx, ln)
			defer srv.Close()
			ep := wire.NewEndpoint("b", ln.Addr().String(), secret, eopts)
			defer ep.Close()
			args := make([]byte, 32)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := ep.Call(ctx, data.OpSize.Code, true, args, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkServerObserver is the cost metrics add to one request on the
// server: its start and its end.
func BenchmarkServerObserver(b *testing.B) {
	o := metrics.New().ObserveServer("data", "data0", data.Ops)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.RequestStarted(data.OpWrite.Code)
			o.RequestDone(data.OpWrite.Code, 1<<20, 0, time.Millisecond, nil)
		}
	})
}
