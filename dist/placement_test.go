package dist

import (
	"slices"
	"strings"
	"testing"
)

func TestPlacementLayout(t *testing.T) {
	tests := []struct {
		in      string
		text    string // canonical; "" for a parse error
		servers []int
		err     string
	}{
		{"simple_stripe:servers=2;5;7", "simple_stripe:strip_size=65536,num_datafiles=3,servers=2;5;7", []int{2, 5, 7}, ""},
		{"simple_stripe:servers=07;0,num_datafiles=2", "simple_stripe:strip_size=65536,num_datafiles=2,servers=7;0", []int{7, 0}, ""},
		{"varstrip:strips=0:701;1:701,servers=4;6", "varstrip:strips=0:701;1:701,num_datafiles=2,servers=4;6", []int{4, 6}, ""},
		{"basic:servers=3", "basic:num_datafiles=1,servers=3", []int{3}, ""},
		{"simple_stripe:servers=1;1", "", nil, "server 1 named twice"},
		{"simple_stripe:servers=1;x", "", nil, `"x" (datafile 1) is not a server index`},
		{"simple_stripe:servers=", "", nil, "empty server list"},
		{"simple_stripe:servers=1;2,num_datafiles=3", "", nil, "num_datafiles=3 but servers= names 2 servers"},
		{"basic:servers=1;2", "", nil, "basic"},
		{"varstrip:strips=0:1;1:1,servers=4", "", nil, "varstrip"},
	}
	for _, tt := range tests {
		l, err := ParseLayout(tt.in)
		if tt.text == "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseLayout(%q) = %v, %v; want an error with %q", tt.in, l, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseLayout(%q): %v", tt.in, err)
			continue
		}
		if l.String() != tt.text {
			t.Errorf("ParseLayout(%q) = %q, want %q", tt.in, l.String(), tt.text)
		}
		again, err := ParseLayout(l.String())
		if err != nil || again != l {
			t.Errorf("round trip of %q: %v, %v", l.String(), again, err)
		}
		p, err := l.Placement()
		if err != nil || !slices.Equal(p, tt.servers) {
			t.Errorf("%q: placement %v, %v; want %v", tt.in, p, err, tt.servers)
		}
		if _, err := l.Build(8); err != nil {
			t.Errorf("%q on 8 servers: %v", tt.in, err)
		}
	}
	l, _ := ParseLayout("simple_stripe:servers=2;5;7")
	if _, err := l.Build(6); err == nil || !strings.Contains(err.Error(), "datafile 2 on server 7, but the cluster has 6 servers") {
		t.Errorf("server 7 of 6: %v", err)
	}
	if p, err := DefaultLayout().Placement(); p != nil || err != nil {
		t.Errorf("unpinned layout: placement %v, %v", p, err)
	}
	if got := FormatServers([]int{3, 0, 12}); got != "3;0;12" {
		t.Errorf("FormatServers = %q", got)
	}
}
