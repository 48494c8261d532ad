package periodic

import (
	"hash/fnv"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
)

// channels is the number of ±1 signals a record is hashed to.
const channels = 8

// signals hashes the non-time fields of each record to channels ±1 values:
// two records agree in every channel when they are the same event, and in
// about half of them otherwise.
func signals(evs []Event, width int) [channels][]float64 {
	var s [channels][]float64
	for c := range s {
		s[c] = make([]float64, len(evs))
	}
	for i, e := range evs {
		h := fnv.New64a()
		var b []byte
		b = Event{Rank: e.Rank, Kind: e.Kind, Peer: e.Peer, Tag: e.Tag, Size: e.Size}.Append(b)
		h.Write(b)
		v := h.Sum64()
		v ^= v >> 29 // fold the well-mixed high bits into the low ones
		for c := range s {
			s[c][i] = float64(int(v>>c&1)*2 - 1)
		}
	}
	// A moving sum over a few records makes the signal insensitive to
	// the reordering that timestamp jitter causes in a merged trace.
	for c := range s {
		if width <= 1 {
			break
		}
		x := s[c]
		out := make([]float64, len(x))
		var acc float64
		for i := range x {
			acc += x[i]
			if i >= width {
				acc -= x[i-width]
			}
			out[i] = acc
		}
		s[c] = out
	}
	return s
}

// smooth is the moving-sum width in records.
const smooth = 16

func fftSize(n int) int {
	m := 1
	for m < 2*n {
		m <<= 1
	}
	return m
}

// Autocorrelation returns r[l] for l in [0, n), normalised to r[0] = 1:
// the agreement of the (hashed, smoothed) records l apart, computed through
// the FFT (zero-padded, so linear): near 1 when the records around each
// one equal those l earlier, near 0 for unrelated ones.
func Autocorrelation(evs []Event, width int) []float64 {
	n := len(evs)
	if n == 0 {
		return nil
	}
	m := fftSize(n)
	fft := fourier.NewFFT(m)
	power := make([]complex128, m/2+1)
	x := make([]float64, m)
	sig := signals(evs, width)
	var coef []complex128
	for c := range sig {
		copy(x, sig[c])
		coef = fft.Coefficients(coef, x)
		for k, v := range coef {
			power[k] += complex(real(v)*real(v)+imag(v)*imag(v), 0)
		}
	}
	ac := fft.Sequence(nil, power)
	r := make([]float64, n)
	for l := range r {
		r[l] = ac[l] / float64(n-l)
	}
	if r[0] > 0 {
		z := r[0]
		for l := range r {
			r[l] /= z
		}
	}
	return r
}

// minStrength is the least autocorrelation a period must reach.
const minStrength = 0.3

// DetectPeriod returns the period of the trace in records — the first
// strong peak of the autocorrelation score, at least 90% as high as the
// highest peak at lags up to n/2 — or 0 when there is none. Periods shorter
// than the smoothing width (16 records) are found as a multiple.
func DetectPeriod(evs []Event) int {
	n := len(evs)
	if n < 4 {
		return 0
	}
	// The score of a lag is the mean of the exact autocorrelation (records
	// equal to those l earlier) and the smoothed one (the same events
	// nearby, robust to jitter-induced reordering).
	r := Autocorrelation(evs, 1)
	for l, v := range Autocorrelation(evs, smooth) {
		r[l] = (r[l] + v) / 2
	}
	// Lags shorter than the smoothing width overlap themselves; a period
	// that short is found as a multiple.
	if n/2 <= smooth {
		return 0
	}
	top := math.Inf(-1)
	for l := smooth; l <= n/2; l++ {
		top = math.Max(top, r[l])
	}
	if top < minStrength {
		return 0
	}
	for l := smooth; l <= n/2; l++ {
		if r[l] >= 0.9*top && r[l] >= r[l-1] && (l+1 >= n || r[l] >= r[l+1]) {
			return l
		}
	}
	return 0
}

// fftPeakPeriod is the naive estimate the package avoids: the period of the
// strongest non-zero frequency bin of the records' spectrum.
func fftPeakPeriod(evs []Event) float64 {
	n := len(evs)
	if n < 4 {
		return 0
	}
	m := fftSize(n)
	fft := fourier.NewFFT(m)
	power := make([]float64, m/2+1)
	x := make([]float64, m)
	sig := signals(evs, 1)
	var coef []complex128
	for c := range sig {
		copy(x, sig[c])
		coef = fft.Coefficients(coef, x)
		for k, v := range coef {
			power[k] += cmplx.Abs(v) * cmplx.Abs(v)
		}
	}
	best := 1
	for k := 2; k < len(power); k++ {
		if power[k] > power[best] {
			best = k
		}
	}
	return float64(m) / float64(best)
}
