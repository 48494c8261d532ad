package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/metrics"
	"github.com/pario/pario/metrics/metricstest"
	"github.com/pario/pario/wire"
)

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestClusterMetrics runs a cluster and a client observed by one
// registry, does a known number of creates, writes, reads and a failing
// stat, and checks that the scraped counters moved by exactly that much.
func TestClusterMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := metrics.New()
	ep, err := metrics.Listen("127.0.0.1:0", false, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	const servers = 4
	c, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), DataServers: servers, Observe: reg.ObserveServer})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := client.Dial(ctx, client.Options{Meta: c.Meta.Addr, Secret: c.Secret, Observe: reg.ObserveClient})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	before := Settled(t, ep.Addr)
	// 64 KiB strips (the default layout): a strip-aligned write or read
	// of one strip is exactly one request to one I/O server.
	const strip, writes = 64 << 10, 8
	f, err := cl.Create(ctx, "/f", client.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	buf := bytes.Repeat([]byte("pario"), strip/5+1)[:strip]
	for i := range writes {
		if _, err := f.WriteAtContext(ctx, buf, int64(i)*strip); err != nil {
			t.Fatal(err)
		}
	}
	for i := range writes {
		if _, err := f.ReadAtContext(ctx, buf, int64(i)*strip); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Stat(ctx, "/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat of a missing file: %v, want ErrNotExist", err)
	}
	after := Settled(t, ep.Addr)

	delta := func(name string, kv ...string) float64 {
		t.Helper()
		a, ok := metricstest.Sum(after, name, labels(kv...))
		if !ok {
			t.Fatalf("no series %s%v in /metrics", name, kv)
		}
		b, _ := metricstest.Sum(before, name, labels(kv...))
		return a - b
	}
	exact := []struct {
		name string
		kv   []string
		want float64
	}{
		{"pario_requests_total", []string{"service", "data", "op", "write", "result", "ok"}, writes},
		{"pario_requests_total", []string{"service", "data", "op", "read", "result", "ok"}, writes},
		{"pario_request_duration_seconds", []string{"service", "data", "op", "write"}, writes},
		{"pario_request_duration_seconds", []string{"service", "data", "op", "read"}, writes},
		{"pario_requests_total", []string{"service", "meta", "op", "create", "result", "ok"}, 1},
		// (No row for the I/O servers' creates: the metadata server makes
		// datafiles ahead in batches, its precreate pools, or one by one
		// when a pool is not ready yet, whichever the timing gives.)
		{"pario_client_requests_total", []string{"service", "data", "op", "write", "result", "ok"}, writes},
		{"pario_client_request_duration_seconds", []string{"service", "data", "op", "write"}, writes},
		{"pario_client_requests_total", []string{"service", "meta", "op", "create", "result", "ok"}, 1},
		{"pario_errors_total", []string{"service", "meta", "kind", "ENOENT"}, 1},
		{"pario_client_errors_total", []string{"service", "meta", "kind", "ENOENT"}, 1},
		{"pario_requests_in_flight", nil, 0},
	}
	for _, tc := range exact {
		if got := delta(tc.name, tc.kv...); got != tc.want {
			t.Errorf("%s%v moved by %v, want %v", tc.name, tc.kv, got, tc.want)
		}
	}
	atLeast := []struct {
		name string
		kv   []string
		want float64
	}{
		{"pario_request_bytes_total", []string{"service", "data", "op", "write", "direction", "in"}, writes * strip},
		{"pario_request_bytes_total", []string{"service", "data", "op", "read", "direction", "out"}, writes * strip},
		{"pario_client_request_bytes_total", []string{"service", "data", "op", "write", "direction", "out"}, writes * strip},
		{"pario_client_request_bytes_total", []string{"service", "data", "op", "read", "direction", "in"}, writes * strip},
	}
	for _, tc := range atLeast {
		if got := delta(tc.name, tc.kv...); got < tc.want {
			t.Errorf("%s%v moved by %v, want at least %v", tc.name, tc.kv, got, tc.want)
		}
	}
	// Writes spread over every server; each has its own series.
	for _, d := range c.Data {
		if got := delta("pario_requests_total", "server", d.Name, "op", "write"); got != writes/servers {
			t.Errorf("server %s served %v writes, want %d", d.Name, got, writes/servers)
		}
	}
	for _, s := range append([]string{"meta"}, "data0", "data1", "data2", "data3") {
		if v, ok := metricstest.Sum(after, "pario_memory_budget_bytes", labels("server", s)); !ok || v != wire.DefaultMemoryBudget {
			t.Errorf("pario_memory_budget_bytes{server=%q} = %v (present %v), want %d", s, v, ok, wire.DefaultMemoryBudget)
		}
		conns, _ := metricstest.Sum(after, "pario_connections", labels("server", s))
		if v, ok := metricstest.Sum(after, "pario_memory_budget_used_bytes", labels("server", s)); !ok || v != conns*float64(wire.ConnMemory()) {
			t.Errorf("pario_memory_budget_used_bytes{server=%q} = %v (present %v), want what its %v connections hold at rest", s, v, ok, conns)
		}
		if v, _ := metricstest.Sum(after, "pario_connections", labels("server", s)); v < 1 {
			t.Errorf("pario_connections{server=%q} = %v, want the client's (at least 1)", s, v)
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := after[name]; !ok {
			t.Errorf("no %s: runtime or process collector missing", name)
		}
	}

	resp, err := http.Get("http://" + ep.Addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET /debug/pprof/: %s, body without profiles:\n%.500s", resp.Status, body)
	}
	resp, err = http.Get("http://" + ep.Addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /debug/pprof/goroutine: %s", resp.Status)
	}

	// The metadata server's checkpoints (server/meta/durable.go): at
	// least the one at start, and none failed.
	m := Settled(t, ep.Addr)
	if syncs, ok := metricstest.Sum(m, "pario_meta_syncs_total", labels("server", "meta")); !ok || syncs < 1 {
		t.Errorf("pario_meta_syncs_total %v (present %v), want at least 1", syncs, ok)
	}
	if failed, ok := metricstest.Sum(m, "pario_meta_sync_failed", labels("server", "meta")); !ok || failed != 0 {
		t.Errorf("pario_meta_sync_failed %v (present %v), want 0", failed, ok)
	}
	if _, ok := metricstest.Sum(m, "pario_meta_unsynced_transactions", labels("server", "meta")); !ok {
		t.Error("pario_meta_unsynced_transactions missing")
	}
	// The I/O servers' unwritten datafiles (server/data/unwritten.go):
	// at least the metadata server's precreate pools, and no broken log.
	if n, ok := metricstest.Sum(m, "pario_data_unwritten_datafiles", labels("service", "data")); !ok || n < 1 {
		t.Errorf("pario_data_unwritten_datafiles %v (present %v), want the pools' at least", n, ok)
	}
	if b, ok := metricstest.Sum(m, "pario_data_unwritten_log_bytes", labels("service", "data")); !ok || b < 13 {
		t.Errorf("pario_data_unwritten_log_bytes %v (present %v), want a record at least", b, ok)
	}
	if broken, ok := metricstest.Sum(m, "pario_data_unwritten_log_broken", labels("service", "data")); !ok || broken != 0 {
		t.Errorf("pario_data_unwritten_log_broken %v (present %v), want 0", broken, ok)
	}

	// A remove: the metadata server's reaper removes the file's datafiles
	// after answering, and counts them.
	if err := cl.Remove(ctx, "/f"); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		m := Settled(t, ep.Addr)
		reaped, ok := metricstest.Sum(m, "pario_meta_reaped_datafiles_total", labels("server", "meta"))
		pending, ok2 := metricstest.Sum(m, "pario_meta_pending_removals", labels("server", "meta"))
		if ok && ok2 && reaped == servers && pending == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after a remove: pario_meta_reaped_datafiles_total %v (present %v), pario_meta_pending_removals %v (present %v); want %d and 0",
				reaped, ok, pending, ok2, servers)
		}
	}
}

// TestConnectionErrors checks the series of what happens before any
// handler runs: a client without the secret, a connection over the cap,
// and one closing in the middle of a frame header.
func TestConnectionErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := metrics.New()
	ep, err := metrics.Listen("127.0.0.1:0", false, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	secret := bytes.Repeat([]byte{7}, 32)
	srv := wire.NewServer(echo{}, wire.ServerOptions{
		Name: "t", Secret: secret, MaxConns: 1, MaxConnsPerPeer: 1, Logger: slog.New(slog.DiscardHandler),
		HandshakeTimeout: 200 * time.Millisecond,
		Observer:         reg.ObserveServer("data", "t", nil),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx, ln)
	defer srv.Close()
	addr := ln.Addr().String()

	// A wrong secret: refused at the handshake, counted as auth.
	bad := wire.NewEndpoint("t", addr, bytes.Repeat([]byte{8}, 32), wire.EndpointOptions{Retries: -1})
	if _, _, err := bad.Call(ctx, 1, true, nil, nil, nil); !errors.Is(err, wire.ErrAuth) {
		t.Fatalf("call with a wrong secret: %v, want ErrAuth", err)
	}
	bad.Close()
	waitFor(t, ep.Addr, "pario_errors_total", labels("kind", "auth"), 1)
	waitFor(t, ep.Addr, "pario_connections", labels("server", "t"), 0)

	// A peer that sends junk in place of its proof, and one that sends
	// nothing until the handshake deadline.
	junk, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	junk.Write(bytes.Repeat([]byte{0xff}, 64))
	waitFor(t, ep.Addr, "pario_errors_total", labels("kind", wire.ErrKindHandshake), 1)
	junk.Close()
	waitFor(t, ep.Addr, "pario_connections", labels("server", "t"), 0)
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ep.Addr, "pario_errors_total", labels("kind", wire.ErrKindTimeout), 1)
	silent.Close()
	waitFor(t, ep.Addr, "pario_connections", labels("server", "t"), 0)

	// One connection held: the next is over MaxConns.
	good := wire.NewEndpoint("t", addr, secret, wire.EndpointOptions{Conns: 1, Retries: -1})
	defer good.Close()
	if _, _, err := good.Call(ctx, 1, true, []byte("x"), nil, nil); err != nil {
		t.Fatal(err)
	}
	other := wire.NewEndpoint("t", addr, secret, wire.EndpointOptions{Conns: 1, Retries: -1})
	if _, _, err := other.Call(ctx, 1, true, nil, nil, nil); err == nil {
		t.Fatal("a second connection over MaxConns 1 was served")
	}
	other.Close()
	waitFor(t, ep.Addr, "pario_connections_refused_total", labels("reason", wire.RefusedMaxConns), 1)
	waitFor(t, ep.Addr, "pario_connections", labels("server", "t"), 1)
	// An op outside the (empty) table is labelled "unknown", not by code.
	waitFor(t, ep.Addr, "pario_requests_total", labels("op", "unknown", "result", "ok"), 1)
}

// Settled scrapes once no request is in flight and no memory is held but
// what the open connections hold: a server counts a request, and gives its
// memory back, just after writing the answer, so the client may be ahead
// of the counters for a moment.
func Settled(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	for range 200 {
		fams := metricstest.Scrape(t, addr)
		inFlight, _ := metricstest.Sum(fams, "pario_requests_in_flight", nil)
		used, _ := metricstest.Sum(fams, "pario_memory_budget_used_bytes", nil)
		conns, _ := metricstest.Sum(fams, "pario_connections", nil)
		if inFlight == 0 && used == conns*float64(wire.ConnMemory()) {
			// A scrape is not a snapshot (collectors run one after
			// another), so the counters are read by the next one, if
			// nothing started meanwhile (the metadata server fills its
			// precreate pools in the background).
			next := metricstest.Scrape(t, addr)
			if n, _ := metricstest.Sum(next, "pario_requests_in_flight", nil); n == 0 {
				return next
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("requests still in flight, or memory held, after 2 s at rest")
	return nil
}

// waitFor scrapes until the series reach want: the server counts a
// connection's end after the client has seen it.
func waitFor(t *testing.T, addr, name string, kv map[string]string, want float64) {
	t.Helper()
	var got float64
	for range 200 {
		got, _ = metricstest.Sum(metricstest.Scrape(t, addr), name, kv)
		if got == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s%v = %v, want %v", name, kv, got, want)
}

type echo struct{}

func (echo) ServeWire(_ context.Context, req *wire.Request) (wire.Response, error) {
	return wire.Response{Args: append([]byte(nil), req.Args...)}, nil
}

func TestListenRefusesRemoteAddresses(t *testing.T) {
	reg := metrics.New()
	for _, tc := range []struct {
		addr        string
		allowRemote bool
		wantRemote  bool
	}{
		{"127.0.0.1:0", false, false},
		{"localhost:0", false, false},
		{"0.0.0.0:0", false, true},
		{":0", false, true},
		{"192.0.2.1:0", false, true},
		{"[::]:0", false, true},
		{"0.0.0.0:0", true, false},
	} {
		ep, err := metrics.Listen(tc.addr, tc.allowRemote, reg, nil)
		if ep != nil {
			ep.Close()
		}
		if got := errors.Is(err, metrics.ErrRemote); got != tc.wantRemote {
			t.Errorf("Listen(%q, allowRemote %v): %v, want ErrRemote %v", tc.addr, tc.allowRemote, err, tc.wantRemote)
		}
		if !tc.wantRemote && err != nil {
			t.Errorf("Listen(%q, allowRemote %v): %v", tc.addr, tc.allowRemote, err)
		}
	}
	if _, err := metrics.Listen("no-port", false, reg, nil); err == nil {
		t.Error("Listen of an address without a port: no error")
	}
}

// Error labels stay bounded whatever errno a server answers with: before,
// each number without a name made a series of its own (errno100000,
// errno100001, ...), so a server could grow a client's registry without
// bound.
func TestClientErrorKindsBounded(t *testing.T) {
	reg := metrics.New()
	obs := reg.ObserveClient("data", "data0", nil)
	for i := range 200 {
		obs.CallDone(1, 0, 0, time.Millisecond, &wire.RemoteError{Server: "data0", Errno: syscall.Errno(100000 + i), Msg: "odd"})
	}
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "pario_client_errors_total" && len(f.GetMetric()) != 1 {
			t.Errorf("pario_client_errors_total: %d series for 200 unnamed errnos, want 1", len(f.GetMetric()))
		}
	}
}
