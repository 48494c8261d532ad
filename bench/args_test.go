package bench_test

import (
	"strings"
	"testing"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/bench/backend"
	// PARIO's options are the ones --analyze takes with any API.
	_ "github.com/pario/pario/bench/backend/pario"
	"github.com/pario/pario/dist"
)

// benchArgs is `pario bench -a API ARGS...` as the command builds it: the
// flags' defaults, then edit; flags lists the back-end flags given (as
// name=value), which are set on the drivers.
func benchArgs(t *testing.T, api string, edit func(*bench.Options, *bench.Args), flags ...string) (bench.Options, bench.Args) {
	t.Helper()
	o := bench.DefaultOptions()
	o.API = api
	a := bench.Args{Block: 1 << 20, Transfer: 256 << 10, Segments: 1, DataStart: 0, Seed: -1, Drivers: map[string]backend.Driver{}}
	set := map[string]bool{}
	for _, name := range backend.Names() {
		d, err := backend.New(name)
		if err != nil {
			t.Fatal(err)
		}
		a.Drivers[name] = d
	}
	for _, f := range flags {
		name, val, _ := strings.Cut(f, "=")
		found := false
		for _, d := range a.Drivers {
			for _, opt := range d.Options() {
				if opt.Name == name {
					if err := opt.Value.Set(val); err != nil {
						t.Fatalf("--%s: %v", f, err)
					}
					found = true
				}
			}
		}
		if !found {
			t.Fatalf("no back end has --%s", name)
		}
		set[name] = true
	}
	a.Set = func(name string) bool { return set[name] }
	if edit != nil {
		edit(&o, &a)
	}
	return o, a
}

// TestParseArgsAndCheck is `pario bench`'s bad input, in process: the
// message the command prints (with exit status 2) for each.
func TestParseArgsAndCheck(t *testing.T) {
	cases := []struct {
		name  string
		api   string
		edit  func(*bench.Options, *bench.Args)
		flags []string
		tasks int
		want  string // "" for valid input
	}{
		{"defaults", "POSIX", nil, nil, 1, ""},
		{"block not a multiple", "POSIX", func(o *bench.Options, a *bench.Args) { a.Block, a.Transfer = 4<<20, 3<<20 }, nil, 1, "block size must be a multiple of transfer size"},
		{"block below transfer", "POSIX", func(o *bench.Options, a *bench.Args) { a.Block, a.Transfer = 4<<20, 8<<20 }, nil, 1, "block size must not be smaller than transfer size"},
		{"unknown API", "FOO", nil, nil, 1, `-a: unknown API "FOO" (valid: DUMMY, MMAP, PARIO, POSIX)`},
		{"random and reorder shared", "POSIX", func(o *bench.Options, a *bench.Args) { o.RandomOffset, o.ReorderTasks = true, true }, nil, 2,
			"random offset and constant reorder tasks specified with single-shared-file"},
		{"another API's option", "MMAP", nil, []string{"posix.odirect=true"}, 1, "--posix.odirect: option(s) of another API than -a MMAP"},
		{"options of two other APIs", "DUMMY", nil, []string{"posix.odirect=true", "pario.servers=2"}, 1, "--pario.servers, --posix.odirect: option(s) of another API than -a DUMMY"},
		{"analyze takes pario's", "POSIX", func(o *bench.Options, a *bench.Args) { a.Analyze = true }, []string{"pario.servers=2"}, 1, ""},
		// A malformed size never gets here: -b, -t, -s and --data-start are
		// units flags, and pflag refuses it (TestBadInput, cmd/pario's units_test).
		{"zero transfer (the flag allows 0, as IOR)", "POSIX", func(o *bench.Options, a *bench.Args) { a.Transfer = 0 }, nil, 1, "test will not complete with zero transfer size (-t 0)"},
		{"summary format", "POSIX", func(o *bench.Options, a *bench.Args) { a.Directives = []string{"summaryFormat=XML"} }, nil, 1, `unknown summaryFormat "XML" (valid: default, JSON, CSV)`},
		{"unknown directive", "POSIX", func(o *bench.Options, a *bench.Args) { a.Directives = []string{"bogus=1"} }, nil, 1, `unrecognized parameter "bogus"`},
		{"access size", "POSIX", func(o *bench.Options, a *bench.Args) { a.Transfer = 100 }, nil, 1, "transfer size must be a multiple of access size"},
		{"odirect alignment", "POSIX", func(o *bench.Options, a *bench.Args) { a.Transfer, a.Block = 6<<10, 12<<10 }, []string{"posix.odirect=true"}, 1,
			"--posix.odirect needs transfer and block sizes that are multiples of 4096"},
		{"-W without -w", "POSIX", func(o *bench.Options, a *bench.Args) { o.CheckWrite = true }, nil, 1, "-W checks what the write phase wrote: add -w"},
		{"no repetition", "POSIX", func(o *bench.Options, a *bench.Args) { o.Repetitions = 0 }, nil, 1, "too few test repetitions"},
		{"directives set the API", "POSIX", func(o *bench.Options, a *bench.Args) { a.Directives = []string{"api=DUMMY,transferSize=64k"} }, nil, 1, ""},
		// issue 16: -t 1t died with "fatal error: runtime: out of memory".
		{"transfer larger than memory", "DUMMY", func(o *bench.Options, a *bench.Args) { a.Block, a.Transfer = 1<<40, 1<<40 }, nil, 1,
			"-t 1t -b 1t: one rank on this host would need 2.0 TiB"},
		{"ranks together larger than memory", "DUMMY", func(o *bench.Options, a *bench.Args) { a.Block, a.Transfer = 1<<40, 1<<36 }, nil, 64,
			"64 ranks on this host would need"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, a := benchArgs(t, tc.api, tc.edit, tc.flags...)
			o, err := bench.ParseArgs(o, a)
			if err == nil {
				err = bench.Check(o, tc.tasks, a.Drivers[strings.ToUpper(o.API)])
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseArgsValues(t *testing.T) {
	o, a := benchArgs(t, "POSIX", func(o *bench.Options, a *bench.Args) {
		a.Block, a.Transfer, a.Segments, a.DataStart, a.Seed = 4<<20, 64<<10, 3, 512, 7
		a.Directives = []string{"summaryFormat=JSON", "summaryFile=s.json"}
	})
	o, err := bench.ParseArgs(o, a)
	if err != nil {
		t.Fatal(err)
	}
	if o.BlockSize != 4<<20 || o.TransferSize != 64<<10 || o.Segments != 3 || o.DataStart != 512 || o.RandomSeed != 7 ||
		o.SummaryFormat != bench.FormatJSON || o.SummaryFile != "s.json" {
		t.Errorf("options %+v", o)
	}
	// Neither -w nor -r: both (Normalize).
	if !o.Write || !o.Read {
		t.Errorf("write %v, read %v; want both", o.Write, o.Read)
	}
}

func TestHasDirective(t *testing.T) {
	cases := []struct {
		ds   []string
		keys []string
		want bool
	}{
		{nil, []string{"api"}, false},
		{[]string{"summaryFormat=JSON"}, []string{"api", "testfile"}, false},
		{[]string{"summaryFormat=JSON,testFile=/x"}, []string{"api", "testfile"}, true},
		{[]string{"a=1", " API = DUMMY"}, []string{"api"}, true},
	}
	for _, tc := range cases {
		if got := bench.HasDirective(tc.ds, tc.keys...); got != tc.want {
			t.Errorf("HasDirective(%q, %q) = %v", tc.ds, tc.keys, got)
		}
	}
}

// `pario bench --analyze`: the pattern against the layout, no data moved.
func TestAnalyzeInProcess(t *testing.T) {
	o := bench.DefaultOptions()
	o.NumTasks, o.BlockSize, o.TransferSize, o.Segments, o.Write = 4, 2<<20, 1<<20, 4, true
	l, err := dist.ParseLayout("simple_stripe:strip_size=1m,num_datafiles=4")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bench.Analyze(o, bench.AnalyzeConfig{Layout: l, Servers: 4, LinkRate: 117e6, DiskRate: 200e6})
	if err != nil {
		t.Fatal(err)
	}
	// Each rank's 2 MiB block covers two 1 MiB strips: two servers each.
	if rep.Servers != 4 || rep.X != 2 || rep.Bytes != 4*4*(2<<20) || rep.Straddling != 0 {
		t.Errorf("servers %d, x %d, bytes %d, straddling %d; want 4, 2, %d, 0", rep.Servers, rep.X, rep.Bytes, 4*4*(2<<20), rep.Straddling)
	}
	// No layout: the default one.
	if rep, err := bench.Analyze(o, bench.AnalyzeConfig{Servers: 2}); err != nil || rep.Servers != 2 {
		t.Errorf("default layout on 2 servers: %+v, %v", rep, err)
	}
	bad := []struct {
		edit func(*bench.Options, *bench.AnalyzeConfig)
		want string
	}{
		{func(o *bench.Options, c *bench.AnalyzeConfig) { o.TransferSize = 3 << 20 }, "block size must"},
		{func(o *bench.Options, c *bench.AnalyzeConfig) { c.Servers = 0 }, "on 0 servers"},
	}
	for _, tc := range bad {
		o2, c := o, bench.AnalyzeConfig{Layout: l, Servers: 4}
		tc.edit(&o2, &c)
		if _, err := bench.Analyze(o2, c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// IOR's -O keys a back end owns (setAlignment, noFill, hdf5.hints in the
// cgo ones) set that back end's options; -c sets "<api>.collective".
func TestParseArgsDriverDirectives(t *testing.T) {
	o, a := benchArgs(t, "PARIO", func(_ *bench.Options, a *bench.Args) {
		a.Directives = []string{"strip-size=2m,servers=3", "pario.dist=simple_stripe,blockSize=4m # comment"}
	})
	got, err := bench.ParseArgs(o, a)
	if err != nil {
		t.Fatal(err)
	}
	if got.BlockSize != 4<<20 {
		t.Errorf("blockSize=4m beside a driver key: block %d", got.BlockSize)
	}
	d := a.Drivers["PARIO"]
	want := map[string]string{"pario.strip-size": "2m", "pario.servers": "3", "pario.dist": "simple_stripe"}
	for _, opt := range d.Options() {
		if w, ok := want[opt.Name]; ok && opt.Value.String() != w {
			t.Errorf("--%s = %q, want %q", opt.Name, opt.Value.String(), w)
		}
	}

	for _, tc := range []struct {
		name string
		edit func(*bench.Options, *bench.Args)
		want string
	}{
		{"unknown key", func(_ *bench.Options, a *bench.Args) { a.Directives = []string{"bogus=1"} },
			`-O: unrecognized parameter "bogus"`},
		{"names the driver's keys", func(_ *bench.Options, a *bench.Args) { a.Directives = []string{"setAlignment=1m"} },
			"-a PARIO takes dist, layout, servers, strip-size, strips"},
		{"bad value", func(_ *bench.Options, a *bench.Args) { a.Directives = []string{"servers=x"} },
			"-O servers: "},
		{"-c without collective I/O", func(_ *bench.Options, a *bench.Args) { a.Collective = true },
			"-c: -a PARIO has no collective I/O"},
	} {
		o, a := benchArgs(t, "PARIO", tc.edit)
		if _, err := bench.ParseArgs(o, a); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
