package fusefs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/internal/testbin"
	"github.com/pario/pario/metrics/metricstest"
)

// TestParioMountMetrics runs `pario mount --embedded --metrics`, writes,
// reads and stats through the mount, and checks the FUSE, client and
// server series the one endpoint shows.
func TestParioMountMetrics(t *testing.T) {
	dir := t.TempDir()
	_, out, _ := mountCommand(t, dir, "mount", "--embedded", "--metrics", "127.0.0.1:0")
	// A directory made before the mount holds its lease is not delegated.
	addr := waitMountLease(t, out)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read back: %v (equal %v)", err, bytes.Equal(back, data))
	}
	// A missing name is a successful negative lookup for FUSE (cached by
	// the kernel), so the error counted is a failing rmdir's.
	if err := os.MkdirAll(filepath.Join(dir, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Rmdir(filepath.Join(dir, "d")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir of a directory with an entry: %v, want ENOTEMPTY", err)
	}
	// An unlink in a directory the mount made is answered by the mount.
	// A file still open there is not (its data must outlive the name), and
	// the kernel sends the release of a closed file after close(2) has
	// returned: the unlink waits for it.
	x := filepath.Join(dir, "d", "e", "x")
	if err := os.WriteFile(x, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(x); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, addr, "pario_mount_open_files", 0)
	if err := os.Remove(x); err != nil {
		t.Fatal(err)
	}

	checks := []struct {
		name string
		want map[string]string
		min  float64
	}{
		{"pario_fuse_requests_total", map[string]string{"op": "create", "result": "ok"}, 1},
		{"pario_fuse_requests_total", map[string]string{"op": "write", "result": "ok"}, 1},
		{"pario_fuse_requests_total", map[string]string{"op": "rmdir", "result": "error"}, 1},
		{"pario_fuse_errors_total", map[string]string{"kind": "ENOTEMPTY"}, 1},
		{"pario_fuse_request_duration_seconds", map[string]string{"op": "write"}, 1},
		{"pario_mount_write_bytes_total", nil, float64(len(data))},
		{"pario_client_requests_total", map[string]string{"service": "data", "op": "write", "result": "ok"}, 1},
		{"pario_client_request_bytes_total", map[string]string{"service": "data", "op": "write", "direction": "out"}, float64(len(data))},
		{"pario_requests_total", map[string]string{"service": "data", "op": "write", "result": "ok"}, 1},
		{"pario_mount_unlinks_here_total", nil, 1},
		{"pario_mount_pending_here", nil, 0},
		{"pario_mount_open_files", nil, 0},
		// The metadata server's side: this mount's lease, and d and d/e,
		// which it made, delegated to it.
		{"pario_meta_leases", nil, 1},
		{"pario_meta_delegations", nil, 2},
		{"pario_meta_recalls_total", nil, 0},
		{"pario_mount_write_behind_bytes", nil, 0},
		{"pario_mount_memory_used_bytes", nil, 0},
		{"pario_mount_memory_budget_bytes", nil, fusefs.DefaultMemory},
		// The mount's own memory, as the Go runtime and the kernel see it.
		{"go_memstats_heap_inuse_bytes", nil, 1},
		{"process_resident_memory_bytes", nil, 1},
	}
	// Closing the file may finish after close(2) returns to the kernel
	// (release is asynchronous), so the counters are read until they
	// settle.
	var failed []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		fams := metricstest.Scrape(t, addr)
		failed = nil
		for _, c := range checks {
			if v, ok := metricstest.Sum(fams, c.name, c.want); !ok || v < c.min {
				failed = append(failed, c.name)
				t.Logf("%s%v = %v (present %v), want at least %v", c.name, c.want, v, ok, c.min)
			}
		}
		if len(failed) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(failed) > 0 {
		t.Fatalf("series below their minimum: %v", failed)
	}
}

// waitMetric waits until the unlabelled series name of the mount whose
// metrics address is addr equals want.
func waitMetric(t *testing.T, addr, name string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v, ok := metricstest.Sum(metricstest.Scrape(t, addr), name, nil)
		if ok && v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v (present %v) after 10 s, want %v", name, v, ok, want)
		}
	}
}

// waitMountLease waits until a `pario mount --metrics 127.0.0.1:0`
// process, whose output is out, holds its cache lease (taken after it is
// mounted), and returns its metrics address.
func waitMountLease(t *testing.T, out *testbin.LockedBuffer) string {
	t.Helper()
	m := regexp.MustCompile(`metrics: http://([^/\s]+)/metrics`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("pario mount printed no metrics address:\n%s", out.String())
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if lease, ok := metricstest.Sum(metricstest.Scrape(t, m[1]), "pario_mount_lease_seconds", nil); ok && lease > 0 {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatal("the mount took no cache lease in 10 s (pario_mount_lease_seconds)")
		}
	}
}
