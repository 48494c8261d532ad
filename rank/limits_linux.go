package rank

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procLimits reads the limits on starting processes that are finite here.
// A limit it cannot read is left out: the check is a bound, and Launch
// still reports a start that fails.
func procLimits() []procLimit {
	var ls []procLimit
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err == nil && rl.Cur != unix.RLIM_INFINITY && rl.Cur < 1<<62 {
		// The kernel counts the real user's tasks (threads) against it.
		if used, ok := userTasks(os.Getuid()); ok {
			ls = append(ls, procLimit{
				what:  fmt.Sprintf("RLIMIT_NPROC (ulimit -u) is %d and this user has %d tasks running", rl.Cur, used),
				avail: int(rl.Cur) - used})
		}
	}
	if max, cur, file, ok := cgroupPids(); ok {
		ls = append(ls, procLimit{what: fmt.Sprintf("%s is %d and %d tasks of the cgroup are running", file, max, cur), avail: max - cur})
	}
	if total, ok := hostTasks(); ok {
		for _, k := range []string{"pid_max", "threads-max"} {
			if v, ok := readInt("/proc/sys/kernel/" + k); ok {
				ls = append(ls, procLimit{what: fmt.Sprintf("kernel.%s is %d and %d tasks are running", k, v, total), avail: v - total})
			}
		}
	}
	return ls
}

func readInt(name string) (int, bool) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil
}

// hostTasks is the tasks (threads) running on the host: the total of
// /proc/loadavg's "runnable/total".
func hostTasks() (int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, false
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(total)
	return v, err == nil
}

// userTasks counts the threads of the processes whose real user is uid.
func userTasks(uid int) (int, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := strconv.Itoa(uid)
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // gone since the listing
		}
		var real string
		threads := 1
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch k {
			case "Uid":
				if f := strings.Fields(v); len(f) > 0 {
					real = f[0]
				}
			case "Threads":
				if t, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					threads = t
				}
			}
		}
		if real == want {
			n += threads
		}
	}
	return n, true
}

// cgroupPids is this process's cgroup's pids.max and pids.current, when
// it has a finite one (cgroup v2, or v1's pids controller).
func cgroupPids() (limit, current int, file string, ok bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0, "", false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir = filepath.Join("/sys/fs/cgroup", parts[2])
		case slices.Contains(strings.Split(parts[1], ","), "pids"):
			dir = filepath.Join("/sys/fs/cgroup/pids", parts[2])
		default:
			continue
		}
		file = filepath.Join(dir, "pids.max")
		limit, okMax := readInt(file)
		current, okCur := readInt(filepath.Join(dir, "pids.current"))
		if okMax && okCur {
			return limit, current, file, true
		}
	}
	return 0, 0, "", false
}
