package mcmc

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsCheck(t *testing.T) {
	p := Params{Runs: 2, Chains: 4, Procs: 4, Taxa: 16, Gens: 100, SampleFreq: 1, SwapFreq: 1}
	good := Options{IO: "mfg", Out: "x.mfg", Lambda: "1", NodeCPUs: 2}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string // "" for accepted
	}{
		{"defaults", func(*Options) {}, ""},
		{"auto lambda", func(o *Options) { o.Lambda = "auto" }, ""},
		{"none needs no -o", func(o *Options) { o.IO, o.Out = "none", "" }, ""},
		{"bad io", func(o *Options) { o.IO = "tape" }, "--io"},
		{"lambda 0", func(o *Options) { o.Lambda = "0" }, "--lambda"},
		{"empty -o", func(o *Options) { o.Out = "" }, "-o is empty"},
		{"serial into the store", func(o *Options) { o.IO, o.InPario = "serial", true }, "--io serial writes local files"},
		{"layout of a local file", func(o *Options) { o.Layout = "varstrip" }, "--layout is for"},
		{"nodes past np", func(o *Options) { o.Nodes = 5 }, "--nodes 5"},
		{"nodes negative", func(o *Options) { o.Nodes = -1 }, "--nodes -1"},
		{"node cpus 0", func(o *Options) { o.NodeCPUs = 0 }, "--node-cpus"},
		{"node cpus huge", func(o *Options) { o.NodeCPUs = 1 << 62 }, "--node-cpus"},
		{"baseline denormal", func(o *Options) { o.Baseline = 1e-320 }, "--baseline"},
		{"baseline huge", func(o *Options) { o.Baseline = 1e308 }, "--baseline"},
		{"baseline NaN", func(o *Options) { o.Baseline = nan() }, "--baseline"},
		{"baseline ok", func(o *Options) { o.Baseline = 12.5 }, ""},
		{"unknown layout", func(o *Options) { o.Layout, o.InPario = "bogus", true }, "--layout: "},
		{"layout without a strip", func(o *Options) { o.Layout, o.InPario = "simple_stripe:strip_size=0", true }, "--layout: "},
		{"a layout", func(o *Options) { o.Layout, o.InPario = "simple_stripe:strip_size=1k", true }, ""},
		{"serial into a directory", func(o *Options) { o.IO, o.Out = "serial", "out/" }, "names a directory"},
		{"chain work negative", func(o *Options) { o.ChainWork = -time.Millisecond }, "--chain-work"},
		{"varstrip of a changing writer map", func(o *Options) { o.Layout, o.InPario = "varstrip", true }, "--layout varstrip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			q := p
			if tc.name == "varstrip of a changing writer map" {
				q.Runs, q.Procs = 3, 2
			}
			_, err := o.Check(q)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestParseMeminfo(t *testing.T) {
	total, avail, err := ParseMeminfo([]byte("MemTotal:       16384 kB\nMemFree: 1 kB\nMemAvailable:    8192 kB\n"))
	if err != nil || total != 16384<<10 || avail != 8192<<10 {
		t.Errorf("got %d %d %v", total, avail, err)
	}
	for _, bad := range []string{"", "MemTotal: 5 kB\n", "MemTotal: x kB\nMemAvailable: 3 kB\n", "MemTotal: 99999999999999999 kB\nMemAvailable: 3 kB\n"} {
		if _, _, err := ParseMeminfo([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestFileLayout(t *testing.T) {
	p := Params{Runs: 4, Chains: 2, Procs: 4, Taxa: 16, Gens: 10, SampleFreq: 1, SwapFreq: 1}
	for _, tc := range []struct {
		o    Options
		want string // the layout, or an error's words
	}{
		{Options{}, ""},
		{Options{Layout: "simple_stripe:strip_size=1k"}, "simple_stripe:strip_size=1024"},
		{Options{Layout: "bogus"}, "--layout: "},
		{Options{Layout: "varstrip"}, "varstrip:strips=0:"},
		{Options{Layout: "varstrip", Nodes: 2}, "servers="},
	} {
		l, err := tc.o.FileLayout(p, 4)
		got := l.String()
		if l.IsZero() {
			got = ""
		}
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("%+v: got %q, want %q", tc.o, got, tc.want)
		}
	}
}
