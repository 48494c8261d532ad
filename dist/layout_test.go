package dist

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseLayout(t *testing.T) {
	cases := []struct {
		in   string
		want Layout
		text string // canonical String()
	}{
		{"simple_stripe", Layout{SimpleStripe, "strip_size=65536", 0, ""}, "simple_stripe:strip_size=65536"},
		{"simple_stripe:strip_size=1m", Layout{SimpleStripe, "strip_size=1048576", 0, ""}, "simple_stripe:strip_size=1048576"},
		{"simple_stripe:num_datafiles=3,strip_size=4K", Layout{SimpleStripe, "strip_size=4096", 3, ""}, "simple_stripe:strip_size=4096,num_datafiles=3"},
		{"simple_stripe:num_datafiles=3", Layout{SimpleStripe, "strip_size=65536", 3, ""}, "simple_stripe:strip_size=65536,num_datafiles=3"},
		{"basic", Layout{Basic, "", 0, ""}, "basic"},
		{"basic:num_datafiles=1", Layout{Basic, "", 1, ""}, "basic:num_datafiles=1"},
		{"varstrip:strips=0:200000;1:4000000", Layout{Varstrip, "strips=0:200000;1:4000000", 0, ""}, "varstrip:strips=0:200000;1:4000000"},
		{"varstrip:strips=0:010;1:5;,num_datafiles=2", Layout{Varstrip, "strips=0:10;1:5", 2, ""}, "varstrip:strips=0:10;1:5,num_datafiles=2"},
		{"twod_stripe", Layout{TwodStripe, "num_groups=2,strip_size=65536,group_strip_factor=256", 0, ""},
			"twod_stripe:num_groups=2,strip_size=65536,group_strip_factor=256"},
		{"twod_stripe:group_strip_factor=4,num_groups=3,strip_size=1g", Layout{TwodStripe, "num_groups=3,strip_size=1073741824,group_strip_factor=4", 0, ""},
			"twod_stripe:num_groups=3,strip_size=1073741824,group_strip_factor=4"},
		// strip_size is read by units.ParseSize, like every size flag.
		{"simple_stripe:strip_size=1t", Layout{SimpleStripe, "strip_size=1099511627776", 0, ""}, "simple_stripe:strip_size=1099511627776"},
		{"simple_stripe:strip_size=64KiB", Layout{SimpleStripe, "strip_size=65536", 0, ""}, "simple_stripe:strip_size=65536"},
	}
	for _, c := range cases {
		got, err := ParseLayout(c.in)
		if err != nil {
			t.Errorf("ParseLayout(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseLayout(%q) = %+v, want %+v", c.in, got, c.want)
		}
		if s := got.String(); s != c.text {
			t.Errorf("ParseLayout(%q).String() = %q, want %q", c.in, s, c.text)
		}
		if again, err := ParseLayout(got.String()); err != nil || again != got {
			t.Errorf("ParseLayout(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
	if s := (Layout{}).String(); s != "" {
		t.Errorf("zero Layout String() = %q", s)
	}
	if l := DefaultLayout(); l.String() != "simple_stripe:strip_size=65536" {
		t.Errorf("DefaultLayout() = %v", l)
	}
}

// checkErr wants a non-nil error matching ErrInvalid whose text contains
// every fragment of want.
func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %q", what, want)
		return
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("%s: error %q does not match ErrInvalid", what, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %q, want it to contain %q", what, err, want)
	}
}

func TestParseLayoutErrors(t *testing.T) {
	long := "0:1" + strings.Repeat(";0:1", 256) // 1027 characters
	cases := []struct{ in, want string }{
		{"", "dist: empty layout"},
		{":strip_size=4k", "dist: empty distribution name"},
		{"stripe", `dist: unknown distribution "stripe"`},
		{"simple_stripe:", "simple_stripe: empty parameter list after ':'"},
		{"simple_stripe:strip_size=0", "simple_stripe: strip_size must be positive, got 0"},
		{"simple_stripe:strip_size=-4096", "simple_stripe: strip_size must be positive, got -4096"},
		{"simple_stripe:strip_size=abc", `simple_stripe: strip_size "abc": not a size`},
		{"simple_stripe:strip_size=1.5m", `simple_stripe: strip_size "1.5m": not a size`},
		{"simple_stripe:strip_size=+4k", `simple_stripe: strip_size "+4k": not a size`},
		{"simple_stripe:strip_size=1MB", `simple_stripe: strip_size "1MB": MB is ambiguous: sizes are binary, write 1m or 1MiB`},
		{"simple_stripe:strip_size=2t", "simple_stripe: strip_size 2199023255552 exceeds the limit 1099511627776"},
		{"simple_stripe:strip_size=k", `simple_stripe: strip_size "k": not a size`},
		{"simple_stripe:strip_size=99999999999999999999", `simple_stripe: strip_size "99999999999999999999": too large`},
		{"simple_stripe:strip_size=8589934592g", `simple_stripe: strip_size "8589934592g": too large`},
		{"simple_stripe:strip_size=2048g", "simple_stripe: strip_size 2199023255552 exceeds the limit 1099511627776"},
		{"simple_stripe:strip_size=1m,strip_size=2m", `simple_stripe: parameter "strip_size" given twice`},
		{"simple_stripe:stripsize=1m", `simple_stripe: unknown parameter "stripsize" (known: strip_size, num_datafiles)`},
		{"simple_stripe:strip_size", `simple_stripe: parameter "strip_size" has no '='`},
		{"simple_stripe:=5", `simple_stripe: parameter "=5" has an empty key`},
		{"simple_stripe:strip_size=1m,,", "simple_stripe: parameter 2 is empty"},
		{"simple_stripe:num_datafiles=0", "simple_stripe: num_datafiles must be positive, got 0"},
		{"simple_stripe:num_datafiles=two", `simple_stripe: num_datafiles "two" is not a decimal number`},
		{"simple_stripe:num_datafiles=1,num_datafiles=1", `simple_stripe: parameter "num_datafiles" given twice`},
		{"simple_stripe:strip_size=1099511627776,num_datafiles=8388608", "simple_stripe: strip_size 1099511627776 on 8388608 datafiles makes a stripe over"},
		{"basic:strip_size=4k", `basic: takes no parameters, got "strip_size"`},
		{"basic:num_datafiles=2", "basic: keeps everything on one datafile, num_datafiles=2 given"},
		{"varstrip", "varstrip: parameter strips is required"},
		{"varstrip:strips=", "varstrip: strips is empty"},
		{"varstrip:strips=0:10;2:10", `varstrip: strip 1 "2:10": datafile 2 with only 2 strips leaves a gap`},
		{"varstrip:strips=0:10;1:10;4:5;3:5;1:1", `varstrip: strip 2 "4:5": datafile 4 is used but datafile 2 is not`},
		{"varstrip:strips=0:10;1:0", `varstrip: strip 1 "1:0": size must be positive, got 0`},
		{"varstrip:strips=0:10;1:-5", `varstrip: strip 1 "1:-5": size "-5" is not a plain decimal byte count`},
		{"varstrip:strips=0:1k", `varstrip: strip 0 "0:1k": size "1k" is not a plain decimal byte count`},
		{"varstrip:strips=0:2199023255552", `varstrip: strip 0 "0:2199023255552": size 2199023255552 exceeds the limit`},
		{"varstrip:strips=-1:10", `varstrip: strip 0 "-1:10": datafile "-1" is not a non-negative decimal number`},
		{"varstrip:strips=0:10;1", `varstrip: strip 1 "1": want datafile:size`},
		{"varstrip:strips=0:10;;1:5", `varstrip: strip 1 "": want datafile:size`},
		{"varstrip:strips=" + long, "varstrip: strips is 1027 characters long, the limit is 1024"},
		{"varstrip:strips=0:10;1:10,num_datafiles=3", "varstrip: strips use 2 datafiles, num_datafiles=3 given"},
		{"varstrip:strip=0:10", `varstrip: unknown parameter "strip" (known: strips, num_datafiles)`},
		{"twod_stripe:groups=2", `twod_stripe: unknown parameter "groups" (known: num_groups, strip_size, group_strip_factor, num_datafiles)`},
		{"twod_stripe:num_groups=0", "twod_stripe: num_groups must be positive, got 0"},
		{"twod_stripe:group_strip_factor=-1", "twod_stripe: group_strip_factor must be positive, got -1"},
		{"twod_stripe:num_groups=4294967296", "twod_stripe: num_groups 4294967296 exceeds the limit 4294967295"},
		{"twod_stripe:strip_size=1099511627776,group_strip_factor=8388608", "twod_stripe: strip_size 1099511627776 * group_strip_factor 8388608 exceeds"},
		{"twod_stripe:strip_size=0", "twod_stripe: strip_size must be positive, got 0"},
	}
	for _, c := range cases {
		_, err := ParseLayout(c.in)
		checkErr(t, "ParseLayout("+c.in+")", err, c.want)
	}
}

func TestBuild(t *testing.T) {
	cases := []struct {
		layout    Layout
		servers   int
		datafiles int
		params    string
	}{
		{DefaultLayout(), 4, 4, "strip_size=65536"},
		{Layout{Dist: SimpleStripe}, 5, 5, "strip_size=65536"}, // non-canonical Params still build
		{Layout{SimpleStripe, "strip_size=1m", 2, ""}, 8, 2, "strip_size=1048576"},
		{Layout{Dist: Basic}, 8, 1, ""},
		{Layout{Basic, "", 1, ""}, 8, 1, ""},
		{Layout{Varstrip, "strips=0:200000;1:4000000", 0, ""}, 8, 2, "strips=0:200000;1:4000000"},
		{Layout{Varstrip, "strips=0:200000;1:4000000", 2, ""}, 2, 2, "strips=0:200000;1:4000000"},
		{Layout{Dist: TwodStripe}, 3, 3, "num_groups=2,strip_size=65536,group_strip_factor=256"},
	}
	for _, c := range cases {
		d, err := c.layout.Build(c.servers)
		if err != nil {
			t.Errorf("%+v.Build(%d): %v", c.layout, c.servers, err)
			continue
		}
		if d.Datafiles() != c.datafiles || d.Params() != c.params || d.Name() != c.layout.Dist {
			t.Errorf("%+v.Build(%d) = %s:%s on %d datafiles, want %s:%s on %d", c.layout, c.servers,
				d.Name(), d.Params(), d.Datafiles(), c.layout.Dist, c.params, c.datafiles)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		layout  Layout
		servers int
		want    string
	}{
		{Layout{}, 4, "dist: layout is unset"},
		{Layout{Dist: "raid6"}, 4, `dist: unknown distribution "raid6"`},
		{DefaultLayout(), 0, "simple_stripe: need at least one server, got 0"},
		{Layout{SimpleStripe, "", 3, ""}, 2, "simple_stripe: num_datafiles=3 but only 2 servers available"},
		{Layout{SimpleStripe, "", -1, ""}, 2, "simple_stripe: num_datafiles must be positive, got -1"},
		{Layout{SimpleStripe, "strip_size=0", 0, ""}, 2, "simple_stripe: strip_size must be positive, got 0"},
		{Layout{Basic, "", 2, ""}, 4, "basic: keeps everything on one datafile, num_datafiles=2 given"},
		{Layout{Varstrip, "strips=0:200000;1:4000000", 0, ""}, 1, `varstrip: strip 1 "1:4000000": datafile 1 beyond the 1 servers available`},
		{Layout{Varstrip, "strips=0:1;1:1;2:1;3:1;4:1;5:100", 0, ""}, 4, `varstrip: strip 4 "4:1": datafile 4 beyond the 4 servers available`},
		{Layout{Varstrip, "strips=0:200000;1:4000000", 3, ""}, 4, "varstrip: strips use 2 datafiles, num_datafiles=3 given"},
		{Layout{TwodStripe, "strip_size=1099511627776,group_strip_factor=4194304", 2, ""}, 2, "twod_stripe: strip_size 1099511627776 * group_strip_factor 4194304 on 2 datafiles makes a stripe over"},
	}
	for _, c := range cases {
		_, err := c.layout.Build(c.servers)
		checkErr(t, c.layout.String(), err, c.want)
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		name, params string
		n            int
		want         string
	}{
		{"stripes", "", 1, `dist: unknown distribution "stripes" (known: basic, simple_stripe, twod_stripe, varstrip)`},
		{SimpleStripe, "", 0, "simple_stripe: need at least one datafile, got 0"},
		{SimpleStripe, "strip_size=0", 2, "simple_stripe: strip_size must be positive, got 0"},
		{SimpleStripe, "strip_size=-1", 2, "simple_stripe: strip_size must be positive, got -1"},
		{SimpleStripe, "num_datafiles=2", 2, `simple_stripe: unknown parameter "num_datafiles"`},
		{Basic, "x=1", 1, `basic: takes no parameters, got "x"`},
		{Varstrip, "strips=5:100", 8, `varstrip: strip 0 "5:100": datafile 5 with only 1 strips leaves a gap`},
		{Varstrip, "strips=0:1;1:1;2:1;3:1;4:1;5:100", 4, `varstrip: strip 4 "4:1": datafile 4 beyond the 4 servers available`},
		{TwodStripe, "num_groups=-2", 4, "twod_stripe: num_groups must be positive, got -2"},
	}
	for _, c := range cases {
		_, err := New(c.name, c.params, c.n)
		checkErr(t, c.name+":"+c.params, err, c.want)
	}
}

func TestParseHints(t *testing.T) {
	cases := []struct {
		hints map[string]string
		want  Layout
	}{
		{nil, Layout{}},
		{map[string]string{}, Layout{}},
		{map[string]string{"strip_size": "1m"}, Layout{SimpleStripe, "strip_size=1048576", 0, ""}},
		{map[string]string{"dist": "simple_stripe"}, Layout{SimpleStripe, "strip_size=65536", 0, ""}},
		{map[string]string{"dist": "twod_stripe", "strip_size": "128k"}, Layout{TwodStripe, "num_groups=2,strip_size=131072,group_strip_factor=256", 0, ""}},
		{map[string]string{"dist": "basic"}, Layout{Basic, "", 0, ""}},
		{map[string]string{"varstrip_dist:string:strips": "0:200000;1:4000000"}, Layout{Varstrip, "strips=0:200000;1:4000000", 0, ""}},
		{map[string]string{"dist": "varstrip", "varstrip_dist:string:strips": "0:1;1:2"}, Layout{Varstrip, "strips=0:1;1:2", 0, ""}},
		{map[string]string{"strips": "0:1;1:2", "varstrip_dist:string:strips": "0:1;1:2"}, Layout{Varstrip, "strips=0:1;1:2", 0, ""}},
		{map[string]string{"strips": "0:1;1:2", "num_datafiles": "2"}, Layout{Varstrip, "strips=0:1;1:2", 2, ""}},
		{map[string]string{"num_datafiles": "4"}, Layout{SimpleStripe, "strip_size=65536", 4, ""}},
		{map[string]string{"layout": "basic"}, Layout{Basic, "", 0, ""}},
		{map[string]string{"layout": "simple_stripe:strip_size=4k", "num_datafiles": "2"}, Layout{SimpleStripe, "strip_size=4096", 2, ""}},
		{map[string]string{"layout": "simple_stripe:num_datafiles=2", "num_datafiles": "2"}, Layout{SimpleStripe, "strip_size=65536", 2, ""}},
	}
	for _, c := range cases {
		got, err := ParseHints(c.hints)
		if err != nil || got != c.want {
			t.Errorf("ParseHints(%v) = %+v, %v; want %+v", c.hints, got, err, c.want)
		}
	}
}

func TestParseHintsErrors(t *testing.T) {
	cases := []struct {
		hints map[string]string
		want  string
	}{
		{map[string]string{"stripe_size": "1m"}, `dist: unknown hint "stripe_size"`},
		{map[string]string{"dist": ""}, `dist: hint "dist" has an empty value`},
		{map[string]string{"dist": "raid5"}, `dist: unknown distribution "raid5"`},
		{map[string]string{"layout": "basic", "dist": "basic"}, `dist: hint "layout" cannot be combined with hint "dist"`},
		{map[string]string{"layout": "basic", "strip_size": "4k"}, `dist: hint "layout" cannot be combined with hint "strip_size"`},
		{map[string]string{"layout": "simple_stripe:num_datafiles=2", "num_datafiles": "3"}, "dist: hint num_datafiles=3 contradicts layout"},
		{map[string]string{"layout": "basic", "num_datafiles": "3"}, "basic: keeps everything on one datafile, num_datafiles=3 given"},
		{map[string]string{"layout": "basic:x"}, `basic: parameter "x" has no '='`},
		{map[string]string{"dist": "simple_stripe", "varstrip_dist:string:strips": "0:1"}, `dist: hint "varstrip_dist:string:strips" implies dist varstrip, but hint dist is "simple_stripe"`},
		{map[string]string{"strips": "0:1", "varstrip_dist:string:strips": "0:2"}, `dist: hints "strips" and "varstrip_dist:string:strips" disagree`},
		{map[string]string{"strip_size": "1m", "strips": "0:1"}, `dist: hints "strip_size" and "strips" belong to different distributions`},
		{map[string]string{"dist": "basic", "strip_size": "1m"}, `basic: takes no parameters, got "strip_size"`},
		{map[string]string{"dist": "varstrip", "strip_size": "1m", "strips": "0:1"}, `varstrip: unknown parameter "strip_size"`},
		{map[string]string{"dist": "varstrip"}, "varstrip: parameter strips is required"},
		{map[string]string{"strip_size": "-1"}, "simple_stripe: strip_size must be positive, got -1"},
		{map[string]string{"strip_size": "0"}, "simple_stripe: strip_size must be positive, got 0"},
		{map[string]string{"strip_size": "lots"}, `simple_stripe: strip_size "lots": not a size`},
		{map[string]string{"num_datafiles": "-3"}, `simple_stripe: num_datafiles "-3" is not a decimal number`},
		{map[string]string{"varstrip_dist:string:strips": "0:200000;2:4000000"}, `varstrip: strip 1 "2:4000000": datafile 2 with only 2 strips leaves a gap`},
	}
	for _, c := range cases {
		_, err := ParseHints(c.hints)
		checkErr(t, "ParseHints", err, c.want)
	}
}

func TestParseHintString(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"dist=simple_stripe, strip_size = 1m", map[string]string{"dist": "simple_stripe", "strip_size": "1m"}},
		{"varstrip_dist:string:strips=0:200000;1:4000000", map[string]string{"varstrip_dist:string:strips": "0:200000;1:4000000"}},
		{"layout=varstrip:strips=0:1;1:2", map[string]string{"layout": "varstrip:strips=0:1;1:2"}},
		{"key=", map[string]string{"key": ""}},
	}
	for _, c := range cases {
		got, err := ParseHintString(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseHintString(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}

	errCases := []struct{ in, want string }{
		{"a=1,,b=2", "dist: hint pair 2 is empty"},
		{"a=1,", "dist: hint pair 2 is empty"},
		{",a=1", "dist: hint pair 1 is empty"},
		{"dist", `dist: hint pair "dist" has no '='`},
		{"=x", `dist: hint pair "=x" has an empty key`},
		{"a=1,a=2", `dist: hint pair "a=2" repeats key "a"`},
	}
	for _, c := range errCases {
		_, err := ParseHintString(c.in)
		checkErr(t, "ParseHintString("+c.in+")", err, c.want)
	}

	// The thesis' hint, end to end.
	h, err := ParseHintString("varstrip_dist:string:strips=0:200000;1:4000000")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseHints(h)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Build(8)
	if err != nil {
		t.Fatal(err)
	}
	if df, p := d.ToPhysical(4200000); d.Datafiles() != 2 || df != 0 || p != 200000 {
		t.Errorf("thesis layout %v: %d datafiles, 4200000 -> (%d, %d)", l, d.Datafiles(), df, p)
	}
}
