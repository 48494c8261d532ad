package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/wire"
)

// failingListener is a listener whose Accept fails for good once the test
// says so: a server loop that ends unexpectedly.
type failingListener struct {
	net.Listener
	failed chan struct{}
}

func (l *failingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	select {
	case <-l.failed:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EINVAL}
	default:
	}
	return nc, err
}

// pario meta, data and up exit with an error naming the server when its
// accept loop ends, instead of staying up without accepting anything.
func TestServerCommandsExitWhenServingStops(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if _, err := cluster.WriteSecret(secret); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"data", []string{"data", "--name", "data0", "--listen", "127.0.0.1:0", "--secret-file", secret}, "I/O server data0"},
		{"meta", []string{"meta", "--listen", "127.0.0.1:0", "--secret-file", secret, "--data", "data0=127.0.0.1:1"}, "metadata server"},
		{"up", []string{"up", "--servers", "2"}, "I/O server data0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				lns []*failingListener
			)
			netListen = func(network, addr string) (net.Listener, error) {
				ln, err := net.Listen(network, addr)
				if err != nil {
					return nil, err
				}
				fl := &failingListener{Listener: ln, failed: make(chan struct{})}
				mu.Lock()
				lns = append(lns, fl)
				mu.Unlock()
				return fl, nil
			}
			defer func() { netListen = net.Listen }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			root := newRootCommand()
			root.SetArgs(append(tc.args, "--dir", t.TempDir(), "--log-level", "error"))
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(ctx) }()
			waitUntil(t, "the servers to listen", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(lns) > 0
			})
			select {
			case err := <-done:
				t.Fatalf("exited before its listener failed: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			mu.Lock()
			close(lns[0].failed)
			lns[0].Listener.Close()
			mu.Unlock()
			select {
			case err := <-done:
				var ue usageError
				if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want+" ") || !strings.Contains(err.Error(), "stopped serving") {
					t.Fatalf("pario %s: %v, want an error saying %s stopped serving", tc.name, err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("pario %s still running after its accept loop ended", tc.name)
			}
		})
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Under a low descriptor limit, a flood of half-open connections (which
// needs no secret) does not stop an I/O server for good: once they are
// gone, clients are served again. Before, Accept's EMFILE ended the accept
// loop while the process and its socket stayed up.
func TestDataServerSurvivesDescriptorExhaustion(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	key, err := cluster.WriteSecret(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, parioBin, "data", "--name", "data0",
		"--dir", filepath.Join(dir, "data0"), "--listen", addr, "--secret-file", secretFile, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	dial := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := wire.Dial(ctx, addr, "I/O server data0", key)
		if err == nil {
			c.Close()
		}
		return err
	}
	waitUntil(t, "the I/O server", func() bool { return dial(time.Second) == nil })

	var half []net.Conn
	for range 100 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		half = append(half, nc)
	}
	time.Sleep(300 * time.Millisecond)
	for _, nc := range half {
		nc.Close()
	}
	// The server notices the closed connections in its own time; until
	// then a new one may be refused (per-host cap), so try for a while.
	var lastErr error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if lastErr = dial(2 * time.Second); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("I/O server no longer serves after a flood of half-open connections: %v\n%s", lastErr, out.String())
	}
	select {
	case err := <-exited:
		t.Fatalf("I/O server exited: %v\n%s", err, out.String())
	default:
	}
}
