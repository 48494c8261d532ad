package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/wire"
)

// hungServer is an I/O server that accepts every connection and request
// and answers none but the metadata server's claim and creates: a server
// stuck on a dead disk once the file exists.
type hungServer struct {
	once    sync.Once
	arrived chan struct{} // closed at the first request that hangs
}

func (h *hungServer) ServeWire(ctx context.Context, req *wire.Request) (wire.Response, error) {
	switch req.Op {
	case data.OpClaim.Code:
		return wire.Serve(data.OpClaim, req, func(data.ClaimRequest) (data.ClaimResponse, error) { return data.ClaimResponse{}, nil })
	case data.OpCreate.Code:
		return wire.Serve(data.OpCreate, req, func(data.CreateRequest) (data.CreateResponse, error) { return data.CreateResponse{}, nil })
	case data.OpCreateBatch.Code: // the metadata server's precreate pools
		return wire.Serve(data.OpCreateBatch, req, func(data.CreateBatchRequest) (data.CreateBatchResponse, error) {
			return data.CreateBatchResponse{}, nil
		})
	}
	h.once.Do(func() { close(h.arrived) })
	<-ctx.Done()
	return wire.Response{}, ctx.Err()
}

// Ctrl-C stops `pario cp` while its writes wait on an I/O server that
// never answers: the requests take the command's context, so cp exits at
// once, with a failure status and a message that says the copy stopped,
// instead of waiting out the requests' timeouts and retries (minutes).
func TestCpStopsOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if _, err := cluster.WriteSecret(secretFile); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hung := &hungServer{arrived: make(chan struct{})}
	raw, err := cluster.ReadSecret(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := wire.NewServer(hung, wire.ServerOptions{Name: "data0", Secret: raw})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-served })

	metaAddr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	meta := exec.Command(parioBin, "meta", "--dir", filepath.Join(dir, "meta"), "--listen", metaAddr,
		"--secret-file", secretFile, "--data", "data0="+ln.Addr().String())
	var metaOut bytes.Buffer
	meta.Stdout, meta.Stderr = &metaOut, &metaOut
	if err := meta.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Process.Signal(syscall.SIGTERM); meta.Wait() })
	cf := filepath.Join(dir, "cluster")
	if err := os.WriteFile(cf, fmt.Appendf(nil, "secret-file secret\nmeta %s\ndata data0 %s\n", metaAddr, ln.Addr()), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ { // the metadata server takes a moment to listen
		if _, err := runErr(cf, "ls", "/"); err == nil {
			break
		} else if i == 100 {
			t.Fatalf("metadata server not up: %v\n%s", err, metaOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	src := filepath.Join(dir, "in.dat")
	if err := os.WriteFile(src, bytes.Repeat([]byte("pario"), 200000), 0o644); err != nil {
		t.Fatal(err)
	}

	cp := exec.Command(parioBin, "--cluster", cf, "cp", "-q", src, "pario:/in.dat")
	var out bytes.Buffer
	cp.Stdout, cp.Stderr = &out, &out
	if err := cp.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cp.Wait() }()
	t.Cleanup(func() { cp.Process.Kill(); <-exited })
	select {
	case <-hung.arrived:
	case err := <-exited:
		exited <- err
		t.Fatalf("cp ended before writing to the I/O server: %v\n%s", err, out.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("cp's writes never reached the I/O server\n%s", out.String())
	}

	if err := cp.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
		exited <- err
	case <-time.After(5 * time.Second):
		t.Fatalf("cp still running 5s after SIGINT: its requests do not take the command's context\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("cp after SIGINT: %v, want exit status 1", err)
	}
	if want := "stopped, the copy is incomplete: interrupt signal received"; !strings.Contains(out.String(), want) {
		t.Errorf("cp after SIGINT says %q, want it to contain %q", out.String(), want)
	}
}
