package farm

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A LOG's runs are appended whole, but not held whole in memory: a run
// that prints 32 MiB allocated more than that (a bytes.Buffer growing by
// doubling) before its output went to a scratch file past 1 MiB.
func TestLogRunsLargerThanMemoryBuffer(t *testing.T) {
	for _, tx := range []string{"a", "b"} {
		t.Run(tx, func(t *testing.T) {
			dir := t.TempDir()
			input := filepath.Join(dir, "in")
			if err := os.WriteFile(input, []byte("0\n1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			const perRun = 32 << 20
			// Each run prints perRun copies of its input's digit.
			argv := []string{"sh", "-c", fmt.Sprintf(`d=$(head -c 1); head -c %d /dev/zero | tr '\0' "$d"`, perRun)}
			out := filepath.Join(dir, "out")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			farmRun{n: 2, annotations: "in NEWSPAPER ro wo b farm=Lines\nout LOG rc wc " + tx + " farm=0", argv: argv, block: 1}.mustRun(t, input, out)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > perRun {
				t.Errorf("2 runs of %d MiB allocated %d MiB: their output was held in memory", perRun>>20, alloc>>20)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2*perRun {
				t.Fatalf("log of %d bytes, want %d", len(got), 2*perRun)
			}
			// Each run's output lands whole: two runs of one digit each.
			for _, half := range [][]byte{got[:perRun], got[perRun:]} {
				for i, c := range half {
					if c != half[0] {
						t.Fatalf("a run's output is not contiguous: byte %d is %q after %q", i, c, half[0])
					}
				}
			}
			if got[0] == got[perRun] {
				t.Errorf("both runs printed %q", got[0])
			}
		})
	}
}
