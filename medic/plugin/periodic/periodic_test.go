package periodic

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"pgregory.net/rapid"

	"github.com/pario/pario/medic"
)

type tb interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

func roundTrip(t tb, raw []byte) ([]byte, Stats) {
	t.Helper()
	m, st, err := EncodeTrace(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTrace(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, raw) {
		t.Fatalf("round trip differs (%d vs %d bytes, %+v)", len(got), len(raw), st)
	}
	return m, st
}

func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := GenConfig{
			Ranks:     rapid.IntRange(1, 12).Draw(t, "ranks"),
			Iters:     rapid.IntRange(0, 40).Draw(t, "iters"),
			Step:      rapid.Float64Range(0.01, 5).Draw(t, "step"),
			Noise:     rapid.Float64Range(0, 0.5).Draw(t, "noise"),
			Irregular: rapid.Float64Range(0, 0.5).Draw(t, "irregular"),
			Seed:      rapid.Uint64().Draw(t, "seed"),
		}
		roundTrip(t, Format(Generate(c)))
	})
}

func TestRoundTripArbitraryEvents(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 200).Draw(t, "n")
		evs := make([]Event, n)
		for i := range evs {
			evs[i] = Event{
				Time: rapid.Int64Range(0, 1<<40).Draw(t, "time"),
				Rank: rapid.Int64Range(0, 1<<20).Draw(t, "rank"),
				Kind: rapid.SampledFrom([]string{"send", "recv", "barrier", "x_y"}).Draw(t, "kind"),
				Peer: rapid.Int64Range(-1<<20, 1<<20).Draw(t, "peer"),
				Tag:  rapid.Int64Range(-1, 1<<30).Draw(t, "tag"),
				Size: rapid.Int64Range(0, 1<<50).Draw(t, "size"),
			}
		}
		raw := Format(evs)
		back, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(Format(back), raw) {
			t.Fatal("Parse/Format not inverse")
		}
		roundTrip(t, raw)
	})
}

func TestEdgeCases(t *testing.T) {
	aperiodic := Generate(GenConfig{Ranks: 1, Iters: 1, Seed: 1})
	for i := range aperiodic {
		aperiodic[i].Size = int64(i * i * 7919 % 100003)
	}
	for name, raw := range map[string][]byte{
		"empty":        nil,
		"one event":    []byte("0.01 0 send 1 10 8\n"),
		"aperiodic":    Format(aperiodic),
		"not a trace":  []byte("hello\nworld"),
		"no newline":   []byte("0.01 0 send 1 10 8"),
		"noncanonical": []byte("0.01 0 send 01 10 8\n"),
		"binary":       {0, 1, 2, 255, '\n'},
	} {
		t.Run(name, func(t *testing.T) { roundTrip(t, raw) })
	}
}

// realistic is the trace the size targets are measured on: 16 ranks, 500
// iterations of a halo exchange, 5 ms timestamp jitter, occasional I/O.
func realistic() []byte {
	return Format(Generate(GenConfig{Ranks: 16, Iters: 500, Noise: 0.005, Irregular: 0.01, Seed: 42}))
}

func TestSizeTargets(t *testing.T) {
	raw := realistic()
	t0 := time.Now()
	m, st := roundTrip(t, raw)
	el := time.Since(t0)
	z, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	zl := len(z.EncodeAll(raw, nil))
	z.Close()
	zb, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	zbl := len(zb.EncodeAll(raw, nil))
	zb.Close()
	t.Logf("trace %d events, %d bytes; period %d records (%s); metadata %d bytes: %.1fx smaller than raw, %.2fx smaller than zstd -3 (%d bytes, %.1fx), %.2fx smaller than zstd best (%d bytes); encode+decode %v",
		st.Events, len(raw), st.Period, st.Mode, len(m), float64(len(raw))/float64(len(m)), float64(zl)/float64(len(m)), zl, float64(len(raw))/float64(zl), float64(zbl)/float64(len(m)), zbl, el.Round(time.Millisecond))
	if st.Mode != "columnar" || st.Period == 0 {
		t.Errorf("no period used: %+v", st)
	}
	if r := float64(len(raw)) / float64(len(m)); r < 10 {
		t.Errorf("only %.1fx smaller than raw, want >= 10x", r)
	}
	if r := float64(zl) / float64(len(m)); r < 2 {
		t.Errorf("only %.2fx smaller than zstd, want >= 2x", r)
	}
}

func TestDetectPeriod(t *testing.T) {
	// Without irregular events a period is one iteration-group: the
	// barrier/bcast every fourth iteration makes it four iterations long.
	for _, ranks := range []int{2, 4, 8} {
		evs := Generate(GenConfig{Ranks: ranks, Iters: 64, Seed: uint64(ranks)})
		want := ranks * (4*6 + 2)
		if got := DetectPeriod(evs); got != want {
			t.Errorf("%d ranks: period %d, want %d", ranks, got, want)
		}
	}
	// Jitter reorders the merged events; the period still shows.
	evs := Generate(GenConfig{Ranks: 16, Iters: 200, Noise: 0.005, Seed: 7})
	if got, want := DetectPeriod(evs), 16*(4*6+2); got != want {
		t.Errorf("noisy 16 ranks: period %d, want %d", got, want)
	}
}

// TestDetectPeriodHarmonic: the FFT's peak bin is a harmonic (it points at
// a fraction of the period), the autocorrelation's first strong peak is not.
func TestDetectPeriodHarmonic(t *testing.T) {
	harmonics := 0
	for seed := uint64(1); seed <= 8; seed++ {
		evs := Generate(GenConfig{Ranks: 4, Iters: 64, Seed: seed})
		want := 4 * (4*6 + 2)
		if got := DetectPeriod(evs); got != want {
			t.Errorf("seed %d: period %d, want %d", seed, got, want)
		}
		fp := fftPeakPeriod(evs)
		if fp < float64(want)*0.9 {
			harmonics++
			t.Logf("seed %d: FFT peak bin says period %.1f (harmonic %.1f), autocorrelation %d", seed, fp, float64(want)/fp, want)
		}
	}
	if harmonics == 0 {
		t.Fatal("the FFT peak was never a harmonic: the test shows nothing")
	}
}

func TestPlugin(t *testing.T) {
	p, err := medic.Lookup("periodic")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.clog")
	raw := realistic()
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var meta, out bytes.Buffer
	if err := p.Encode(context.Background(), medic.Source{Path: path}, &meta); err != nil {
		t.Fatal(err)
	}
	if err := p.Decode(context.Background(), &meta, &out, medic.Env{TempDir: dir}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), raw) {
		t.Fatal("plugin round trip differs")
	}
	if err := p.Decode(context.Background(), bytes.NewReader([]byte("junk")), &out, medic.Env{}); err == nil {
		t.Fatal("junk metadata accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("0.01 0 send 1 10 8\n12.34 3 recv -1 -1 0\n"))
	f.Add([]byte(""))
	f.Add([]byte("1.5 0 send 1 10 8\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := Parse(b)
		if err != nil {
			return
		}
		if !bytes.Equal(Format(evs), b) {
			t.Fatalf("Format(Parse(%q)) = %q", b, Format(evs))
		}
	})
}

func FuzzDecode(f *testing.F) {
	m, _, _ := EncodeTrace(Format(Generate(GenConfig{Ranks: 2, Iters: 8, Seed: 3})))
	f.Add(m)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeTrace(b) // must not panic or run away
	})
}
