package child

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// Cancelling the context kills the child's whole process group: the
// shell and the sleep it started, which a plain exec.CommandContext
// would leave running.
func TestCancelKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := Command(ctx, "sh", "-c", "sleep 300 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Fatal("Wait: nil after cancel, want the kill's error")
	}
	deadline := time.Now().Add(10 * time.Second)
	for testenv.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the shell's sleep (pid %d) still runs 10 s after the cancel", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
