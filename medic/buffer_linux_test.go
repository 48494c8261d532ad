package medic

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/medic/cost"
)

// sockopt reads an int socket option of a TCP connection.
func sockopt(t *testing.T, nc net.Conn, opt int) int {
	t.Helper()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

func sysctl(t *testing.T, name string) int {
	b, err := os.ReadFile("/proc/sys/net/core/" + name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The sender's socket buffers are the bandwidth-delay product it was
// given (as far as the kernel allows: Linux reports twice what was set,
// capped at twice net.core.wmem_max / rmem_max).
func TestDialSizesSocketBuffers(t *testing.T) {
	key := make([]byte, KeySize)
	srv, err := NewServer(ServerConfig{Key: key, Store: DirStore(t.TempDir()), StagingDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	plain, err := dial(ctx, &SendOptions{Addr: ln.Addr().String(), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defaultSnd := sockopt(t, plain.nc, syscall.SO_SNDBUF)
	plain.nc.Close()

	buf := cost.SocketBuffer(10e6, 0.1) // 1 MB
	if buf != 1e6 {
		t.Fatalf("SocketBuffer(10 MB/s, 100 ms) = %d", buf)
	}
	c, err := dial(ctx, &SendOptions{Addr: ln.Addr().String(), Key: key, Buffer: buf})
	if err != nil {
		t.Fatal(err)
	}
	defer c.nc.Close()
	for _, tc := range []struct {
		name   string
		opt    int
		sysctl string
	}{{"SO_SNDBUF", syscall.SO_SNDBUF, "wmem_max"}, {"SO_RCVBUF", syscall.SO_RCVBUF, "rmem_max"}} {
		want := 2 * min(buf, sysctl(t, tc.sysctl))
		if got := sockopt(t, c.nc, tc.opt); got != want {
			t.Errorf("%s = %d, want %d (2 x min(%d, %s)); without Buffer it is %d", tc.name, got, want, buf, tc.sysctl, defaultSnd)
		}
	}
}
