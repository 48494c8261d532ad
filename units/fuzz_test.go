package units

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// FuzzParseSize: no input panics; what parses is non-negative, zero only
// with AllowZero, and comes back unchanged through FormatSize; what fails
// fails with an *Error of one of the three kinds.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1m", "4k", "0", "12g", "1t", "1p", "x", "1MiB", "1kb", "-1", "9223372036854775807", "8191p", "8192p"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, allowZero bool) {
		var opts []Option
		if allowZero {
			opts = append(opts, AllowZero)
		}
		n, err := ParseSize(s, opts...)
		if err != nil {
			var ue *Error
			if !errors.As(err, &ue) || ue.Input != s || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrNotPositive) || errors.Is(err, ErrRange)) {
				t.Fatalf("ParseSize(%q): %v is not a classified *Error", s, err)
			}
			return
		}
		if n < 0 || n == 0 && !allowZero {
			t.Fatalf("ParseSize(%q, %v) = %d", s, opts, n)
		}
		back, err := ParseSize(FormatSize(n), AllowZero)
		if err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, FormatSize(n), back, err)
		}
		if strings.ContainsAny(s, " .+eE") {
			t.Fatalf("ParseSize(%q) accepted a space, fraction, sign or exponent", s)
		}
	})
}

// FuzzParseRate: no input panics; what parses is positive and finite and
// comes back within FormatRate's three digits.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"117m", "117MB/s", "117e6", "8Mbit/s", "512KiB/s", "1 GB/s", "1e400", "-1", "inf", "0", ".5", "1e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			var ue *Error
			if !errors.As(err, &ue) || ue.Input != s || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrNotPositive) || errors.Is(err, ErrRange)) {
				t.Fatalf("ParseRate(%q): %v is not a classified *Error", s, err)
			}
			return
		}
		if !(r > 0) || math.IsInf(r, 0) {
			t.Fatalf("ParseRate(%q) = %v", s, r)
		}
		txt := FormatRate(r)
		back, err := ParseRate(txt)
		if r >= 1e-300 && (err != nil || math.Abs(back-r) > 0.005*r) {
			t.Fatalf("ParseRate(FormatRate(%v) = %q) = %v, %v", r, txt, back, err)
		}
	})
}
