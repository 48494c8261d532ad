// Package testbin builds the pario binary for tests that run real server
// processes, once per test binary.
package testbin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Run runs cmd with its standard output and error combined, and returns
// them and its exit status; a command that could not be run at all fails
// the test.
func Run(t testing.TB, cmd *exec.Cmd) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	return "", -1
}

// Build compiles github.com/pario/pario/cmd/pario into a fresh temporary
// directory and returns the binary's path and a function that removes it.
// Call it from TestMain.
func Build() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "pario-testbin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "pario")
	cmd := exec.Command("go", "build", "-o", path, "github.com/pario/pario/cmd/pario")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build pario: %v\n%s", err, out)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// Main is a TestMain for packages whose tests run the binary: it builds
// pario, stores the binary's path in *bin, runs the tests, removes the
// binary and exits with the tests' status.
func Main(m *testing.M, bin *string) {
	path, cleanup, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// LockedBuffer collects the output of server processes, which several
// goroutines of os/exec write at once; String may be called meanwhile.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
