// Package units reads and writes the byte counts and rates that pario's
// commands, hints and reports take and print, so that every command means
// the same thing by "1m".
//
// Sizes are binary, as IOR counts them: digits with an optional suffix k, m,
// g, t or p (either case, 2^10 to 2^50), which may be spelt out as KiB, MiB,
// GiB, TiB or PiB. "1m" and "1MiB" are 1,048,576 bytes. "MB" and "kb" are
// refused rather than guessed at, since for a size they could mean either.
//
// Rates are decimal, as networks count them: bytes per second with an
// optional suffix k, m, g or t (10^3 to 10^12), which may be followed by "B"
// and "/s". "117m", "117MB/s" and "117e6" are all 117,000,000 B/s. Binary
// rates are spelt out (512KiB/s), and bit rates say so (8Mbit/s, 8Mbps).
//
// The package does no I/O and imports nothing of pario. SizeFlag, RateFlag
// and SizeListFlag put the parsers behind command-line flags (they satisfy
// pflag.Value), so a flag parses exactly as a hint or a directive does.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Errors matched with errors.Is by what ParseSize and ParseRate return,
// wrapped in an *Error that quotes the input.
var (
	ErrSyntax      = errors.New("malformed")
	ErrNotPositive = errors.New("not positive")
	ErrRange       = errors.New("out of range")
)

// An Error says which input was refused and why.
type Error struct {
	What   string // "size" or "rate"
	Input  string // as given
	Reason string // what is wrong, and what would be accepted
	Err    error  // ErrSyntax, ErrNotPositive or ErrRange
}

func (e *Error) Error() string { return fmt.Sprintf("%s %q: %s", e.What, e.Input, e.Reason) }
func (e *Error) Unwrap() error { return e.Err }

// An Option widens what ParseSize accepts.
type Option uint8

const (
	// AllowZero accepts 0, for sizes where it means "none" or "off" (an
	// offset, a read-ahead), not a degenerate request.
	AllowZero Option = 1 << iota
)

// SizeSyntax is what the size errors say is accepted.
const SizeSyntax = "want digits with an optional binary suffix k, m, g, t or p (or KiB, MiB, GiB, TiB, PiB), e.g. 64k, 1m, 10g"

// RateSyntax is what the rate errors say is accepted.
const RateSyntax = "want bytes/s with an optional decimal suffix k, m, g or t (117m = 117MB/s = 117e6), or KiB/s, MiB/s, GiB/s, or bits (8Mbit/s, 8Mbps)"

// ParseSize reads a byte count (see the package comment). Zero is refused
// unless AllowZero is given; signs, fractions, spaces and values beyond
// math.MaxInt64 are refused always.
func ParseSize(s string, opts ...Option) (int64, error) {
	var allowZero bool
	for _, o := range opts {
		allowZero = allowZero || o&AllowZero != 0
	}
	fail := func(err error, reason string) (int64, error) {
		return 0, &Error{What: "size", Input: s, Reason: reason, Err: err}
	}
	if s == "" {
		return fail(ErrSyntax, "empty; "+SizeSyntax)
	}
	if s[0] == '-' && len(s) > 1 && s[1] >= '0' && s[1] <= '9' {
		if allowZero {
			return fail(ErrNotPositive, "must not be negative")
		}
		return fail(ErrNotPositive, "must be positive")
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits, suffix := s[:i], s[i:]
	if digits == "" {
		return fail(ErrSyntax, "not a size: "+SizeSyntax)
	}
	shift, ok := sizeShift(suffix)
	if !ok {
		if l := strings.ToLower(suffix); len(l) == 2 && l[1] == 'b' && strings.IndexByte("kmgtp", l[0]) >= 0 {
			return fail(ErrSyntax, fmt.Sprintf("%s is ambiguous: sizes are binary, write %s%c or %s%ciB",
				suffix, digits, l[0], digits, l[0]-'a'+'A'))
		}
		return fail(ErrSyntax, "not a size: "+SizeSyntax)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64>>shift {
		return fail(ErrRange, "too large: a size is at most 2^63-1 bytes (8191p)")
	}
	if n == 0 && !allowZero {
		return fail(ErrNotPositive, "must be positive")
	}
	return n << shift, nil
}

// sizeShift maps a size suffix to its power of two: "" (bytes), a letter
// k/m/g/t/p, or that letter followed by "iB" (any case).
func sizeShift(suffix string) (uint, bool) {
	if suffix == "" {
		return 0, true
	}
	if len(suffix) != 1 && (len(suffix) != 3 || !strings.EqualFold(suffix[1:], "ib")) {
		return 0, false
	}
	switch suffix[0] {
	case 'k', 'K':
		return 10, true
	case 'm', 'M':
		return 20, true
	case 'g', 'G':
		return 30, true
	case 't', 'T':
		return 40, true
	case 'p', 'P':
		return 50, true
	}
	return 0, false
}

// rateUnits maps a rate's unit, lower-cased and without "/s", to bytes/s.
// The bare letters are decimal on purpose: a network's 117m is 117e6.
var rateUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"bit": 1.0 / 8, "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "tbit": 1e12 / 8,
	"bps": 1.0 / 8, "kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8, "tbps": 1e12 / 8,
}

// ParseRate reads a rate in bytes per second (see the package comment):
// a decimal number, possibly with a fraction or an exponent, and an
// optional unit. It must be positive and finite.
func ParseRate(s string) (float64, error) {
	fail := func(err error, reason string) (float64, error) {
		return 0, &Error{What: "rate", Input: s, Reason: reason, Err: err}
	}
	t := strings.TrimSpace(s)
	// The number ends at the first letter that is not an exponent's e.
	i := 0
	for i < len(t) {
		c := t[i]
		if c >= '0' && c <= '9' || c == '.' || (c == '+' || c == '-') && (i == 0 || t[i-1] == 'e' || t[i-1] == 'E') {
			i++
			continue
		}
		if (c == 'e' || c == 'E') && i > 0 && i+1 < len(t) && strings.IndexByte("0123456789+-", t[i+1]) >= 0 {
			i++
			continue
		}
		break
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	unit = strings.TrimSuffix(unit, "/s")
	mult, ok := rateUnits[unit]
	v, err := strconv.ParseFloat(t[:i], 64)
	switch {
	case t == "":
		return fail(ErrSyntax, "empty; "+RateSyntax)
	case errors.Is(err, strconv.ErrRange):
		return fail(ErrRange, "too large")
	case err != nil || !ok:
		return fail(ErrSyntax, "not a rate: "+RateSyntax)
	case v == 0 && strings.ContainsAny(mantissa(t[:i]), "123456789"):
		return fail(ErrRange, "too small: under 1 bit/s")
	case v <= 0:
		return fail(ErrNotPositive, "must be positive")
	}
	v *= mult
	if math.IsInf(v, 0) {
		return fail(ErrRange, "too large")
	}
	if v == 0 {
		return fail(ErrRange, "too small: under 1 bit/s")
	}
	return v, nil
}

// mantissa is a number's text before its exponent.
func mantissa(num string) string {
	if i := strings.IndexAny(num, "eE"); i >= 0 {
		return num[:i]
	}
	return num
}
