package bench

import (
	"math"
	"testing"
)

func rec(rank int64, t [NumTimers]float64, bytes, transfers int64) RankRecord {
	return RankRecord{Rank: rank, T: t, Bytes: bytes, Transfers: transfers, Planned: transfers}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The reduction takes starts with MIN and stops with MAX, and computes the
// bandwidth over the whole window and the IOPS over the I/O window.
func TestReduceWindows(t *testing.T) {
	recs := []RankRecord{
		rec(0, [NumTimers]float64{1.0, 1.1, 1.2, 3.0, 3.0, 3.1}, 8<<20, 8),
		rec(1, [NumTimers]float64{0.9, 1.3, 1.4, 2.5, 2.6, 2.7}, 8<<20, 8),
		rec(2, [NumTimers]float64{1.05, 1.2, 1.25, 3.6, 3.7, 4.1}, 8<<20, 8),
	}
	r, err := Reduce("write", 3, recs)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"open", r.Open, 1.3 - 0.9},
		{"wrRd", r.WrRd, 3.6 - 1.2},
		{"close", r.Close, 4.1 - 2.6},
		{"total", r.Total, 4.1 - 0.9},
		{"bw", r.BW, float64(24<<20) / (4.1 - 0.9)},
		{"iops", r.IOPS, 24 / (3.6 - 1.2)},
		// Latency: the best rank's mean time per transfer.
		{"latency", r.Latency, (2.5 - 1.4) / 8},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if r.AggBytes != 24<<20 || r.Transfers != 24 || r.Iter != 3 || r.Access != "write" {
		t.Errorf("totals: %+v", r)
	}
	if r.FirstDone.Rank != 1 || r.LastDone.Rank != 2 {
		t.Errorf("first done rank %d, last done rank %d; want 1 and 2", r.FirstDone.Rank, r.LastDone.Rank)
	}
	if r.LastDone.Bytes != r.AggBytes || !near(r.LastDone.Elapsed, r.Total) || !near(r.LastDone.BW, r.BW) {
		t.Errorf("last done %+v should be the whole phase", r.LastDone)
	}
	if r.Stonewalled {
		t.Error("not stonewalled")
	}
}

// First done: the bytes every rank had moved when the first one closed,
// interpolated linearly between progress marks.
func TestFirstDoneInterpolates(t *testing.T) {
	fast := rec(0, [NumTimers]float64{0, 0, 0, 1, 1, 1}, 16<<20, 16)
	slow := rec(1, [NumTimers]float64{0, 0, 0, 4, 4, 4}, 16<<20, 16)
	// The slow rank did its first half in 1 s and its second half in 3 s.
	for k := range ProgressPoints {
		n := Mark(k, 16)
		if n <= 8 {
			slow.Progress[k] = float64(n) / 8
		} else {
			slow.Progress[k] = 1 + 3*float64(n-8)/8
		}
	}
	r, err := Reduce("read", 0, []RankRecord{fast, slow})
	if err != nil {
		t.Fatal(err)
	}
	d := r.FirstDone
	if d.Rank != 0 || !near(d.Elapsed, 1) {
		t.Fatalf("first done %+v, want rank 0 at 1 s", d)
	}
	if d.Transfers != 16+8 || d.Bytes != 24<<20 {
		t.Errorf("first done moved %d transfers / %d bytes, want 24 / %d", d.Transfers, d.Bytes, 24<<20)
	}
	if !near(d.BW, float64(24<<20)) {
		t.Errorf("first done BW %v", d.BW)
	}
	// Without marks, the rank is assumed to progress evenly.
	slow.Progress = [ProgressPoints]float64{}
	r, _ = Reduce("read", 0, []RankRecord{fast, slow})
	if r.FirstDone.Transfers != 16+4 {
		t.Errorf("without marks: %d transfers, want 20", r.FirstDone.Transfers)
	}
}

func TestReduceStonewalledAndEmpty(t *testing.T) {
	a := rec(0, [NumTimers]float64{0, 0, 0, 1, 1, 1}, 3<<20, 3)
	a.Planned = 10
	r, err := Reduce("write", 0, []RankRecord{a})
	if err != nil || !r.Stonewalled {
		t.Fatalf("stonewalled = %v, %v", r.Stonewalled, err)
	}
	if _, err := Reduce("write", 0, nil); err == nil {
		t.Error("no records: want an error")
	}
	// A rank that moved nothing does not make the latency zero.
	idle := rec(1, [NumTimers]float64{0, 0, 0, 0, 0, 0}, 0, 0)
	r, _ = Reduce("write", 0, []RankRecord{a, idle})
	if !near(r.Latency, 1.0/3) {
		t.Errorf("latency %v, want 1/3", r.Latency)
	}
}

// The summary is IOR's: max, min, mean, population standard deviation of
// the bandwidth and of the operation rate (over the total time), and the
// mean time.
func TestSummarize(t *testing.T) {
	res := []Result{
		{AggBytes: 100 << 20, Total: 1},
		{AggBytes: 100 << 20, Total: 2},
		{AggBytes: 100 << 20, Total: 4},
	}
	s := Summarize("write", res, 1<<20)
	bws := []float64{100, 50, 25}
	mean := (100.0 + 50 + 25) / 3
	var v float64
	for _, b := range bws {
		v += (b - mean) * (b - mean)
	}
	sd := math.Sqrt(v / 3) // population, not sample
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"max", s.BWMax / mebi, 100}, {"min", s.BWMin / mebi, 25}, {"mean", s.BWMean / mebi, mean}, {"sd", s.BWStd / mebi, sd},
		{"ops max", s.OPsMax, 100}, {"ops min", s.OPsMin, 25}, {"ops mean", s.OPsMean, mean}, {"ops sd", s.OPsSD, sd},
		{"mean time", s.MeanTime, 7.0 / 3},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.XSize != 100<<20 || s.Reps != 3 {
		t.Errorf("xsize %d reps %d", s.XSize, s.Reps)
	}
	one := Summarize("read", res[:1], 1<<20)
	if one.BWStd != 0 || one.BWMax != one.BWMin {
		t.Errorf("one repetition: %+v", one)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := RankRecord{Rank: 7, Bytes: 1 << 40, Transfers: 12345, Planned: 20000, Errors: 3}
	for i := range r.T {
		r.T[i] = float64(i) * 1.5
	}
	for i := range r.Progress {
		r.Progress[i] = float64(i) / 7
	}
	got, err := unmarshalRecord(r.marshal())
	if err != nil || got != r {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := unmarshalRecord(make([]byte, 3)); err == nil {
		t.Error("short record: want an error")
	}
}

func TestMarks(t *testing.T) {
	for _, planned := range []int64{1, 5, 16, 17, 1000} {
		prev := int64(0)
		for k := range ProgressPoints {
			m := Mark(k, planned)
			if m < prev || m > planned {
				t.Fatalf("planned %d: mark %d = %d after %d", planned, k, m, prev)
			}
			prev = m
		}
		if prev != planned {
			t.Errorf("planned %d: last mark %d", planned, prev)
		}
	}
}
