package mcmc

import (
	"bytes"
	"context"
	"testing"
)

// fuzzParams is the analysis the fuzzed files are checked against.
var fuzzParams = Params{Runs: 2, Chains: 1, Procs: 1, Taxa: 4, Gens: 2, SampleFreq: 1, SwapFreq: 1, Seed: 1, Format: MB327}

// FuzzSplit: Split never panics, and whatever it accepts it cuts into files
// that are the input end to end.
func FuzzSplit(f *testing.F) {
	file, _ := runMFG(f, fuzzParams, 1)
	f.Add(file.data)
	f.Add(file.data[:len(file.data)-1])
	f.Add([]byte("#NEXUS\n[ID: 12]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := newMemFS()
		if err := Split(context.Background(), fuzzParams, bytes.NewReader(b), int64(len(b)), "out", fs.create); err != nil {
			if len(fs.files) != 0 {
				t.Fatalf("a refused file made %d files", len(fs.files))
			}
			return
		}
		if got := concat(fs, fuzzParams.Runs); !bytes.Equal(got, b) {
			t.Fatalf("split's files (%d B) are not the input (%d B)", len(got), len(b))
		}
	})
}
