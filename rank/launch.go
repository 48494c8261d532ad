package rank

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LaunchOptions adjusts Launch.
type LaunchOptions struct {
	// Env is the ranks' base environment; nil means the process's. Launch
	// replaces any PARIO_RANK, PARIO_SIZE, PARIO_RENDEZVOUS, PARIO_JOB and
	// PARIO_LISTEN_FD in it.
	Env []string
	// Dir is the ranks' working directory; "" means the current one.
	Dir string
	// Stdout and Stderr receive the ranks' output, line by line, each line
	// prefixed; nil means os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Prefix returns the prefix of rank r's lines; nil means "[rank r] ".
	Prefix func(r int) string
	// Grace is how long the other ranks may keep running once one has
	// failed before Launch kills them (they normally fail by themselves
	// at once, naming it). Default 10s.
	Grace time.Duration
	// StopGrace, when positive, lets the ranks stop by themselves when
	// ctx ends or Launch ends them (after Grace): each gets SIGTERM and
	// this long to exit before it is killed, time to remove what it made.
	// The ranks then run in process groups of their own, so that a
	// Ctrl-C at the terminal reaches the launcher alone, which passes it
	// on once: a rank that caught the terminal's SIGINT and then the
	// launcher's SIGTERM would die at the second signal (pario's second
	// Ctrl-C ends the process). Zero kills the ranks at once.
	StopGrace time.Duration
}

// RankExit is how one launched rank ended, when it failed.
type RankExit struct {
	Rank int
	Err  error // an *exec.ExitError, or why it could not start
	// Killed is set when Launch killed the rank because another had
	// failed (or one could not start) before it.
	Killed bool
}

// LaunchError lists the ranks that failed, in rank order.
type LaunchError struct {
	Failed []RankExit
	// First is the index in Failed of the rank that failed first, the one
	// the others' failures usually follow from.
	First int
}

// maxListed is how many failed ranks LaunchError's message names one by
// one; beyond it the message names the first failure and counts the rest,
// so that a launch of 100,000 ranks that ran out of processes is not one
// line per rank.
const maxListed = 4

func (e *LaunchError) Error() string {
	var b strings.Builder
	b.WriteString("rank: launch: ")
	if len(e.Failed) <= maxListed {
		for i, f := range e.Failed {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "rank %d: %v", f.Rank, f.Err)
		}
		return b.String()
	}
	first := e.Failed[min(max(e.First, 0), len(e.Failed)-1)]
	fmt.Fprintf(&b, "rank %d: %v", first.Rank, first.Err)
	killed := 0
	for _, f := range e.Failed {
		if f.Killed {
			killed++
		}
	}
	rest := len(e.Failed) - 1
	if first.Killed {
		killed--
	}
	switch {
	case killed == rest:
		fmt.Fprintf(&b, "; and %s ranks killed after it", thousands(rest))
	case killed > 0:
		fmt.Fprintf(&b, "; and %s more ranks failed (%s of them killed after it)", thousands(rest), thousands(killed))
	default:
		fmt.Fprintf(&b, "; and %s more ranks failed", thousands(rest))
	}
	return b.String()
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Launch runs n copies of the program argv as rank processes on this host
// and waits for them. Each gets PARIO_RANK, PARIO_SIZE, PARIO_RENDEZVOUS (a
// loopback address whose listener Launch binds and hands to rank 0 as
// PARIO_LISTEN_FD) and a fresh PARIO_JOB, so that Join in the copies finds
// its rank. Their output is streamed with each line prefixed by its rank.
// When ctx ends the ranks are killed. The result is nil when every rank
// exited with status 0, and otherwise a *LaunchError naming each rank that
// failed.
func Launch(ctx context.Context, n int, argv []string, opts LaunchOptions) error {
	if err := CheckLaunch(n); err != nil {
		return fmt.Errorf("rank: launch: %w", err)
	}
	if len(argv) == 0 {
		return errors.New("rank: launch: no program")
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Prefix == nil {
		opts.Prefix = func(r int) string { return fmt.Sprintf("[rank %d] ", r) }
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	base := opts.Env
	if base == nil {
		base = os.Environ()
	}
	base = withoutVars(base, launchVars...)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("rank: launch: %v", err)
	}
	addr := ln.Addr().String()
	lnFile, err := ln.(*net.TCPListener).File()
	ln.Close() // lnFile is a duplicate that keeps listening
	if err != nil {
		return fmt.Errorf("rank: launch: %v", err)
	}
	defer lnFile.Close()

	// The launcher blocks a thread in wait for each rank: Go's default
	// limit of 10,000 threads would crash it past that many ranks. Raised
	// for good, not restored: another Launch may be running.
	if prev := debug.SetMaxThreads(n + 10000); prev > n+10000 {
		debug.SetMaxThreads(prev)
	}

	runCtx, kill := context.WithCancel(ctx)
	defer kill()
	var outMu sync.Mutex
	job := newToken()
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, n)
	var writers []*lineWriter
	started := 0
	var startErr error
	for r := range n {
		cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
		cmd.Dir = opts.Dir
		cmd.Env = append(slices.Clone(base),
			"PARIO_RANK="+strconv.Itoa(r),
			"PARIO_SIZE="+strconv.Itoa(n),
			"PARIO_RENDEZVOUS="+addr,
			"PARIO_JOB="+job)
		if r == 0 {
			cmd.ExtraFiles = []*os.File{lnFile}
			cmd.Env = append(cmd.Env, "PARIO_LISTEN_FD=3")
		}
		stdout := &lineWriter{mu: &outMu, dst: opts.Stdout, prefix: opts.Prefix(r)}
		stderr := &lineWriter{mu: &outMu, dst: opts.Stderr, prefix: opts.Prefix(r)}
		writers = append(writers, stdout, stderr)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.WaitDelay = 2 * time.Second
		if opts.StopGrace > 0 {
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
			cmd.WaitDelay = max(cmd.WaitDelay, opts.StopGrace)
			ownGroup(cmd)
		}
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			startErr = fmt.Errorf("start %s: %w", argv[0], err)
			break
		}
		started++
		go func() { exits <- exit{r, cmd.Wait()} }()
	}
	lnFile.Close()

	var failed []RankExit
	var grace <-chan time.Time
	firstFailed := -1
	killed := false
	pending := started
	if startErr != nil {
		// The ranks started cannot meet the missing ones: end them now,
		// the start failure first among the failures.
		firstFailed = started
		failed = append(failed, RankExit{Rank: started, Err: startErr})
		killed = true
		kill()
	}
	for pending > 0 {
		select {
		case e := <-exits:
			pending--
			if e.err == nil {
				continue
			}
			f := RankExit{Rank: e.rank, Err: e.err}
			if killed && firstFailed >= 0 {
				f.Killed = true
				if startErr != nil {
					f.Err = fmt.Errorf("%w (killed: rank %d could not start)", f.Err, firstFailed)
				} else {
					f.Err = fmt.Errorf("%w (killed %v after rank %d failed)", f.Err, opts.Grace, firstFailed)
				}
			}
			failed = append(failed, f)
			if firstFailed < 0 {
				firstFailed = e.rank
				t := time.NewTimer(opts.Grace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			grace = nil
			killed = true
			kill()
		}
	}
	for _, w := range writers {
		w.flush()
	}
	if len(failed) == 0 {
		return nil
	}
	slices.SortFunc(failed, func(a, b RankExit) int { return a.Rank - b.Rank })
	le := &LaunchError{Failed: failed, First: slices.IndexFunc(failed, func(f RankExit) bool { return f.Rank == firstFailed })}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", le, ctx.Err())
	}
	return le
}

func withoutVars(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}

// lineWriter prefixes each complete line and writes it whole to dst, so
// that the lines of different ranks do not mix.
type lineWriter struct {
	mu     *sync.Mutex
	dst    io.Writer
	prefix string
	buf    []byte
}

const maxLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i+1])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) >= maxLine { // a very long line goes out in pieces
		w.emit(append(w.buf, '\n'))
		w.buf = nil
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(append(w.buf, '\n'))
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dst.Write(append([]byte(w.prefix), line...))
}
