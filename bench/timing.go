package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The six timers of a phase, as IOR's: each rank records them; starts
// reduce with MIN and stops with MAX across ranks.
const (
	OpenStart = iota
	OpenStop
	IOStart
	IOStop
	CloseStart
	CloseStop
	NumTimers
)

// ProgressPoints is how many progress marks a rank records per phase:
// the time at which it had done each 1/ProgressPoints of its planned
// transfers. They give the aggregate bytes at any moment (for the
// elbencho-style "first done" figures) without timing every transfer.
const ProgressPoints = 16

// RankRecord is what one rank reports after one timed phase. Times are
// seconds since the run's common epoch (rank 0's clock at the start).
type RankRecord struct {
	Rank      int64
	T         [NumTimers]float64
	Bytes     int64 // bytes moved
	Transfers int64 // calls made
	Planned   int64 // calls planned (more than Transfers after a stonewall)
	// Progress[k] is the time when Transfers reached Mark(k, Planned); 0
	// when it did not.
	Progress [ProgressPoints]float64
	Errors   int64
}

// Mark is the number of transfers after which progress mark k is taken.
func Mark(k int, planned int64) int64 {
	return (int64(k+1)*planned + ProgressPoints - 1) / ProgressPoints
}

const recordSize = 8 * (1 + NumTimers + 4 + ProgressPoints)

func (r *RankRecord) marshal() []byte {
	b := make([]byte, 0, recordSize)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Rank))
	for _, t := range r.T {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t))
	}
	for _, v := range []int64{r.Bytes, r.Transfers, r.Planned, r.Errors} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	for _, t := range r.Progress {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t))
	}
	return b
}

func unmarshalRecord(b []byte) (RankRecord, error) {
	var r RankRecord
	if len(b) != recordSize {
		return r, fmt.Errorf("rank record: %d bytes, want %d", len(b), recordSize)
	}
	u := func() uint64 { v := binary.LittleEndian.Uint64(b); b = b[8:]; return v }
	r.Rank = int64(u())
	for i := range r.T {
		r.T[i] = math.Float64frombits(u())
	}
	r.Bytes, r.Transfers, r.Planned, r.Errors = int64(u()), int64(u()), int64(u()), int64(u())
	for i := range r.Progress {
		r.Progress[i] = math.Float64frombits(u())
	}
	return r, nil
}

// Done is an elbencho-style figure: the state of the whole test when the
// first (or last) rank finished.
type Done struct {
	Rank      int     // the rank that finished
	Elapsed   float64 // seconds from the first open to that rank's close
	Bytes     int64   // bytes all ranks had moved by then
	Transfers int64
	BW        float64 // bytes/s: Bytes / Elapsed
	IOPS      float64 // Transfers / Elapsed
}

// Result is one phase of one repetition, reduced over the ranks.
type Result struct {
	Access    string // "write" or "read"
	Iter      int
	Block     int64 // the test's block and transfer sizes, for the tables
	Xfer      int64
	AggBytes  int64 // bytes moved by all ranks (IOR's aggFileSizeForBW)
	Transfers int64
	Open      float64 // max open stop - min open start
	WrRd      float64 // max I/O stop - min I/O start
	Close     float64 // max close stop - min close start
	Total     float64 // max close stop - min open start
	BW        float64 // bytes/s: AggBytes / Total
	IOPS      float64 // Transfers / WrRd
	Latency   float64 // min over ranks of (I/O time / transfers)
	FirstDone Done
	LastDone  Done
	Ranks     []RankRecord
	// Stonewalled is set when some rank stopped at the -D deadline.
	Stonewalled bool
}

// Reduce combines the ranks' records of one phase the way IOR does:
// starts MIN, stops MAX; bandwidth is the aggregate bytes over the window
// from the first open to the last close; IOPS the transfers over the
// window from the first I/O start to the last I/O stop.
func Reduce(access string, iter int, recs []RankRecord) (Result, error) {
	if len(recs) == 0 {
		return Result{}, errors.New("bench: no rank records to reduce")
	}
	r := Result{Access: access, Iter: iter, Ranks: recs, Latency: math.Inf(1)}
	var red [NumTimers]float64
	for i := range red {
		if i%2 == 0 {
			red[i] = math.Inf(1)
		} else {
			red[i] = math.Inf(-1)
		}
	}
	for _, rec := range recs {
		for i, t := range rec.T {
			if i%2 == 0 {
				red[i] = min(red[i], t)
			} else {
				red[i] = max(red[i], t)
			}
		}
		r.AggBytes += rec.Bytes
		r.Transfers += rec.Transfers
		if rec.Transfers > 0 {
			r.Latency = min(r.Latency, (rec.T[IOStop]-rec.T[IOStart])/float64(rec.Transfers))
		}
		if rec.Transfers < rec.Planned {
			r.Stonewalled = true
		}
	}
	if math.IsInf(r.Latency, 1) {
		r.Latency = 0
	}
	r.Open = red[OpenStop] - red[OpenStart]
	r.WrRd = red[IOStop] - red[IOStart]
	r.Close = red[CloseStop] - red[CloseStart]
	r.Total = red[CloseStop] - red[OpenStart]
	r.BW = rate(float64(r.AggBytes), r.Total)
	r.IOPS = rate(float64(r.Transfers), r.WrRd)

	first, last := 0, 0
	for i, rec := range recs {
		if rec.T[CloseStop] < recs[first].T[CloseStop] {
			first = i
		}
		if rec.T[CloseStop] > recs[last].T[CloseStop] {
			last = i
		}
	}
	r.FirstDone = doneAt(recs, first, red[OpenStart])
	r.LastDone = doneAt(recs, last, red[OpenStart])
	return r, nil
}

func rate(n, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return n / secs
}

// doneAt is the state when rank recs[i] closed its file.
func doneAt(recs []RankRecord, i int, start float64) Done {
	at := recs[i].T[CloseStop]
	d := Done{Rank: int(recs[i].Rank), Elapsed: at - start}
	for _, rec := range recs {
		x := transfersAt(rec, at)
		d.Transfers += int64(math.Round(x))
		if rec.Transfers > 0 {
			d.Bytes += int64(math.Round(x * float64(rec.Bytes) / float64(rec.Transfers)))
		}
	}
	d.BW = rate(float64(d.Bytes), d.Elapsed)
	d.IOPS = rate(float64(d.Transfers), d.Elapsed)
	return d
}

// transfersAt estimates how many transfers rec had done at time t, by
// linear interpolation between its progress marks (and its I/O start and
// stop).
func transfersAt(rec RankRecord, t float64) float64 {
	if t >= rec.T[IOStop] {
		return float64(rec.Transfers)
	}
	if t <= rec.T[IOStart] {
		return 0
	}
	pt, pn := rec.T[IOStart], 0.0
	for k, mt := range rec.Progress {
		n := Mark(k, rec.Planned)
		if mt == 0 || n > rec.Transfers {
			break
		}
		if t <= mt {
			return interp(pt, pn, mt, float64(n), t)
		}
		pt, pn = mt, float64(n)
	}
	return interp(pt, pn, rec.T[IOStop], float64(rec.Transfers), t)
}

func interp(t0, n0, t1, n1, t float64) float64 {
	if t1 <= t0 {
		return n1
	}
	return n0 + (n1-n0)*(t-t0)/(t1-t0)
}

// Summary is IOR's "Summary of all tests" line for one operation over the
// repetitions. Bandwidths are bytes/s; OPs are transfers of TransferSize
// per second over the total time, as IOR computes them.
type Summary struct {
	Operation                      string
	BWMax, BWMin, BWMean, BWStd    float64
	OPsMax, OPsMin, OPsMean, OPsSD float64
	MeanTime                       float64 // mean of the total times
	XSize                          int64   // aggregate bytes of the first repetition
	Reps                           int
}

// Summarize computes the summary of results (one per repetition, same
// operation): max, min, mean and population standard deviation of the
// bandwidth and of the operation rate, and the mean time.
func Summarize(op string, results []Result, transferSize int64) Summary {
	s := Summary{Operation: op, Reps: len(results)}
	if len(results) == 0 {
		return s
	}
	bw := make([]float64, len(results))
	ops := make([]float64, len(results))
	for i, r := range results {
		bw[i] = rate(float64(r.AggBytes), r.Total)
		ops[i] = rate(float64(r.AggBytes)/float64(transferSize), r.Total)
		s.MeanTime += r.Total
	}
	s.MeanTime /= float64(len(results))
	s.BWMax, s.BWMin, s.BWMean, s.BWStd = stats(bw)
	s.OPsMax, s.OPsMin, s.OPsMean, s.OPsSD = stats(ops)
	s.XSize = results[0].AggBytes
	return s
}

// stats returns max, min, mean and population standard deviation.
func stats(v []float64) (mx, mn, mean, sd float64) {
	mx, mn = v[0], v[0]
	for _, x := range v {
		mx, mn = max(mx, x), min(mn, x)
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mx, mn, mean, math.Sqrt(sd / float64(len(v)))
}
