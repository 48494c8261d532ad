package bench

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCheckMemory(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		name  string
		edit  func(*Options)
		ranks int
		avail int64
		want  string // "" for accepted
	}{
		{"default fits", nil, 4, gib, ""},
		{"unknown memory", func(o *Options) { o.TransferSize, o.BlockSize = 1<<40, 1<<40 }, 1, 0, ""},
		{"one buffer too big", func(o *Options) { o.TransferSize, o.BlockSize = 1<<40, 1<<40 }, 1, 16 * gib,
			"-t 1t -b 1t: one rank on this host would need 2.0 TiB (2.0 TiB each: two transfer buffers of -t) but only 16.0 GiB of memory is available"},
		{"fits once, not four times", func(o *Options) { o.TransferSize, o.BlockSize = gib, gib }, 4, 4 * gib, "4 ranks on this host would need 8.0 GiB"},
		{"random offsets of tiny transfers", func(o *Options) { o.TransferSize, o.BlockSize, o.RandomOffset = 8, 1<<40, true }, 1, 16 * gib,
			"and -z's offset list"},
		{"strided calls over tiny blocks", func(o *Options) { o.TransferSize, o.BlockSize, o.Strided = 64<<20, 8, true }, 1, 200 << 20, "would need 256.0 MiB"},
		{"unaddressable", func(o *Options) { o.TransferSize, o.BlockSize = math.MaxInt64, math.MaxInt64 }, 1, 0, "cannot be addressed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			if tc.edit != nil {
				tc.edit(&o)
			}
			err := CheckMemory(o, tc.ranks, tc.avail)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v, want %q", err, tc.want)
			case err != nil && !errors.Is(err, ErrUsage):
				t.Errorf("%v does not match ErrUsage", err)
			}
		})
	}
}

func TestParseMemInfo(t *testing.T) {
	const text = "MemTotal:       24576000 kB\nMemFree:        20000000 kB\nMemAvailable:   23000000 kB\n"
	if got, want := parseMemInfo([]byte(text)), int64(23000000*1024); got != want {
		t.Errorf("MemAvailable %d, want %d", got, want)
	}
	for _, bad := range []string{"", "MemTotal: 5 kB\n", "MemAvailable: x kB\n", "MemAvailable: -3 kB\n"} {
		if got := parseMemInfo([]byte(bad)); got != 0 {
			t.Errorf("%q: %d, want 0 (unknown)", bad, got)
		}
	}
	if AvailableMemory() <= 0 {
		t.Log("this host's memory is unknown: CheckMemory checks only the address space")
	}
}
