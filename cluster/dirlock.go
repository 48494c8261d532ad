package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A cluster directory (Config.Dir: `pario up`'s --dir) is served by one
// process at a time. Start holds an exclusive flock on DIR/cluster.lock
// from before it touches the directory until Close has synced everything,
// and writes its pid into it. The kernel lets the lock go when the process
// dies, however it dies, so the lock, not a pid that may be reused, says
// whether the cluster file beside it describes a running cluster: readers
// (Await) take the lock shared for a moment to ask.

// lockSuffix names a cluster file's lock: DIR/cluster.lock.
const lockSuffix = ".lock"

// ErrInUse is the error (wrapped) of Start on a directory that another
// process serves.
var ErrInUse = errors.New("another process serves this cluster directory")

// lockWait is how long LockDir tries for a lock held by someone else: a
// reader (Await) holds it shared for microseconds, a second cluster for
// good.
var lockWait = time.Second

// DirLock is a hold on a cluster directory (Start's, LockDir's).
type DirLock struct{ f *os.File }

// lockDir takes clusterFile's lock, exclusive, and writes this process's
// pid into it. A lock that another cluster holds is an error naming it.
func lockDir(clusterFile string) (*DirLock, error) {
	path := clusterFile + lockSuffix
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(lockWait); ; time.Sleep(10 * time.Millisecond) {
		ok, err := tryFlock(f, true)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%s is served by %s already: %w (stop it first: two processes serving one store would corrupt it)",
				filepath.Dir(clusterFile), holder(path), ErrInUse)
		}
	}
	l := &DirLock{f: f}
	if err := l.write(""); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// write records this process's pid and state in the lock file.
func (l *DirLock) write(state string) error {
	err := l.f.Truncate(0)
	if err == nil {
		_, err = l.f.WriteAt([]byte(strings.TrimSpace(strconv.Itoa(os.Getpid())+" "+state)+"\n"), 0)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", l.f.Name(), err)
	}
	return nil
}

// Serving says the cluster file is written: readers may use it.
func (l *DirLock) Serving() error { return l.write(stateServing) }

// stateServing is the state a lock file records once its cluster file is
// written.
const stateServing = "serving"

// LockDir holds the cluster directory dir as Start does, for a process
// that serves it in another way (or stands for one in a test): Serving
// once its cluster file is written, Unlock to let it go.
func LockDir(dir string) (*DirLock, error) { return lockDir(filepath.Join(dir, "cluster")) }

// LockServed takes the lock beside clusterFile, as Start does, for a
// server run from a cluster file that `pario up` wrote (pario meta
// --cluster DIR/cluster after that pario up was killed), so that commands
// reading the file find it served (Await) instead of left by a cluster
// that is gone. With no lock file beside it (a cluster file written by
// hand) there is nothing to hold: nil, nil.
func LockServed(clusterFile string) (*DirLock, error) {
	if p, err := filepath.EvalSymlinks(clusterFile); err == nil {
		clusterFile = p // as Await looks
	}
	if _, err := os.Stat(clusterFile + lockSuffix); err != nil {
		return nil, nil
	}
	l, err := lockDir(clusterFile)
	if err != nil {
		return nil, err
	}
	if err := l.Serving(); err != nil {
		l.Unlock()
		return nil, err
	}
	return l, nil
}

// Unlock lets the directory go; the lock file stays (removing it would
// let a newcomer lock a new file while a reader checks the old one).
func (l *DirLock) Unlock() {
	if l != nil {
		l.f.Close()
	}
}

// holder names the process a lock file names: "pario (pid N)", or "another
// process" when it names none.
func holder(lockPath string) string {
	if pid := lockPid(lockPath); pid > 0 {
		return fmt.Sprintf("another process (pid %d)", pid)
	}
	return "another process"
}

// lockPid is the pid written into a lock file, 0 if none is.
func lockPid(lockPath string) int {
	pid, _ := lockRecord(lockPath)
	return pid
}

// lockRecord is what a lock file holds: its holder's pid (0 if none) and
// state ("serving", or "" while the cluster starts).
func lockRecord(lockPath string) (pid int, state string) {
	b, err := os.ReadFile(lockPath)
	if err != nil {
		return 0, ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, ""
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, ""
	}
	if len(f) > 1 {
		state = f[1]
	}
	return pid, state
}

// serverState is what a cluster file's lock says about its writer.
type serverState int

const (
	noLock   serverState = iota // no lock file: a cluster file written by hand, or no flock here
	starting                    // the writer runs and has not written its cluster file yet
	running                     // the writer runs and has written its cluster file (serving, or stopping)
	gone                        // the writer is gone (killed, or stopped)
)

// stateOf asks clusterFile's lock whether the process that wrote the file
// still runs, taking the lock shared for a moment.
func stateOf(clusterFile string) serverState {
	if !haveFlock {
		return noLock
	}
	f, err := os.Open(clusterFile + lockSuffix)
	if err != nil {
		// Absent, or unreadable to this user: nothing can be told.
		return noLock
	}
	defer f.Close()
	ok, err := tryFlock(f, false)
	switch {
	case err != nil:
		return noLock
	case !ok:
		// Read after the lock was found held: a "serving" read now was
		// written by the holder, not left by a killed one.
		if _, state := lockRecord(clusterFile + lockSuffix); state == stateServing {
			return running
		}
		return starting
	}
	unflock(f)
	return gone
}

// ErrNoCluster is the error (wrapped) of Await when no cluster is running
// at the cluster file: there is none, it is left from a cluster that is no
// longer running, or the cluster did not finish starting in time.
var ErrNoCluster = errors.New("no cluster running")

type noClusterError struct{ msg string }

func (e *noClusterError) Error() string        { return e.msg }
func (e *noClusterError) Is(target error) bool { return target == ErrNoCluster }

// Await reads the cluster file at path. A cluster that is starting (its
// lock held, its file not written yet: `pario up &` and the next line of a
// script) is waited for, up to start; with no cluster file, or only one
// left by a cluster whose process is gone (a `pario up` killed with
// SIGKILL), it waits up to appear for a cluster to start, and then fails
// with ErrNoCluster. A file without a lock beside it (written by hand, for
// servers started by `pario meta` and `pario data`) is read as it is.
func Await(ctx context.Context, path string, appear, start time.Duration) (*File, error) {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p // the lock is beside the file itself
	}
	began := time.Now()
	for {
		state := stateOf(path)
		cf, err := ReadFile(path)
		switch {
		case err == nil && (state == noLock || state == running):
			return cf, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		waited := time.Since(began)
		switch {
		case (state == starting || state == running) && waited >= start:
			return nil, &noClusterError{fmt.Sprintf("no cluster file at %s: %s has held %s for %v without writing it (still starting, or stopping)",
				path, holder(path+lockSuffix), path+lockSuffix, start)}
		case (state == noLock || state == gone) && waited >= appear && err == nil:
			return nil, &noClusterError{fmt.Sprintf("the cluster file %s is left from a cluster that is no longer running (its %s, which held %s, has exited)",
				path, strings.TrimPrefix(holder(path+lockSuffix), "another "), path+lockSuffix)}
		case (state == noLock || state == gone) && waited >= appear:
			return nil, &noClusterError{fmt.Sprintf("no cluster file at %s", path)}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
