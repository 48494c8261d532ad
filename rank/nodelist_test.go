package rank

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestExpandNodelist(t *testing.T) {
	tests := map[string][]string{
		"n1":                    {"n1"},
		"n[001-004]":            {"n001", "n002", "n003", "n004"},
		"a[1,3-5],b7":           {"a1", "a3", "a4", "a5", "b7"},
		"node-[01-02]-ib":       {"node-01-ib", "node-02-ib"},
		"n[8-10]":               {"n8", "n9", "n10"},
		"n[08-10]":              {"n08", "n09", "n10"},
		"n[098-100]":            {"n098", "n099", "n100"},
		"x[007]":                {"x007"},
		"r[1-2]n[01-02]":        {"r1n01", "r1n02", "r2n01", "r2n02"},
		"a[1-2],b[3,5],c":       {"a1", "a2", "b3", "b5", "c"},
		"gnode[10,20,25,37]":    {"gnode10", "gnode20", "gnode25", "gnode37"},
		"h.example.org,a_b":     {"h.example.org", "a_b"},
		"[1-2]":                 {"1", "2"},
		"cn[0-1],gpu[00-01]-ib": {"cn0", "cn1", "gpu00-ib", "gpu01-ib"},
	}
	for in, want := range tests {
		got, err := ExpandNodelist(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ExpandNodelist(%q) = %q, %v; want %q", in, got, err, want)
		}
		first, err := FirstNode(in)
		if err != nil || first != want[0] {
			t.Errorf("FirstNode(%q) = %q, %v; want %q", in, first, err, want[0])
		}
	}
}

func TestNodelistErrors(t *testing.T) {
	tests := []struct {
		in  string
		pos int
		msg string
	}{
		{"", 0, "empty"},
		{"n[1-", 1, "'[' is never closed"},
		{"n[", 1, "'[' is never closed"},
		{"n[1-3", 1, "'[' is never closed"},
		{"n[1-3,", 1, "'[' is never closed"},
		{"n[3-1]", 4, "range 3-1 runs backwards"},
		{"n1]", 2, "']' without '['"},
		{"a,,b", 2, "empty host name before ','"},
		{"a,", 2, "empty host name after ','"},
		{",a", 0, "empty host name before ','"},
		{"n[1,,2]", 4, `expected a number, found ','`},
		{"n[[1]]", 2, `expected a number, found '['`},
		{"n[a]", 2, `expected a number, found 'a'`},
		{"n[]", 2, `expected a number, found ']'`},
		{"n 1", 1, "unexpected ' '"},
		{"n[1-2x]", 5, `unexpected 'x' in '[' at position 1`},
		{"n[1234567890123456789]", 20, "number longer than 18 digits"},
	}
	for _, tt := range tests {
		_, err := ExpandNodelist(tt.in)
		var ne *NodelistError
		if !errors.As(err, &ne) || ne.Pos != tt.pos || !strings.Contains(ne.Msg, tt.msg) {
			t.Errorf("ExpandNodelist(%q) error = %v; want position %d and %q", tt.in, err, tt.pos, tt.msg)
			continue
		}
		if _, ferr := FirstNode(tt.in); ferr == nil || ferr.Error() != err.Error() {
			t.Errorf("FirstNode(%q) error = %v; want %v", tt.in, ferr, err)
		}
	}
	// Too many hosts to expand, but the first is known.
	if _, err := ExpandNodelist("n[0-999999999]"); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("ExpandNodelist(huge) error = %v", err)
	}
	if _, err := ExpandNodelist("a[0-1023]b[0-1023]c[0-1]"); err == nil {
		t.Errorf("ExpandNodelist(huge product) error = nil")
	}
	if first, err := FirstNode("n[000-999999999]"); err != nil || first != "n000" {
		t.Errorf("FirstNode(huge) = %q, %v", first, err)
	}
}

func FuzzNodelist(f *testing.F) {
	// The committed corpus in testdata/fuzz/FuzzNodelist holds more seeds.
	f.Add("n[001-004]")
	f.Fuzz(func(t *testing.T, list string) {
		hosts, err := ExpandNodelist(list)
		first, ferr := FirstNode(list)
		if ferr != nil {
			var ne *NodelistError
			if !errors.As(ferr, &ne) || ne.Pos < 0 || ne.Pos > len(list) || ne.List != list {
				t.Fatalf("FirstNode(%q): %v", list, ferr)
			}
			if err == nil {
				t.Fatalf("FirstNode(%q) failed (%v) but ExpandNodelist did not", list, ferr)
			}
			return
		}
		if err != nil {
			if !strings.Contains(err.Error(), "more than") {
				t.Fatalf("ExpandNodelist(%q): %v, but FirstNode succeeded", list, err)
			}
			return
		}
		if len(hosts) == 0 || hosts[0] != first {
			t.Fatalf("ExpandNodelist(%q) = %q, FirstNode = %q", list, hosts, first)
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[],") {
				t.Fatalf("ExpandNodelist(%q) gave host %q", list, h)
			}
			for i := 0; i < len(h); i++ {
				if !isNameByte(h[i]) {
					t.Fatalf("ExpandNodelist(%q) gave host %q", list, h)
				}
			}
		}
		if !strings.Contains(list, "[") && !slices.Equal(hosts, strings.Split(list, ",")) {
			t.Fatalf("ExpandNodelist(%q) = %q, want the comma-separated names", list, hosts)
		}
	})
}
