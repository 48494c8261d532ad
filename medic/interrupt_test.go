package medic_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLISendInterruptedResumes: Ctrl-C (SIGINT) during a send's transfer
// exits 130 saying where it stopped and that it resumes, as a cut
// connection does, and the same command then resumes. Before, it said
// only "send out.bin: context canceled" with exit 1.
func TestCLISendInterruptedResumes(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if out, code := run(t, "medic", "keygen", key); code != 0 {
		t.Fatal(out)
	}
	dest := filepath.Join(dir, "dest")
	s := serve(t, "--key", key, "--dir", dest)
	data := make([]byte, 3<<20)
	rand.Read(data)
	src := filepath.Join(dir, "out.bin")
	os.WriteFile(src, data, 0o644)
	args := []string{"medic", "send", src, s.addr, "--key", key, "--plugin", "raw", "--spool", filepath.Join(dir, "spool"), "-q"}
	send := exec.Command(parioBin, append(args, "--bwlimit", "1MB/s")...)
	var out bytes.Buffer
	send.Stdout, send.Stderr = &out, &out
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { send.Process.Kill(); send.Wait() })
	waitFor(t, "part of the container staged", 20*time.Second, func() bool {
		for _, p := range globs(filepath.Join(dest, ".medic-staging"), "*.part") {
			if st, err := os.Stat(p); err == nil && st.Size() > 0 {
				return true
			}
		}
		return false
	})
	send.Process.Signal(syscall.SIGINT)
	err := send.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(out.String(), "interrupted (context canceled) after the receiver acknowledged") ||
		!strings.Contains(out.String(), "send again to resume") {
		t.Fatalf("send interrupted: %v, want exit 130 saying where it stopped and to send again:\n%s", err, out.String())
	}
	got, code := run(t, args...)
	if code != 0 || !strings.Contains(got, "resumed") {
		t.Fatalf("send again: exit %d, want a resumption:\n%s", code, got)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "out.bin")); !bytes.Equal(b, data) {
		t.Fatal("the stored output differs")
	}
}
