package rank

import (
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rootJoin runs rank 0 of a size-2 job on ln and reports its outcome.
func rootJoin(ctx context.Context, ln net.Listener, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		c, err := join(ctx, Info{Rank: 0, Size: 2, JobID: "job", Rendezvous: ln.Addr().String()},
			Config{Listener: ln, Timeout: timeout})
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	return done
}

// junk opens n connections to addr that say nothing a rank would: some
// close at once, some send a frame of another type, some a hello of
// another job.
func junk(t *testing.T, addr string, n int) {
	t.Helper()
	other := hello{job: "other", size: 2, rank: 1, host: "intruder", pid: 1}.encode()
	for i := range n {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatalf("junk connection %d: %v", i, err)
		}
		switch i % 3 {
		case 1:
			c.Write([]byte{5, 0, 0, 0, 0, 0, 0, 0, 99, 'j', 'u', 'n', 'k'})
		case 2:
			writeFrame(c, other)
		}
		c.Close()
	}
}

// A port scanner or a stray client at the rendezvous must not stop the
// ranks from meeting, and the failure rank 0 reports when a rank does not
// come must stay readable however many strangers called.
func TestRendezvousAmidJunk(t *testing.T) {
	ctx := testCtx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	root := rootJoin(ctx, ln, 10*time.Second)
	junk(t, addr, 600)
	c, err := join(ctx, Info{Rank: 1, Size: 2, JobID: "job", Rendezvous: addr}, Config{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("rank 1 after 600 junk connections: %v", err)
	}
	c.Close()
	if err := <-root; err != nil {
		t.Fatalf("rank 0 after 600 junk connections: %v", err)
	}

	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root = rootJoin(ctx, ln, 2*time.Second)
	junk(t, ln.Addr().String(), 600)
	err = <-root
	if err == nil {
		t.Fatal("rank 0 met nobody and did not fail")
	}
	msg := err.Error()
	if !strings.Contains(msg, "missing ranks 1") || !strings.Contains(msg, "job mismatch") || !strings.Contains(msg, "more refused") {
		t.Errorf("rank 0: %.300s..., want the missing rank, a sample of the refusals and how many more", msg)
	}
	if len(msg) > 4096 {
		t.Errorf("rank 0's error is %d bytes long after 600 junk connections", len(msg))
	}
}

// Running out of descriptors while waiting must not end rank 0's accepts:
// a rank that dials once descriptors are free again still joins.
func TestRendezvousSurvivesRunningOutOfDescriptors(t *testing.T) {
	ctx := testCtx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("no /proc/self/fd: %v", err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(fds) + 8)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	root := rootJoin(ctx, ln, 10*time.Second)
	var flood []net.Conn
	for range 32 {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue // out of descriptors here too
		}
		flood = append(flood, c)
	}
	time.Sleep(300 * time.Millisecond) // rank 0's accepts meet EMFILE
	for _, c := range flood {
		c.Close()
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	c, err := join(ctx, Info{Rank: 1, Size: 2, JobID: "job", Rendezvous: addr}, Config{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("rank 1 once descriptors were free again: %v", err)
	}
	c.Close()
	if err := <-root; err != nil {
		t.Fatalf("rank 0: %v", err)
	}
}
