package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

func TestSynthRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.txt")
	if err := makeSynth(p, 200<<10, 2); err != nil {
		t.Fatal(err)
	}
	c := medictest.RoundTrip(t, "synth", p, nil, medic.Env{})
	if len(c) > 400 {
		t.Fatalf("synth metadata of %d bytes", len(c))
	}
}

// The harness end to end on a tiny sweep: CSV and PNG come out.
func TestExperimentSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sweep")
	}
	out := t.TempDir()
	c := config{plugins: []string{"raw", "zstd", "synth"}, ciphers: []string{"none"}, size: 200 << 10, work: 2,
		params: kvFlag{}, res: kvFlag{}, latBW: 16e6, rtts: []time.Duration{0, 20 * time.Millisecond}, latWindow: 64 << 10,
		bws: []float64{4e6, 16e6}, out: out, sweeps: []string{"latency", "bandwidth"}, reps: 1}
	if err := experiment(c); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"medic-latency.csv", "medic-latency.png", "medic-bandwidth.csv", "medic-bandwidth.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
