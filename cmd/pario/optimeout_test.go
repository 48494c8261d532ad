package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --op-timeout bounds a command's first call too, the one that connects
// to the metadata server: `pario --op-timeout 2s ls /` against a metadata
// server that hangs (it accepts and never says hello) fails within about
// 2 s, naming it. Before, the connection had a fixed 30 s whatever
// --op-timeout said (more, or less).
func TestOpTimeoutBoundsTheConnection(t *testing.T) {
	cf, ln := hungMeta(t)
	const opTimeout = 2 * time.Second
	start := time.Now()
	out, err := runErr(cf, "--op-timeout", opTimeout.String(), "ls", "/")
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "metadata server ("+ln.Addr().String()+")") {
		t.Fatalf("pario ls against a hung metadata server: %v after %v\n%s\nwant exit status 1 and an error naming it", err, took, out)
	}
	// Far from both 2 s and the 30 s it took before, on a loaded machine.
	if took > 15*time.Second {
		t.Fatalf("pario --op-timeout %v ls took %v against a hung metadata server", opTimeout, took)
	}
	t.Logf("failed after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
}

// pario bench -a PARIO's ranks take --op-timeout too: against the same
// hung metadata server, `pario --op-timeout 2s bench -a PARIO` fails
// within about 2 s. Before, its ranks dialled for a fixed 30 s and then
// made calls bounded by 60 s, whatever --op-timeout said.
func TestOpTimeoutBoundsBenchRanks(t *testing.T) {
	cf, ln := hungMeta(t)
	const opTimeout = 2 * time.Second
	start := time.Now()
	out, err := runErr(cf, "--op-timeout", opTimeout.String(), "bench", "-a", "PARIO", "-N", "1", "-b", "1m", "-t", "1m", "-o", "pario:/x")
	took := time.Since(start)
	if err == nil || !strings.Contains(out, ln.Addr().String()) {
		t.Fatalf("pario bench -a PARIO against a hung metadata server: %v after %v\n%s\nwant a failure naming it", err, took, out)
	}
	if took > 15*time.Second {
		t.Fatalf("pario --op-timeout %v bench -a PARIO took %v against a hung metadata server", opTimeout, took)
	}
	t.Logf("failed after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
}

// hungMeta is a metadata server that hangs (it accepts and never says
// hello: the kernel completes the connections of a listener nobody
// accepts on) and a client's cluster file naming it.
func hungMeta(t *testing.T) (cluster string, ln net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	dir := t.TempDir()
	if out, err := exec.Command(parioBin, "secret", filepath.Join(dir, "secret")).CombinedOutput(); err != nil {
		t.Fatalf("pario secret: %v\n%s", err, out)
	}
	cluster = filepath.Join(dir, "cluster")
	if err := os.WriteFile(cluster, []byte("secret-file secret\nmeta "+ln.Addr().String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cluster, ln
}
