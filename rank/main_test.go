package rank

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperVar makes the test binary act as a rank process (re-executed by
// Launch or mpirun) instead of running the tests. Its value is the mode.
const helperVar = "PARIO_RANK_TEST_HELPER"

// stopSignal receives the SIGTERM of helper mode "stop".
var stopSignal chan os.Signal

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperVar); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain is a rank process. Modes:
//
//	collect  detect, rendezvous, allreduce, gather, broadcast; rank 0 prints RESULT
//	exit     everyone does a barrier and closes; rank $PARIO_TEST_RANK then exits 3
//	kill     rank $PARIO_TEST_RANK kills itself while the others are in a barrier
//	early    rank $PARIO_TEST_RANK exits 5 before the rendezvous; the others wait
//	stop     after a barrier, says "ready" and waits for SIGTERM, then says how it stopped
//	nested   after the rendezvous each rank runs a command (this binary in
//	         mode detect), as pario farm does, and prints what it printed
//	detect   not a rank: print what Detect finds in the environment
func helperMain(mode string) int {
	if mode == "stop" {
		// Before the rendezvous, so that no signal finds it unprepared.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGINT)
		stopSignal = make(chan os.Signal, 1)
		signal.Notify(stopSignal, syscall.SIGTERM)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if mode == "detect" {
		in, err := Detect(Environ())
		fmt.Printf("launcher=%s rank=%d size=%d err=%v fd=%q\n", in.Launcher, in.Rank, in.Size, err, os.Getenv("PARIO_LISTEN_FD"))
		return 0
	}
	target, _ := strconv.Atoi(os.Getenv("PARIO_TEST_RANK"))
	if mode == "early" && os.Getenv("PARIO_RANK") == strconv.Itoa(target) {
		return 5 // before the rendezvous: the others wait for it
	}
	c, err := Join(ctx, Config{Timeout: 15 * time.Second, Rendezvous: os.Getenv("PARIO_TEST_RENDEZVOUS_OPTION")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "join:", err)
		return 2
	}
	defer c.Close()
	me, n := c.Rank(), c.Size()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	switch mode {
	case "collect":
		in := c.Info()
		fmt.Printf("detected rank %d of %d launcher=%s local=%d job=%q rendezvous=%s (%s)\n",
			me, n, in.Launcher, in.LocalRank, in.JobID, in.Rendezvous, in.RendezvousFrom)
		sum, err := c.AllreduceUint64(ctx, uint64(me+1)<<40, Sum)
		if err != nil {
			return fail("allreduce", err)
		}
		mx, err := c.AllreduceFloat64(ctx, 1.5*float64(me), Max)
		if err != nil {
			return fail("allreduce", err)
		}
		parts, err := c.Gather(ctx, 0, []byte(fmt.Sprintf("r%d", me)))
		if err != nil {
			return fail("gather", err)
		}
		var msg []byte
		if me == n-1 {
			msg = []byte("hello from the last rank")
		}
		got, err := c.Broadcast(ctx, n-1, msg)
		if err != nil {
			return fail("broadcast", err)
		}
		if me == 0 {
			var names []string
			for _, p := range parts {
				names = append(names, string(p))
			}
			fmt.Printf("RESULT size=%d launcher=%s sum=%d max=%g gather=%s bcast=%q\n",
				n, in.Launcher, sum>>40, mx, strings.Join(names, ","), got)
		}
		if err := c.Barrier(ctx); err != nil {
			return fail("barrier", err)
		}
	case "early":
		fmt.Println("joined without the early rank?")
	case "nested":
		exe, err := os.Executable()
		if err != nil {
			return fail("executable", err)
		}
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), helperVar+"=detect")
		out, err := cmd.Output()
		if err != nil {
			return fail("nested command", err)
		}
		fmt.Printf("NESTED %s", out)
		if err := c.Barrier(ctx); err != nil {
			return fail("barrier", err)
		}
	case "exit":
		if err := c.Barrier(ctx); err != nil {
			return fail("barrier", err)
		}
		c.Close()
		if me == target {
			return 3
		}
	case "kill":
		if err := c.Barrier(ctx); err != nil {
			return fail("first barrier", err)
		}
		if me == target {
			time.Sleep(200 * time.Millisecond) // the others are in the barrier by now
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {}
		}
		start := time.Now()
		err := c.Barrier(ctx)
		if err == nil {
			fmt.Println("barrier succeeded without the killed rank?")
			return 0
		}
		fmt.Fprintf(os.Stderr, "barrier failed after %.1fs: %v\n", time.Since(start).Seconds(), err)
		if err := c.Barrier(ctx); err == nil {
			fmt.Println("a later barrier succeeded?")
			return 0
		}
		return 1
	case "stop":
		if err := c.Barrier(ctx); err != nil {
			return fail("barrier", err)
		}
		fmt.Println("ready")
		sig := <-stopSignal
		own := syscall.Getpgrp() == os.Getpid()
		fmt.Printf("stopped by %v, own process group %v\n", sig, own)
		return 0
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	return 0
}
