package rank

import "fmt"

// procLimit is one bound on the processes this host lets Launch start.
type procLimit struct {
	what  string // the limit and what is using it, for the message
	avail int    // tasks (processes and threads) that may still start under it
}

// CheckLaunch says why n ranks cannot be launched on this host, or nil: a
// count outside 1..MaxSize, or more processes than a limit on this user
// or host leaves room for (RLIMIT_NPROC, the cgroup's pids.max,
// kernel.pid_max, kernel.threads-max, less the tasks already running).
// Each rank needs at least two tasks, so a count above a bound cannot
// start; one below it still may not (a rank has several threads), and
// then Launch's error names the first that could not start. The
// check is here rather than left to fork: a launcher that ran out of
// processes half-way through 100,000 ranks crashed (pthread_create
// failed) or named every rank it had to kill.
func CheckLaunch(n int) error {
	if n < 1 || n > MaxSize {
		return fmt.Errorf("%d ranks: want 1 to %d (rank.MaxSize)", n, MaxSize)
	}
	return checkLimits(n, procLimits())
}

// tasksPerRank is the fewest tasks a launched rank takes: its process, and
// the launcher's thread blocked waiting for it.
const tasksPerRank = 2

func checkLimits(n int, limits []procLimit) error {
	for _, l := range limits {
		if most := max(l.avail, 0) / tasksPerRank; n > most {
			return fmt.Errorf("%d ranks: this host has room for at most %d (%s; a rank takes %d tasks: its process and the launcher's thread waiting for it)", n, most, l.what, tasksPerRank)
		}
	}
	return nil
}
