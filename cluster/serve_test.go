package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The servers' soft memory limit leaves room within the budget for the
// program's own pages, so that a server at its limit is resident within
// its budget (scripts/soak.sh checks the peak), and never falls under
// half the budget for small ones.
func TestHeapLimitKeepsResidentMemoryWithinTheBudget(t *testing.T) {
	for _, tc := range []struct{ budgets, want int64 }{
		{256 << 20, 224 << 20},
		{5 * 256 << 20, 5*256<<20 - 32<<20},
		{48 << 20, 24 << 20},
	} {
		got := HeapLimit(tc.budgets)
		if got != tc.want {
			t.Errorf("HeapLimit(%d MiB) = %d MiB, want %d MiB", tc.budgets>>20, got>>20, tc.want>>20)
		}
		if got+ProgramPages > tc.budgets && got != tc.budgets/2 {
			t.Errorf("HeapLimit(%d MiB) = %d MiB leaves no room for the program's pages", tc.budgets>>20, got>>20)
		}
	}
}

// A cluster whose start is interrupted (Ctrl-C, SIGTERM: its context
// ends) writes no cluster file, logs no warnings about I/O servers it
// could not claim, and lets its directory go. Before, it claimed with a
// dead context, logged a warning per I/O server, wrote the cluster file
// and pario up printed "pario cluster up" before stopping.
func TestStartInterrupted(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var log bytes.Buffer
	c, err := Start(ctx, Config{Dir: dir, DataServers: 2, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err == nil {
		c.Close()
		t.Fatal("Start with its context ended: no error")
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while") {
		t.Errorf("Start with its context ended: %v, want an interruption", err)
	}
	if strings.Contains(log.String(), "WARN") {
		t.Errorf("warnings logged:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster")); err == nil {
		t.Error("a cluster file was written")
	}
	c, err = Start(context.Background(), Config{Dir: dir, DataServers: 2})
	if err != nil {
		t.Fatalf("Start after an interrupted one: %v", err)
	}
	c.Close()
}
