package units

import (
	"errors"
	"flag"
	"math"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	good := []struct {
		in   string
		opts []Option
		want int64
	}{
		{"1", nil, 1},
		{"4096", nil, 4096},
		{"0065536", nil, 65536},
		{"4k", nil, 4 << 10}, {"4K", nil, 4 << 10}, {"4KiB", nil, 4 << 10}, {"4kib", nil, 4 << 10},
		{"1m", nil, 1 << 20}, {"3M", nil, 3 << 20}, {"3MiB", nil, 3 << 20}, {"3MIB", nil, 3 << 20},
		{"2g", nil, 2 << 30}, {"1G", nil, 1 << 30}, {"1GiB", nil, 1 << 30},
		{"1t", nil, 1 << 40}, {"1T", nil, 1 << 40}, {"2TiB", nil, 2 << 40},
		{"1p", nil, 1 << 50}, {"1P", nil, 1 << 50}, {"1PiB", nil, 1 << 50},
		{"8589934591g", nil, 8589934591 << 30},
		{"8191p", nil, 8191 << 50},
		{"9223372036854775807", nil, math.MaxInt64},
		{"0", []Option{AllowZero}, 0},
		{"0k", []Option{AllowZero}, 0},
		{"16m", []Option{AllowZero}, 16 << 20},
	}
	for _, c := range good {
		if got, err := ParseSize(c.in, c.opts...); err != nil || got != c.want {
			t.Errorf("ParseSize(%q, %v) = %d, %v; want %d", c.in, c.opts, got, err, c.want)
		}
	}
	bad := []struct {
		in   string
		opts []Option
		kind error
		msg  string
	}{
		{"", nil, ErrSyntax, `size "": empty; want digits`},
		{"0", nil, ErrNotPositive, `size "0": must be positive`},
		{"0k", nil, ErrNotPositive, "must be positive"},
		{"-1", nil, ErrNotPositive, "must be positive"},
		{"-1k", nil, ErrNotPositive, "must be positive"},
		{"-1", []Option{AllowZero}, ErrNotPositive, "must not be negative"},
		{"+4k", nil, ErrSyntax, `size "+4k": not a size: want digits with an optional binary suffix k, m, g, t or p`},
		{"k", nil, ErrSyntax, "not a size"},
		{"4q", nil, ErrSyntax, "not a size"},
		{"1.5m", nil, ErrSyntax, "not a size"},
		{"1m5", nil, ErrSyntax, "not a size"},
		{"1 k", nil, ErrSyntax, "not a size"},
		{" 1", nil, ErrSyntax, "not a size"},
		{"1 ", nil, ErrSyntax, "not a size"},
		{"1e6", nil, ErrSyntax, "not a size"},
		{"0x10", nil, ErrSyntax, "not a size"},
		{"1kb", nil, ErrSyntax, `size "1kb": kb is ambiguous: sizes are binary, write 1k or 1KiB`},
		{"16MB", nil, ErrSyntax, "MB is ambiguous: sizes are binary, write 16m or 16MiB"},
		{"1mi", nil, ErrSyntax, "not a size"},
		{"1mibs", nil, ErrSyntax, "not a size"},
		{"1e", nil, ErrSyntax, "not a size"},
		{"9223372036854775808", nil, ErrRange, "too large"},
		{"99999999999999999999", nil, ErrRange, "too large"},
		{"8589934592g", nil, ErrRange, "too large"},
		{"8192p", nil, ErrRange, "too large"},
		{"16777216t", nil, ErrRange, "too large"},
	}
	for _, c := range bad {
		_, err := ParseSize(c.in, c.opts...)
		if !errors.Is(err, c.kind) || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ParseSize(%q, %v) = %v; want %v containing %q", c.in, c.opts, err, c.kind, c.msg)
		}
		var ue *Error
		if !errors.As(err, &ue) || ue.Input != c.in || ue.What != "size" {
			t.Errorf("ParseSize(%q): %#v is not an *Error quoting the input", c.in, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]float64{
		"1": 1, "117": 117, "117e6": 117e6, "117E6": 117e6, "1.5e+3": 1500, "2.5e-1": 0.25, ".5": 0.5,
		"117m": 117e6, "117M": 117e6, "117MB/s": 117e6, "117 MB/s": 117e6, "117mb": 117e6, " 117m ": 117e6,
		"1k": 1e3, "1kB/s": 1e3, "1g": 1e9, "1GB/s": 1e9, "1t": 1e12, "1TB/s": 1e12, "1e9": 1e9,
		"100B/s": 100, "100b": 100, "100/s": 100,
		"512KiB/s": 512 << 10, "1MiB/s": 1 << 20, "1GiB": 1 << 30, "1TiB/s": 1 << 40,
		"8bit/s": 1, "8Mbit/s": 1e6, "8mbps": 1e6, "8Gbps": 1e9, "8kbit": 1e3, "8Tbit/s": 1e12, "8bps": 1,
		"2.5 MB/s": 2.5e6,
	}
	for in, want := range good {
		if got, err := ParseRate(in); err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := []struct {
		in   string
		kind error
		msg  string
	}{
		{"", ErrSyntax, `rate "": empty; want bytes/s`},
		{"fast", ErrSyntax, `rate "fast": not a rate: want bytes/s with an optional decimal suffix k, m, g or t (117m = 117MB/s = 117e6)`},
		{"1XB/s", ErrSyntax, "not a rate"},
		{"1m/h", ErrSyntax, "not a rate"},
		{"1e", ErrSyntax, "not a rate"},
		{"e6", ErrSyntax, "not a rate"},
		{"1.2.3", ErrSyntax, "not a rate"},
		{"0x10", ErrSyntax, "not a rate"},
		{"inf", ErrSyntax, "not a rate"},
		{"NaN", ErrSyntax, "not a rate"},
		{"1_000", ErrSyntax, "not a rate"},
		{"-1MB/s", ErrNotPositive, "must be positive"},
		{"0", ErrNotPositive, "must be positive"},
		{"0m", ErrNotPositive, "must be positive"},
		{"1e400", ErrRange, "too large"},
		{"1e308t", ErrRange, "too large"},
		{"1e-400", ErrRange, "too small"},
		{"1e-323bit", ErrRange, "too small"},
	}
	for _, c := range bad {
		_, err := ParseRate(c.in)
		if !errors.Is(err, c.kind) || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ParseRate(%q) = %v; want %v containing %q", c.in, err, c.kind, c.msg)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		n                  int64
		size, exact, human string
	}{
		{0, "0", "0 B", "0 B"},
		{1000, "1000", "1000 B", "1000 B"},
		{1023, "1023", "1023 B", "1023 B"},
		{1024, "1k", "1 KiB", "1.0 KiB"},
		{1536, "1536", "1536 B", "1.5 KiB"},
		{3 << 19, "1536k", "1536 KiB", "1.5 MiB"},
		{128 << 20, "128m", "128 MiB", "128.0 MiB"},
		{3 << 30, "3g", "3 GiB", "3.0 GiB"},
		{1 << 40, "1t", "1 TiB", "1.0 TiB"},
		{5 << 50, "5p", "5 PiB", "5.0 PiB"},
		{math.MaxInt64, "9223372036854775807", "9223372036854775807 B", "8.0 EiB"},
	} {
		if got := FormatSize(c.n); got != c.size {
			t.Errorf("FormatSize(%d) = %q, want %q", c.n, got, c.size)
		}
		if got := FormatBytesExact(c.n); got != c.exact {
			t.Errorf("FormatBytesExact(%d) = %q, want %q", c.n, got, c.exact)
		}
		if got := FormatBytes(c.n); got != c.human {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.n, got, c.human)
		}
	}
	for in, want := range map[float64]string{
		0: "0 B/s", 512: "512 B/s", 1e3: "1 kB/s", 117e6: "117 MB/s", 1.25e9: "1.25 GB/s", 999.96e6: "1 GB/s",
		2e12: "2 TB/s", 1 << 20: "1.05 MB/s",
	} {
		if got := FormatRate(in); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", in, got, want)
		}
	}
}

// The flags go through the same parsers, and print what they parse.
func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	var (
		size   = int64(64 << 20)
		offset int64
		rate   float64
		list   = []int64{1 << 10}
	)
	fs.Var(SizeFlag(&size), "size", "")
	fs.Var(SizeFlag(&offset, AllowZero), "offset", "")
	fs.Var(RateFlag(&rate), "rate", "")
	fs.Var(SizeListFlag(&list), "list", "")
	if got := fs.Lookup("size").DefValue; got != "64m" {
		t.Errorf("size default shown as %q", got)
	}
	if err := fs.Parse([]string{"-size", "1t", "-offset", "0", "-rate", "117m", "-list", "64k,1m", "-list", "2g"}); err != nil {
		t.Fatal(err)
	}
	if size != 1<<40 || offset != 0 || rate != 117e6 || len(list) != 3 || list[0] != 64<<10 || list[2] != 2<<30 {
		t.Errorf("parsed size %d offset %d rate %v list %v", size, offset, rate, list)
	}
	if got := fs.Lookup("list").Value.String(); got != "[64k,1m,2g]" {
		t.Errorf("list shown as %q", got)
	}
	if got := fs.Lookup("rate").Value.String(); got != "117 MB/s" {
		t.Errorf("rate shown as %q", got)
	}
	for _, args := range [][]string{{"-size", "0"}, {"-offset", "-1"}, {"-rate", "0"}, {"-list", "1m,x"}, {"-size", "1MB"}} {
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if size != 1<<40 || rate != 117e6 {
		t.Errorf("a refused value changed the flag: size %d rate %v", size, rate)
	}
	var zero SizeValue
	if zero.String() != "" || (&RateValue{}).String() != "" {
		t.Error("zero flag values must print as empty")
	}
}
