package main

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pario/pario/internal/testbin"
	"github.com/pario/pario/metrics/metricstest"
)

// TestUpMetrics runs `pario up --metrics 127.0.0.1:0`, finds the address
// it printed, makes directories through another pario process and checks
// that the metadata server's counter moved by exactly that many, that
// every in-process server has its budget series, and that pprof answers.
func TestUpMetrics(t *testing.T) {
	dir := t.TempDir()
	var out testbin.LockedBuffer
	cmd := exec.Command(parioBin, "up", "--dir", dir, "--servers", "2", "--metrics", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	addrRE := regexp.MustCompile(`metrics: http://([^/\s]+)/metrics`)
	var addr string
	for range 400 {
		if m := addrRE.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), "press Ctrl-C") {
			addr = m[1]
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if addr == "" {
		t.Fatalf("pario up printed no metrics address:\n%s", out.String())
	}
	cf := filepath.Join(dir, "cluster")
	const dirs = 3
	for _, d := range []string{"/a", "/b", "/c"}[:dirs] {
		run(t, cf, "mkdir", d)
	}

	var fams map[string]*dto.MetricFamily
	scrape := func() { t.Helper(); fams = metricstest.Scrape(t, addr) }
	value := func(name string, want map[string]string) (float64, bool) { return metricstest.Sum(fams, name, want) }
	// The server counts a request just after answering it: the client
	// may be a moment ahead.
	mkdirs := map[string]string{"service": "meta", "op": "mkdir", "result": "ok"}
	for range 100 {
		if scrape(); func() bool { v, _ := value("pario_requests_total", mkdirs); return v == dirs }() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v, _ := value("pario_requests_total", mkdirs); v != dirs {
		t.Errorf("metadata server's mkdir requests: %v, want %d", v, dirs)
	}
	for _, s := range []string{"meta", "data0", "data1"} {
		if _, ok := value("pario_memory_budget_bytes", map[string]string{"server": s}); !ok {
			t.Errorf("no pario_memory_budget_bytes for server %s", s)
		}
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /debug/pprof/: %s", resp.Status)
	}
}

// A metrics address other hosts can reach needs --metrics-allow-remote;
// pario up refuses before starting anything.
func TestMetricsRefusesRemoteAddress(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(parioBin, "up", "--dir", dir, "--metrics", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--metrics-allow-remote") {
		t.Errorf("pario up --metrics 0.0.0.0:0: %v, want a refusal naming --metrics-allow-remote:\n%s", err, out)
	}
	out, err = exec.Command(parioBin, "up", "--dir", dir, "--metrics-allow-remote").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "goes with --metrics") {
		t.Errorf("pario up --metrics-allow-remote alone: %v, want a usage error:\n%s", err, out)
	}
}
