package benchutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Mount runs `pario mount` as its own process, as users do, against the
// cluster of clusterFile, and returns once dir is mounted; the function it
// returns unmounts it.
func Mount(bin, clusterFile, dir string, flags []string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := append(append([]string{"--cluster", clusterFile, "--log-level", "warn", "mount"}, flags...), dir)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = exec.Command(bin, "umount", "--lazy", dir).Run()
			_ = cmd.Process.Kill()
		}
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		if mounted(dir) {
			return stop, nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("pario mount exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	return nil, fmt.Errorf("pario mount: %s not mounted after 15 s", dir)
}

func mounted(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}
