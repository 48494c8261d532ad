package rank

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// syncBuffer is a bytes.Buffer safe for Launch's writers and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// launchHelper runs n copies of the test binary in helper mode.
func launchHelper(t *testing.T, n int, mode string, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	return launchHelperOpts(t, n, mode, LaunchOptions{}, extra...)
}

func launchHelperOpts(t *testing.T, n int, mode string, opts LaunchOptions, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	env := append(childEnv(), helperVar+"="+mode)
	env = append(env, extra...)
	opts.Env, opts.Stdout, opts.Stderr = env, &out, &errOut
	err = Launch(testCtx(t), n, []string{exe}, opts)
	return out.String(), errOut.String(), err
}

func TestLaunch(t *testing.T) {
	out, errOut, err := launchHelper(t, 4, "collect")
	if err != nil {
		t.Fatalf("Launch: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	want := `[rank 0] RESULT size=4 launcher=pario sum=10 max=4.5 gather=r0,r1,r2,r3 bcast="hello from the last rank"`
	if !strings.Contains(out, want+"\n") {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
	for r := range 4 {
		re := regexp.MustCompile(fmt.Sprintf(`(?m)^\[rank %d\] detected rank %d of 4 launcher=pario local=-1 job="[0-9a-f]{24}" rendezvous=127\.0\.0\.1:\d+ \(PARIO_RENDEZVOUS\)$`, r, r))
		if !re.MatchString(out) {
			t.Errorf("stdout lacks rank %d's detection line:\n%s", r, out)
		}
	}
}

func TestLaunchNamesFailedRanks(t *testing.T) {
	out, errOut, err := launchHelper(t, 3, "exit", "PARIO_TEST_RANK=2")
	var le *LaunchError
	if !errors.As(err, &le) || len(le.Failed) != 1 || le.Failed[0].Rank != 2 {
		t.Fatalf("Launch: %v, want rank 2 alone failed\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if want := "rank: launch: rank 2: exit status 3"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestLaunchKilledRank(t *testing.T) {
	for _, victim := range []int{3, 0} {
		t.Run(fmt.Sprintf("rank %d", victim), func(t *testing.T) {
			start := time.Now()
			out, errOut, err := launchHelper(t, 4, "kill", fmt.Sprintf("PARIO_TEST_RANK=%d", victim))
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			var le *LaunchError
			if !errors.As(err, &le) || len(le.Failed) != 4 {
				t.Fatalf("Launch: %v, want all 4 ranks failed\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			}
			for _, f := range le.Failed {
				want := "exit status 1"
				if f.Rank == victim {
					want = "signal: killed"
				}
				if f.Err.Error() != want {
					t.Errorf("rank %d: %v, want %s", f.Rank, f.Err, want)
				}
			}
			// Every survivor names the victim, by host and pid.
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^\[rank (\d)\] barrier failed after [0-9.]+s: rank \d: Barrier #2: rank %d \([^:]+:\d+\) died: connection (closed|reset)$`, victim))
			if got := len(re.FindAllString(errOut, -1)); got != 3 {
				t.Errorf("%d survivors named rank %d, want 3; stderr:\n%s", got, victim, errOut)
			}
		})
	}
}

func TestLaunchGrace(t *testing.T) {
	// Rank 1 fails before the rendezvous; the others would wait for it
	// until their rendezvous timeout, but Launch kills them after Grace.
	start := time.Now()
	out, errOut, err := launchHelperOpts(t, 3, "early", LaunchOptions{Grace: 300 * time.Millisecond}, "PARIO_TEST_RANK=1")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// The survivors are killed one after the other: one may see another
	// die and exit on its own (status 2, "rank 0 closed the connection")
	// before its own SIGKILL lands, as a CI run under load saw. Either way
	// Launch ended it, and says so.
	want := regexp.MustCompile(`^rank: launch: rank 0: (signal: killed|exit status 2) \(killed 300ms after rank 1 failed\); ` +
		`rank 1: exit status 5; rank 2: (signal: killed|exit status 2) \(killed 300ms after rank 1 failed\)$`)
	if err == nil || !want.MatchString(err.Error()) {
		t.Errorf("Launch: %v\nwant %s\nstdout:\n%s\nstderr:\n%s", err, want, out, errOut)
	}
}

func TestLaunchBadProgram(t *testing.T) {
	err := Launch(testCtx(t), 2, []string{"/nonexistent/pario"}, LaunchOptions{})
	var le *LaunchError
	if !errors.As(err, &le) || le.Failed[0].Rank != 0 || !strings.Contains(err.Error(), "rank 0: start /nonexistent/pario") {
		t.Fatalf("Launch: %v", err)
	}
}

func TestLineWriter(t *testing.T) {
	var mu sync.Mutex
	var b bytes.Buffer
	w := &lineWriter{mu: &mu, dst: &b, prefix: "[r] "}
	fmt.Fprint(w, "a\nb")
	fmt.Fprint(w, "c\n\nd")
	w.flush()
	if got, want := b.String(), "[r] a\n[r] bc\n[r] \n[r] d\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestMpirun runs the ranks under Open MPI's mpirun: they find their rank
// and size in OMPI_COMM_WORLD_*, meet at the rendezvous and run
// collectives; rank 0 prints the result.
func TestMpirun(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		testenv.SkipOrFail(t, "mpirun not found (Debian: apt-get install openmpi-bin)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, extra ...string) string {
		args := []string{"--allow-run-as-root", "--oversubscribe", "-np", "4", "-x", helperVar + "=collect", "-x", "GORACE"}
		args = append(args, extra...)
		args = append(args, exe)
		cmd := exec.CommandContext(testCtx(t), mpirun, args...)
		cmd.Env = append(withoutVars(childEnv(), "PARIO_RANK", "PARIO_SIZE", "PARIO_RENDEZVOUS", "PARIO_JOB", "PARIO_PORT"),
			"OMPI_MCA_btl_vader_single_copy_mechanism=none", // containers: no CMA
			"OMPI_MCA_plm_rsh_agent=",                       // one host: never ssh
			"OMPI_MCA_rmaps_base_oversubscribe=1",
			"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mpirun: %v\n%s", err, out)
		}
		s := string(out)
		want := `RESULT size=4 launcher=openmpi sum=10 max=4.5 gather=r0,r1,r2,r3 bcast="hello from the last rank"`
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
		for r := range 4 {
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^detected rank %d of 4 launcher=openmpi local=%d job="\d+" `, r, r))
			if !re.MatchString(s) {
				t.Errorf("output lacks rank %d's detection line:\n%s", r, s)
			}
		}
		return s
	}
	t.Run("PARIO_RENDEZVOUS", func(t *testing.T) {
		port := freePort(t)
		out := run(t, "-x", "PARIO_RENDEZVOUS=127.0.0.1:"+port)
		if !strings.Contains(out, "rendezvous=127.0.0.1:"+port+" (PARIO_RENDEZVOUS)") {
			t.Errorf("the ranks did not use PARIO_RENDEZVOUS:\n%s", out)
		}
	})
	t.Run("one host", func(t *testing.T) {
		// No address given: all ranks on one host (OMPI_COMM_WORLD_LOCAL_SIZE)
		// meet on loopback at a port derived from Open MPI's job id.
		out := run(t)
		if !strings.Contains(out, "(loopback (all ranks on one host))") {
			t.Errorf("the ranks did not meet on loopback:\n%s", out)
		}
	})
}

// childEnv is the environment for helper processes: the race detector's
// one-second sleep at exit is turned off unless GORACE is set already.
func childEnv() []string {
	env := os.Environ()
	if os.Getenv("GORACE") == "" {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// freePort returns a port on loopback that is free now, below the
// kernel's ephemeral range: a port the kernel handed out and took back
// (listen on port 0) can go to the next socket anyone opens, and in
// TestMpirun that was Open MPI's own (CI: "bind: address already in use"
// at the rendezvous); below the range only an explicit bind can take it.
// (cluster.FreePorts does the same for server processes; rank may not
// import cluster.)
func freePort(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				low = v
			}
		}
	}
	for range 100 {
		port := 1024 + rand.IntN(low-1024)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			return strconv.Itoa(port)
		}
	}
	t.Fatalf("no free port below %d on loopback in 100 tries", low)
	return ""
}

// TestLaunchErrorBounded: the message of a launch with many failed ranks
// names the first failure and counts the rest. Before, it named every
// rank: 96,000 characters for a launch that ran out of processes.
func TestLaunchErrorBounded(t *testing.T) {
	le := &LaunchError{}
	for r := range 100000 {
		le.Failed = append(le.Failed, RankExit{Rank: r, Err: errors.New("signal: killed")})
	}
	msg := le.Error()
	if len(msg) > 300 || !strings.HasPrefix(msg, "rank: launch: rank 0: signal: killed") || !strings.Contains(msg, "99,999") {
		t.Errorf("%d characters, want at most 300 naming rank 0 and the 99,999 others: %.400s", len(msg), msg)
	}
}

// TestLaunchManyFailedNamesFirst: when more ranks fail than are listed,
// the message names the one that failed first (not rank 0, killed after
// it) and says the rest were killed after it.
func TestLaunchManyFailedNamesFirst(t *testing.T) {
	out, errOut, err := launchHelperOpts(t, 7, "early", LaunchOptions{Grace: 200 * time.Millisecond}, "PARIO_TEST_RANK=4")
	var le *LaunchError
	if !errors.As(err, &le) || len(le.Failed) != 7 {
		t.Fatalf("Launch: %v, want all 7 ranks failed\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if want := "rank: launch: rank 4: exit status 5; and 6 ranks killed after it"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// A --rendezvous given to a command whose ranks pario's launcher started
// is not theirs to use: they meet where the launcher says. Before, rank 0
// listened on the launcher's socket while the others dialled the option's
// address, and the run waited out its rendezvous timeout (2 minutes in
// pario farm -N 2 --rendezvous 127.0.0.1:5555).
func TestLaunchIgnoresRendezvousOption(t *testing.T) {
	start := time.Now()
	out, errOut, err := launchHelper(t, 2, "collect", "PARIO_TEST_RENDEZVOUS_OPTION=127.0.0.1:9")
	if err != nil {
		t.Fatalf("Launch with a rendezvous option: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "RESULT size=2") || time.Since(start) > 10*time.Second {
		t.Fatalf("took %v:\n%s", time.Since(start), out)
	}
}

// readyWriter counts the lines saying "ready" and closes ready at the
// n-th.
type readyWriter struct {
	syncBuffer
	n     int
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Count(w.String(), "ready\n") == w.n && w.ready != nil {
		close(w.ready)
		w.ready = nil
	}
	return n, err
}

// With StopGrace, ranks whose launch is cancelled (Ctrl-C at pario bench)
// get SIGTERM and time to stop by themselves, in process groups of their
// own, where before they were killed at once and could not remove their
// test files.
func TestLaunchStopGrace(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	out := &readyWriter{n: 2, ready: make(chan struct{})}
	ready := out.ready
	var errOut syncBuffer
	opts := LaunchOptions{Env: append(childEnv(), helperVar+"=stop"), Stdout: out, Stderr: &errOut, StopGrace: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- Launch(ctx, 2, []string{exe}, opts) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Launch ended before the ranks were ready: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	cancel()
	<-done // the ranks' status 0 reads as the cancellation (os/exec)
	for r := range 2 {
		want := fmt.Sprintf("[rank %d] stopped by terminated, own process group true\n", r)
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, out.String(), errOut.String())
		}
	}
}

// A command a rank runs (pario farm runs one per segment) is not a rank of
// the launcher's run: it must not find PARIO_RANK, PARIO_SIZE and the
// rest. Before, a `pario bench` run by a farm rank's command took itself
// for that rank: rank 1's dialled the launcher's closed rendezvous for its
// whole 2-minute timeout, rank 0's took its own descriptor 3 for the
// launcher's listener.
func TestLaunchedRankCommandsAreNotRanks(t *testing.T) {
	out, errOut, err := launchHelper(t, 2, "nested")
	if err != nil {
		t.Fatalf("Launch: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	for r := range 2 {
		want := fmt.Sprintf("[rank %d] NESTED launcher=none rank=0 size=1 err=<nil> fd=\"\"\n", r)
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
