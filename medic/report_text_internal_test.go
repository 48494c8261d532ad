package medic

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanReceiverSpeedUnknown: a receiver whose first speed probe has not
// finished answers speed 0. A plan against it regenerated here and
// labelled that g "here, scaled" though nothing scaled it, and printed
// "receiver: speed now 0.00x this site's" (the first `medic plan
// --measure` after `medic serve` started, docs/medic.md's first block).
func TestPlanReceiverSpeedUnknown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.txt")
	if err := os.WriteFile(path, bytes.Repeat([]byte("Query= seq 1\nScore = 42 bits\n"), 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Plan{Size: 60000, Receiver: &Rates{}, LocalSpeed: 1e9}
	e, from, err := p.calibrate(context.Background(), path, EncodeOptions{Plugin: "zstd", Cipher: CipherNone}, Env{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if from != GHere || e.G <= 0 {
		t.Errorf("g %v from %q, want a regeneration here labelled %q", e.G, from, GHere)
	}
	var b bytes.Buffer
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "0.00x") || !strings.Contains(out, "speed not measured yet") {
		t.Errorf("the plan says:\n%s", out)
	}
}

// TestAutoReportLinkNotMeasured: a send --auto over loopback can end
// before its acknowledgements measure the link. Its report said "link 0
// B/s (not measured (the send ended before it could be))".
func TestAutoReportLinkNotMeasured(t *testing.T) {
	r := AutoReport{Size: 2 << 20, LinkSource: "not measured: the send ended before it could be"}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	if want := "auto: output 2.0 MiB; link not measured: the send ended before it could be, RTT 0.0 ms"; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
}
