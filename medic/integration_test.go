package medic_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testbin"
)

// The CLI tests run real `pario medic serve` and `pario medic send`
// processes, as a user would.

var parioBin string

func TestMain(m *testing.M) { testbin.Main(m, &parioBin) }

// needMedicCommand fails the test early, with a message that says why, when
// the binary cannot even print the medic command's help. The command is part
// of every pario binary, so this is a broken build, never a reason to skip.
func needMedicCommand(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(parioBin, "medic", "--help").CombinedOutput(); err != nil {
		t.Fatalf("pario medic --help: %v (the binary built from cmd/pario has no working medic command; main.go registers newMedicCommand)\n%s", err, out)
	}
}

type serveProc struct {
	cmd  *exec.Cmd
	addr string
	out  *testbin.LockedBuffer // its stderr (the log)
}

// serve starts `pario medic serve` and waits for its address.
func serve(t *testing.T, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(parioBin, append([]string{"medic", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	var errb testbin.LockedBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, out: &errb}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
	})
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
				got <- strings.Fields(rest)[0]
			}
		}
	}()
	select {
	case p.addr = <-got:
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not start: %s", errb.String())
	}
	return p
}

func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(parioBin, args...).CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestCLIUsageErrors(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("x"), 0o644)
	for _, args := range [][]string{
		{"medic", "send", f},
		{"medic", "send", f, "127.0.0.1:1"},
		{"medic", "send", f, "nohostport", "--key", f},
		{"medic", "serve", "--key", f},
		{"medic", "plan", f},
		{"medic", "plan", f, "--all"},
		{"medic", "send", f, "127.0.0.1:1", "--cipher", "rot13"},
	} {
		out, code := run(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, out)
		}
	}
}

func TestCLICrashedReceiverResumes(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	key, other := filepath.Join(dir, "k"), filepath.Join(dir, "k2")
	for _, k := range []string{key, other} {
		if out, code := run(t, "medic", "keygen", k); code != 0 {
			t.Fatal(out)
		}
	}
	dest := filepath.Join(dir, "dest")
	s := serve(t, "--key", key, "--dir", dest)

	// A wrong key is refused, clearly.
	small := filepath.Join(dir, "small.txt")
	os.WriteFile(small, []byte("hello\n"), 0o644)
	out, code := run(t, "medic", "send", small, s.addr, "--key", other, "--spool", filepath.Join(dir, "spool"))
	if code != 1 || !strings.Contains(out, "authentication failed") {
		t.Fatalf("wrong key: exit %d: %s", code, out)
	}

	data := make([]byte, 2<<20)
	rand.Read(data)
	src := filepath.Join(dir, "out.bin")
	os.WriteFile(src, data, 0o644)
	args := []string{"medic", "send", src, "", "--key", key, "--plugin", "raw", "--spool", filepath.Join(dir, "spool"), "--window", "131072"}
	args[3] = s.addr
	send := exec.Command(parioBin, append(args, "--bwlimit", "2MB/s")...)
	var sout bytes.Buffer
	send.Stdout, send.Stderr = &sout, &sout
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	s.cmd.Process.Signal(syscall.SIGKILL) // the receiver crashes mid-transfer
	err := send.Wait()
	if err == nil || !strings.Contains(sout.String(), "send again to resume") {
		t.Fatalf("sender after the crash: %v: %s", err, sout.String())
	}
	es, _ := os.ReadDir(dest)
	if len(es) != 1 || es[0].Name() != ".medic-staging" {
		t.Fatalf("destination after the crash: %v", es)
	}

	s2 := serve(t, "--key", key, "--dir", dest)
	args[3] = s2.addr
	out, code = run(t, args...)
	if code != 0 || !strings.Contains(out, "resumed") {
		t.Fatalf("resend: exit %d: %s", code, out)
	}
	got, _ := os.ReadFile(filepath.Join(dest, "out.bin"))
	if !bytes.Equal(got, data) {
		t.Fatal("stored output differs")
	}
	if es, _ := os.ReadDir(filepath.Join(dest, ".medic-staging")); len(es) != 0 {
		t.Fatalf("staging left: %v", es)
	}
	// --auto --plan-first follows the cost model and prints its prediction
	// beside the outcome.
	text := filepath.Join(dir, "report.txt")
	os.WriteFile(text, report(20000), 0o644)
	out, code = run(t, "medic", "send", text, s2.addr, "--key", key, "--auto", "--plan-first", "--plugin", "raw,zstd", "--bandwidth", "1MB/s", "--spool", filepath.Join(dir, "spool"))
	if code != 0 || !strings.Contains(out, "best: zstd") || !strings.Contains(out, "predicted") {
		t.Fatalf("send --auto --plan-first: exit %d: %s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "report.txt")); !bytes.Equal(got, report(20000)) {
		t.Fatal("--auto --plan-first stored output differs")
	}
	// --auto chooses while it sends and says what it sent, why, and each
	// phase's time.
	out, code = run(t, "medic", "send", text, s2.addr, "--key", key, "--auto", "--plugin", "raw,zstd", "--as", "report2.txt", "--spool", filepath.Join(dir, "spool"))
	for _, w := range []string{"sent zstd first", "phases: connect and rates", "total"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("send --auto: exit %d, want %q in: %s", code, w, out)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "report2.txt")); !bytes.Equal(got, report(20000)) {
		t.Fatal("--auto stored output differs")
	}
	// plan against the live receiver.
	out, code = run(t, "medic", "plan", src, "--plugin", "zstd", "--measure", s2.addr, "--key", key)
	if code != 0 || !strings.Contains(out, "best:") || !strings.Contains(out, "measured") {
		t.Fatalf("plan: exit %d: %s", code, out)
	}
}
