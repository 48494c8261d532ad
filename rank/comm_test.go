package rank

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkCollectives runs every collective on c and checks the values.
func checkCollectives(ctx context.Context, c *Comm) error {
	me, n := c.Rank(), c.Size()
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	u := func(v uint64, op Op, want uint64) error {
		got, err := c.AllreduceUint64(ctx, v, op)
		if err == nil && got != want {
			err = fmt.Errorf("AllreduceUint64(%d, %v) = %d, want %d", v, op, got, want)
		}
		return err
	}
	f := func(v float64, op Op, want float64) error {
		got, err := c.AllreduceFloat64(ctx, v, op)
		if err == nil && got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			err = fmt.Errorf("AllreduceFloat64(%g, %v) = %g, want %g", v, op, got, want)
		}
		return err
	}
	un := uint64(n)
	big := uint64(1) << 40 // sizes beyond 32 bits survive
	nan := 0.0
	if me == n-1 {
		nan = math.NaN()
	}
	for _, err := range []func() error{
		func() error { return u(uint64(me+1), Sum, un*(un+1)/2) },
		func() error { return u(big*uint64(me+1), Sum, big*un*(un+1)/2) },
		func() error { return u(uint64(me+10), Min, 10) },
		func() error { return u(uint64(me+10), Max, un+9) },
		func() error { return u(math.MaxUint64-uint64(me), Min, math.MaxUint64-(un-1)) },
		func() error { return f(0.5*float64(me), Sum, 0.25*float64(n*(n-1))) },
		func() error { return f(-float64(me), Min, -float64(n-1)) },
		func() error { return f(1e300*float64(me), Max, 1e300*float64(n-1)) },
		func() error { return f(nan, Max, math.NaN()) },
	} {
		if e := err(); e != nil {
			return e
		}
	}
	roots := []int{0, n - 1, n / 2}
	for _, root := range roots {
		var data []byte
		if me == root {
			data = []byte(fmt.Sprintf("from %d", root))
		} else {
			data = []byte("ignored")
		}
		got, err := c.Broadcast(ctx, root, data)
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("from %d", root); string(got) != want {
			return fmt.Errorf("Broadcast(root %d) = %q, want %q", root, got, want)
		}
		// Rank 2 sends nothing: empty parts survive.
		mine := []byte(strings.Repeat(fmt.Sprint(me), me%3))
		list, err := c.Gather(ctx, root, mine)
		if err != nil {
			return err
		}
		if me != root {
			if list != nil {
				return fmt.Errorf("Gather(root %d) on rank %d = %q, want nil", root, me, list)
			}
			continue
		}
		if len(list) != n {
			return fmt.Errorf("Gather(root %d) has %d parts, want %d", root, len(list), n)
		}
		for r, p := range list {
			if want := strings.Repeat(fmt.Sprint(r), r%3); string(p) != want {
				return fmt.Errorf("Gather(root %d)[%d] = %q, want %q", root, r, p, want)
			}
		}
	}
	for range 50 {
		if err := c.Barrier(ctx); err != nil {
			return err
		}
	}
	return nil
}

func TestCollectives(t *testing.T) {
	for _, n := range []int{1, 2, 5, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if err := RunLocal(testCtx(t), n, checkCollectives); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLargePayloads(t *testing.T) {
	const size = 9 << 20 // more than one write piece
	big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	err := RunLocal(testCtx(t), 3, func(ctx context.Context, c *Comm) error {
		var data []byte
		if c.Rank() == 1 {
			data = big
		}
		got, err := c.Broadcast(ctx, 1, data)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, big) {
			return fmt.Errorf("broadcast: %d bytes differ", len(got))
		}
		if c.Rank() != 1 {
			clear(got) // the result is the caller's: nobody else reads it any more
		}
		list, err := c.Gather(ctx, 2, big[:size-c.Rank()])
		if err != nil {
			return err
		}
		for r, p := range list {
			if !bytes.Equal(p, big[:size-r]) {
				return fmt.Errorf("gather part %d: %d bytes differ", r, len(p))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSingleRankJoin(t *testing.T) {
	ctx := testCtx(t)
	c, err := Join(ctx, Config{Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Rank() != 0 || c.Size() != 1 || c.Info().Launcher != LauncherNone {
		t.Fatalf("Join with no launcher: rank %d of %d, %+v", c.Rank(), c.Size(), c.Info())
	}
	if err := checkCollectives(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Barrier(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Barrier after Close: %v, want ErrClosed", err)
	}
}

func TestBadArguments(t *testing.T) {
	ctx := testCtx(t)
	c, err := Join(ctx, Config{Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Broadcast(ctx, 1, nil); err == nil || !strings.Contains(err.Error(), "root 1 out of range") {
		t.Errorf("Broadcast(root 1) of 1 rank: %v", err)
	}
	if _, err := c.Gather(ctx, -1, nil); err == nil {
		t.Errorf("Gather(root -1): no error")
	}
	if _, err := c.AllreduceUint64(ctx, 1, Op(9)); err == nil {
		t.Errorf("AllreduceUint64(op 9): no error")
	}
	// None of that broke the communicator.
	if err := c.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
}

// newLocal is NewLocal with a cleanup that closes every Comm.
func newLocal(t *testing.T, n int, cfg Config) []*Comm {
	t.Helper()
	comms, err := NewLocal(testCtx(t), n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	return comms
}

// crash makes c's process look dead to its peers: its connections close
// with no bye, and c itself tells nobody anything (a dead process runs no
// code).
func crash(c *Comm) {
	c.mu.Lock()
	if c.err == nil {
		c.err = errors.New("crashed")
		close(c.failed)
	}
	c.mu.Unlock()
	if c.root != nil {
		c.root.conn.Close()
	}
	for _, l := range c.links {
		if l != nil {
			l.conn.Close()
		}
	}
}

// inParallel runs f on each of comms and returns their errors by rank.
func inParallel(comms []*Comm, f func(c *Comm) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for i, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(c)
		}()
	}
	wg.Wait()
	return errs
}

// wantRankError checks that err names rank with a reason starting with
// reason.
func wantRankError(t *testing.T, who string, err error, rank int, reason string) {
	t.Helper()
	var re *RankError
	if !errors.As(err, &re) || re.Rank != rank || !strings.HasPrefix(re.Reason, reason) {
		t.Errorf("%s: error %v, want rank %d %s...", who, err, rank, reason)
	}
}

func TestDeathFailsOthers(t *testing.T) {
	for _, victim := range []int{0, 3} {
		t.Run(fmt.Sprintf("rank %d dies", victim), func(t *testing.T) {
			comms := newLocal(t, 5, Config{})
			ctx := testCtx(t)
			start := time.Now()
			errs := inParallel(comms, func(c *Comm) error {
				if c.Rank() == victim {
					time.Sleep(100 * time.Millisecond) // the others wait in the barrier
					crash(c)
					return nil
				}
				return c.Barrier(ctx)
			})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the others took %v to notice", d)
			}
			for r, err := range errs {
				if r != victim {
					wantRankError(t, fmt.Sprintf("rank %d", r), err, victim, "died: connection")
				}
			}
			// Later calls fail at once, naming the same rank.
			for r, c := range comms {
				if r != victim {
					wantRankError(t, fmt.Sprintf("rank %d later", r), c.Barrier(ctx), victim, "died")
				}
			}
		})
	}
}

func TestDeathWhileIdle(t *testing.T) {
	// A rank that dies while nobody is in a collective fails the others'
	// next calls too.
	comms := newLocal(t, 3, Config{})
	crash(comms[2])
	ctx := testCtx(t)
	deadline := time.Now().Add(5 * time.Second)
	for comms[1].Err() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	errs := inParallel(comms[:2], func(c *Comm) error { return c.Barrier(ctx) })
	for r, err := range errs {
		wantRankError(t, fmt.Sprintf("rank %d", r), err, 2, "died")
	}
}

func TestHeartbeatTimeout(t *testing.T) {
	cfg := Config{HeartbeatInterval: 20 * time.Millisecond, HeartbeatTimeout: 300 * time.Millisecond, Timeout: 5 * time.Second}
	ctx := testCtx(t)

	t.Run("silent rank", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// A rank 1 that joins and then says nothing more.
		go func() {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return
			}
			defer conn.Close()
			writeFrame(conn, hello{job: "hb", size: 2, rank: 1, host: "mute", pid: 7}.encode())
			time.Sleep(3 * time.Second)
		}()
		rc := cfg
		rc.Listener = ln
		c, err := join(ctx, Info{Rank: 0, Size: 2, JobID: "hb", Rendezvous: ln.Addr().String()}, rc)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		err = c.Barrier(ctx)
		wantRankError(t, "rank 0", err, 1, "died: nothing heard for 300ms (heartbeat timeout)")
		if !strings.Contains(err.Error(), "rank 1 (mute:7) died") {
			t.Errorf("error %q does not name rank 1 by host and pid", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})

	t.Run("silent rank 0", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		// A rank 0 that welcomes and then says nothing more.
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			readFrame(conn, maxHello)
			writeFrame(conn, welcome{host: "mute", pid: 8, interval: 20 * time.Millisecond, timeout: 300 * time.Millisecond}.encode())
			time.Sleep(3 * time.Second)
		}()
		c, err := join(ctx, Info{Rank: 1, Size: 2, JobID: "hb", Rendezvous: ln.Addr().String()}, Config{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		wantRankError(t, "rank 1", c.Barrier(ctx), 0, "died: nothing heard for 300ms")
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

func TestGiveUp(t *testing.T) {
	comms := newLocal(t, 3, Config{})
	ctx := testCtx(t)
	errs := inParallel(comms, func(c *Comm) error {
		switch c.Rank() {
		case 0:
			time.Sleep(300 * time.Millisecond) // late: rank 1 gives up first
			return c.Barrier(ctx)
		case 1:
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			return c.Barrier(short)
		}
		return c.Barrier(ctx)
	})
	if !errors.Is(errs[1], context.DeadlineExceeded) {
		t.Errorf("rank 1: %v, want its context's error", errs[1])
	}
	wantRankError(t, "rank 0", errs[0], 1, "gave up in Barrier #1: context deadline exceeded")
	wantRankError(t, "rank 2", errs[2], 1, "gave up in Barrier #1")
	if errors.Is(errs[0], context.Canceled) {
		t.Errorf("rank 0: %v matches context.Canceled; rank 1 timed out, it was not interrupted", errs[0])
	}
}

// A rank interrupted in a collective call (its context cancelled, as
// Ctrl-C does) fails the others with an error that matches
// context.Canceled, so that they report an interrupted run, not a broken
// one: pario mcmc --np 2 printed rank 1's "gave up in Barrier" beside
// the interrupt line when rank 0 heard the Ctrl-C first.
func TestInterruptedRankIsCanceledForTheOthers(t *testing.T) {
	comms := newLocal(t, 3, Config{})
	ctx := testCtx(t)
	errs := inParallel(comms, func(c *Comm) error {
		switch c.Rank() {
		case 0:
			time.Sleep(300 * time.Millisecond) // late: rank 1 is interrupted first
		case 1:
			interrupted, cancel := context.WithCancel(ctx)
			time.AfterFunc(50*time.Millisecond, cancel)
			return c.Barrier(interrupted)
		}
		return c.Barrier(ctx)
	})
	for r, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("rank %d: %v, want an error matching context.Canceled", r, err)
		}
	}
	wantRankError(t, "rank 0", errs[0], 1, "gave up in Barrier #1: context canceled")
}

func TestMismatchedCollectives(t *testing.T) {
	comms := newLocal(t, 3, Config{})
	ctx := testCtx(t)
	errs := inParallel(comms, func(c *Comm) error {
		if c.Rank() == 2 {
			time.Sleep(50 * time.Millisecond) // the others have contributed
			_, err := c.Gather(ctx, 1, nil)
			return err
		}
		return c.Barrier(ctx)
	})
	for r, err := range errs {
		wantRankError(t, fmt.Sprintf("rank %d", r), err, 2, "called Gather(root 1) as collective #1 but rank ")
	}
}

func TestClose(t *testing.T) {
	ctx := testCtx(t)
	t.Run("a rank leaves", func(t *testing.T) {
		comms := newLocal(t, 3, Config{})
		if err := comms[1].Close(); err != nil {
			t.Fatal(err)
		}
		if err := comms[1].Barrier(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("Barrier after Close: %v", err)
		}
		errs := inParallel([]*Comm{comms[0], comms[2]}, func(c *Comm) error { return c.Barrier(ctx) })
		for _, err := range errs {
			wantRankError(t, "survivor", err, 1, "left (Close called)")
		}
	})
	t.Run("rank 0 closes", func(t *testing.T) {
		comms := newLocal(t, 3, Config{})
		if err := comms[0].Close(); err != nil {
			t.Fatal(err)
		}
		for _, c := range comms[1:] {
			wantRankError(t, fmt.Sprintf("rank %d", c.Rank()), c.Barrier(ctx), 0, "closed the communicator")
		}
	})
	t.Run("everyone closes after the last result", func(t *testing.T) {
		for range 20 {
			comms, err := NewLocal(ctx, 4, Config{})
			if err != nil {
				t.Fatal(err)
			}
			errs := inParallel(comms, func(c *Comm) error {
				list, err := c.Gather(ctx, 0, []byte{byte(c.Rank())})
				if err == nil && c.Rank() == 0 && len(list) != 4 {
					err = fmt.Errorf("gather: %v", list)
				}
				c.Close()
				return err
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestConcurrentCallsRefused(t *testing.T) {
	comms := newLocal(t, 2, Config{})
	ctx := testCtx(t)
	done := make(chan error)
	go func() { done <- comms[1].Barrier(ctx) }()
	for !comms[1].busy.Load() {
		time.Sleep(time.Millisecond)
	}
	if err := comms[1].Barrier(ctx); err == nil || !strings.Contains(err.Error(), "another collective is in progress") {
		t.Errorf("second concurrent Barrier: %v", err)
	}
	if err := comms[0].Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRendezvousRefusals(t *testing.T) {
	tests := []struct {
		name   string
		peer   Info
		reason string
	}{
		{"job", Info{Rank: 1, Size: 2, JobID: "other"}, `job mismatch: rank 0 (`},
		{"size", Info{Rank: 1, Size: 3, JobID: "job"}, "size mismatch: rank 0 ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			rootErr := make(chan error, 1)
			go func() {
				c, err := join(ctx, Info{Rank: 0, Size: 2, JobID: "job", Rendezvous: ln.Addr().String()},
					Config{Listener: ln, Timeout: 10 * time.Second})
				if c != nil {
					c.Close()
				}
				rootErr <- err
			}()
			tt.peer.Rendezvous = ln.Addr().String()
			start := time.Now()
			c, err := join(ctx, tt.peer, Config{Timeout: 10 * time.Second})
			if err == nil {
				c.Close()
				t.Fatal("a peer of another job joined")
			}
			if !strings.Contains(err.Error(), "refused: "+tt.reason) {
				t.Errorf("peer: %v, want refused: %s", err, tt.reason)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("refusal took %v", d)
			}
			cancel()
			err = <-rootErr
			if err == nil || !strings.Contains(err.Error(), "missing ranks 1; refused: "+tt.reason) {
				t.Errorf("rank 0: %v", err)
			}
		})
	}
}

func TestRendezvousTimeoutNamesMissing(t *testing.T) {
	ctx := testCtx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cfg := Config{Timeout: 500 * time.Millisecond}
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for _, r := range []int{0, 1, 3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := cfg
			if r == 0 {
				rc.Listener = ln
			} else {
				rc.Timeout = 5 * time.Second // they hear rank 0 give up
			}
			c, err := join(ctx, Info{Rank: r, Size: 5, JobID: "j", Rendezvous: addr}, rc)
			if c != nil {
				c.Close()
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	for _, r := range []int{0, 1, 3} {
		if errs[r] == nil || !strings.Contains(errs[r].Error(), "3 of 5 ranks joined (timed out after 500ms); missing ranks 2, 4") {
			t.Errorf("rank %d: %v", r, errs[r])
		}
	}
}

func TestDialTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	start := time.Now()
	_, err = join(testCtx(t), Info{Rank: 1, Size: 2, Rendezvous: addr, RendezvousFrom: "PARIO_RENDEZVOUS"},
		Config{Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "rank 0 at "+addr+" (from PARIO_RENDEZVOUS) not reachable within 300ms") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("join: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestNoRendezvousAddress(t *testing.T) {
	_, err := Join(testCtx(t), Config{Env: map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2"}})
	if err == nil || !strings.Contains(err.Error(), "no rendezvous address") {
		t.Errorf("Join: %v", err)
	}
}

func TestJoinFromEnvironment(t *testing.T) {
	// Two ranks find each other from Open MPI-like variables and a
	// --rendezvous option alone.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx := testCtx(t)
	comms := make([]*Comm, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := map[string]string{"OMPI_COMM_WORLD_RANK": fmt.Sprint(r), "OMPI_COMM_WORLD_SIZE": "2",
				"OMPI_MCA_ess_base_jobid": "42"}
			comms[r], errs[r] = Join(ctx, Config{Env: env, Rendezvous: addr, Timeout: 5 * time.Second})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	errs = inParallel(comms, func(c *Comm) error {
		defer c.Close()
		if in := c.Info(); in.JobID != "42" || in.RendezvousFrom != "option" || in.Launcher != LauncherOpenMPI {
			return fmt.Errorf("info %+v", in)
		}
		return checkCollectives(ctx, c)
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}
