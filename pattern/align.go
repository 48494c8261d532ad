package pattern

import (
	"fmt"
	"math/big"
	"strings"
)

// AlignUp rounds addr up to a multiple of alignment, as HDF5 places an
// object of at least the threshold's size under H5Pset_alignment. An
// alignment of 1 leaves every address alone; 0 is an error (HDF5 rejects
// it too).
func AlignUp(addr, alignment int64) (int64, error) {
	if alignment <= 0 {
		return 0, errorf("alignment must be positive, got %d", alignment)
	}
	if addr < 0 {
		return 0, errorf("address must be non-negative, got %d", addr)
	}
	r := addr % alignment
	if r == 0 {
		return addr, nil
	}
	if addr > maxInt64-(alignment-r) {
		return 0, errorf("address %d aligned to %d overflows int64", addr, alignment)
	}
	return addr + alignment - r, nil
}

const maxInt64 = 1<<63 - 1

// Alignment is how n back-to-back requests of one transfer size, starting
// at a dataset's address, meet the strips of a striped file (seed 002,
// section 5.1). A request straddles when it touches more strips than its
// length needs: a 1 MiB request on 1 MiB strips touches one strip aligned
// and two strips at any other address, so it talks to two servers.
type Alignment struct {
	Addr, Transfer, Strip int64 // bytes
	Requests              int64

	Straddling int64 // requests touching more strips than ceil(Transfer/Strip)
	// StripsMin and StripsMax are the fewest and most strips one request
	// touches.
	StripsMin, StripsMax int64
	// Pieces is the number of per-strip pieces of all requests: what the
	// storage servers receive.
	Pieces int64
}

// Aligned reports whether no request straddles.
func (a Alignment) Aligned() bool { return a.Straddling == 0 }

// StraddleFraction is the share of requests that straddle, in [0, 1].
func (a Alignment) StraddleFraction() float64 {
	if a.Requests == 0 {
		return 0
	}
	return float64(a.Straddling) / float64(a.Requests)
}

// AnalyzeAlignment counts the straddling requests of n requests of
// transfer bytes at addr, addr+transfer, ... over strips of strip bytes.
// The work is O(log strip) whatever n, transfer and strip are.
func AnalyzeAlignment(addr, transfer, strip, n int64) (Alignment, error) {
	switch {
	case addr < 0:
		return Alignment{}, errorf("dataset address must be non-negative, got %d", addr)
	case transfer <= 0:
		return Alignment{}, errorf("transfer size must be positive, got %d", transfer)
	case strip <= 0:
		return Alignment{}, errorf("strip size must be positive, got %d", strip)
	case n < 0:
		return Alignment{}, errorf("request count must be non-negative, got %d", n)
	}
	if _, ok := mul3(transfer, n, 1); !ok || addr > maxInt64-transfer*n {
		return Alignment{}, errorf("%d requests of %d bytes at %d overflow int64", n, transfer, addr)
	}
	a := Alignment{Addr: addr, Transfer: transfer, Strip: strip, Requests: n}
	if n == 0 {
		return a, nil
	}
	// With transfer-1 = q*strip + r, a request whose offset within its
	// strip is o touches q+1 strips, or q+2 when o >= strip-r: q+1 is
	// what its size needs. So the straddling requests are those k < n
	// with (addr + k*transfer) mod strip >= strip-r, counted in closed
	// form (floor sums): walking them, even over one period of the
	// offsets (strip/gcd(transfer, strip) requests), took hours for a
	// 1 TiB strip and 3-byte transfers.
	q, r := (transfer-1)/strip, (transfer-1)%strip
	need := q + 1
	a.Straddling = countModAtLeast(n, addr, transfer, strip, strip-r)
	a.StripsMin, a.StripsMax = need, need
	if a.Straddling > 0 {
		a.StripsMax = need + 1
	}
	if a.Straddling == n {
		a.StripsMin = need + 1
	}
	// Every request touches at most transfer strips, so this fits
	// (n*transfer does).
	a.Pieces = n*need + a.Straddling
	return a, nil
}

// countModAtLeast counts the k in [0, n) with (addr + k*step) mod m >= c,
// for 0 <= c <= m: [x mod m >= c] = floor((x+m-c)/m) - floor(x/m), summed
// over k as two floor sums (exact in big integers: each sum may pass
// 2^63, their difference is at most n).
func countModAtLeast(n, addr, step, m, c int64) int64 {
	bn, bstep, bm := big.NewInt(n), big.NewInt(step), big.NewInt(m)
	hi := floorSum(bn, bm, bstep, new(big.Int).Add(big.NewInt(addr), big.NewInt(m-c)))
	lo := floorSum(bn, bm, bstep, big.NewInt(addr))
	return hi.Sub(hi, lo).Int64()
}

// floorSum is the sum of floor((a*i + b)/m) for i in [0, n), n >= 0,
// m > 0, a, b >= 0, in O(log m) steps (the Euclid-like reduction).
func floorSum(n, m, a, b *big.Int) *big.Int {
	n, m, a, b = new(big.Int).Set(n), new(big.Int).Set(m), new(big.Int).Set(a), new(big.Int).Set(b)
	sum := new(big.Int)
	t, qa := new(big.Int), new(big.Int)
	for n.Sign() > 0 {
		if a.Cmp(m) >= 0 {
			// n*(n-1)/2 * (a/m)
			qa.QuoRem(a, m, a)
			t.Mul(n, new(big.Int).Sub(n, big.NewInt(1)))
			t.Rsh(t, 1)
			sum.Add(sum, t.Mul(t, qa))
		}
		if b.Cmp(m) >= 0 {
			qa.QuoRem(b, m, b)
			sum.Add(sum, t.Mul(n, qa))
		}
		yMax := new(big.Int).Mul(a, n)
		yMax.Add(yMax, b)
		if yMax.Cmp(m) < 0 {
			break
		}
		// Count lattice points the other way round: n' = yMax/m rows.
		n, b = new(big.Int).QuoRem(yMax, m, new(big.Int))
		m, a = a, m
	}
	return sum
}

// Shifted is one IOR pattern analysed twice: as configured (data at offset
// 0, what the thesis' tables call it) and as it really lands once a
// container header shifts the data (DataStart = Header). The thesis still
// calls unaligned NetCDF-4 access "1-OST" though every rank then talks to
// two servers; Actual says so.
type Shifted struct {
	Header     int64
	Configured *Report
	Actual     *Report
}

// AnalyzeShifted runs Analyze with p.DataStart = 0 and with
// p.DataStart = header.
func AnalyzeShifted(p IOR, c Config, header int64) (*Shifted, error) {
	if header < 0 {
		return nil, errorf("header size must be non-negative, got %d", header)
	}
	p.DataStart = 0
	conf, err := Analyze(p, c)
	if err != nil {
		return nil, err
	}
	p.DataStart = header
	act, err := Analyze(p, c)
	if err != nil {
		return nil, err
	}
	return &Shifted{Header: header, Configured: conf, Actual: act}, nil
}

// Changed reports whether the header moves the pattern into another class
// or makes requests straddle.
func (s *Shifted) Changed() bool {
	return s.Configured.Class() != s.Actual.Class() || s.Actual.Straddling != s.Configured.Straddling
}

// Text is two lines: the configured class and the actual one.
func (s *Shifted) Text() string {
	var b strings.Builder
	line := func(what string, r *Report) {
		fmt.Fprintf(&b, "%-10s %s; %d of %d requests straddle a strip (%.0f%%), %.2f pieces per request\n",
			what, r.Class(), r.Straddling, r.Transfers, pct(r.Straddling, r.Transfers),
			float64(r.Pieces)/float64(max(r.Transfers, 1)))
	}
	line("configured", s.Configured)
	line(fmt.Sprintf("at +%d", s.Header), s.Actual)
	return b.String()
}
