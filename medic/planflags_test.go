package medic_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLIPlanRefusesAbsurdFlags: the cost model's flags out of any
// meaningful range are usage errors naming the flag, for plan and send;
// no prediction prints NaN, Inf, a negative time or hundreds of digits.
// Before, --rtt -1s predicted -3.4 s, --app-time NaN or Inf printed NaN
// and +Inf, and --bandwidth 1e-300 a 300-digit time (all exit 0).
func TestCLIPlanRefusesAbsurdFlags(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "out.txt")
	os.WriteFile(f, report(2000), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rtt", "-1s"}, "--rtt -1s: want 0 to 1h0m0s"},
		{[]string{"--rtt", "2h"}, "--rtt 2h0m0s: want 0 to 1h0m0s"},
		{[]string{"--app-time", "-5"}, "--app-time -5: want 0 to"},
		{[]string{"--app-time", "NaN"}, "--app-time NaN: want 0 to"},
		{[]string{"--app-time", "Inf"}, "--app-time +Inf: want 0 to"},
		{[]string{"--app-time", "1e308"}, "--app-time 1e+308: want 0 to"},
		{[]string{"--bandwidth", "1e-300"}, "--bandwidth 1e-300 B/s: want at least 1 B/s"},
	} {
		for _, cmd := range [][]string{
			{"medic", "plan", f, "--plugin", "zstd,raw", "--bandwidth", "1MB/s"},
			{"medic", "send", f, "127.0.0.1:1", "--key", f},
		} {
			args := append(append([]string{}, cmd...), c.args...)
			out, code := run(t, args...)
			if code != 2 || !strings.Contains(out, c.want) {
				t.Errorf("%s: exit %d, want 2 saying %q:\n%s", strings.Join(args, " "), code, c.want, out)
			}
		}
	}
	// In range, nothing is NaN, Inf or negative.
	out, code := run(t, "medic", "plan", f, "--plugin", "zstd,raw", "--bandwidth", "1", "--rtt", "1h", "--app-time", "1e9")
	if code != 0 || strings.Contains(out, "NaN") || strings.Contains(out, "Inf") || regexp.MustCompile(` -\d`).MatchString(out) {
		t.Errorf("plan at the bounds: exit %d:\n%s", code, out)
	}
}

// TestCLISendAutoUnreachable: send --auto to a receiver it cannot reach
// says so and prints no report. Before, a report of nothing came first:
// "auto: output 575.1 KiB; link , RTT 0.0 ms", "sent  first: ".
func TestCLISendAutoUnreachable(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if out, code := run(t, "medic", "keygen", key); code != 0 {
		t.Fatal(out)
	}
	f := filepath.Join(dir, "out.txt")
	os.WriteFile(f, report(2000), 0o644)
	out, code := run(t, "medic", "send", f, "127.0.0.1:1", "--key", key, "--spool", filepath.Join(dir, "spool"), "--auto")
	if code != 1 || !strings.Contains(out, "connect to receiver 127.0.0.1:1") || strings.Contains(out, "auto:") || strings.Contains(out, "first:") {
		t.Errorf("send --auto to a closed port: exit %d, want 1 with the connection's error alone:\n%s", code, out)
	}
}
