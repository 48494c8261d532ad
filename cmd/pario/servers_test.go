package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
	if err := os.WriteFile(secret, []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
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
