package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/pattern"
)

// Turning `pario bench`'s flags into Options, and the checks made before
// any rank starts, so that the command only declares flags and these are
// tested in process (args_test.go).

// Args are the `pario bench` flags that ParseArgs applies to the options,
// and what it needs to know about the back ends' own flags. The sizes are
// read by units flags (zero allowed, as IOR does); Check refuses the ones
// that make no test.
type Args struct {
	Block, Transfer, Segments, DataStart int64 // -b, -t, -s, --data-start
	Seed                                 int64 // --random-offset-seed
	Directives                           []string
	// Drivers are the back ends whose options are flags, by API name;
	// Set reports whether a flag was given.
	Drivers map[string]backend.Driver
	Set     func(flag string) bool
	// Analyze: the PARIO options describe the layout analysed, whatever
	// the API.
	Analyze bool
	// Collective is IOR's -c: it sets the back end's "<api>.collective"
	// option (MPIIO, HDF5, NC4).
	Collective bool
}

// ParseArgs applies a to o with IOR-like errors: the sizes, the seed, the
// IOR directives (-O), the API, and no back-end option of another API
// than o's. It returns o normalised (Options.Normalize).
func ParseArgs(o Options, a Args) (Options, error) {
	o.BlockSize, o.TransferSize, o.Segments, o.DataStart = a.Block, a.Transfer, a.Segments, a.DataStart
	o.RandomSeed = a.Seed
	// IOR's -O keys of the back ends (setAlignment, noFill, hdf5.hints...)
	// are the driver's options; the engine's own keys apply first, since
	// they may name the API.
	var forDriver [][2]string
	for _, d := range a.Directives {
		own, rest := splitDirectives(d)
		if err := o.ApplyDirectives(own); err != nil {
			return o, err
		}
		forDriver = append(forDriver, rest...)
	}
	if _, err := backend.New(o.API); err != nil {
		return o, fmt.Errorf("-a: %w", err)
	}
	if err := driverDirectives(a.Drivers[strings.ToUpper(o.API)], o.API, forDriver, a.Collective); err != nil {
		return o, err
	}
	// A back end's option with another API is a mistake worth naming.
	api := strings.ToLower(o.API)
	var bad []string
	for name, d := range a.Drivers {
		if strings.ToLower(name) == api || (a.Analyze && name == "PARIO") {
			continue
		}
		for _, opt := range d.Options() {
			if a.Set != nil && a.Set(opt.Name) {
				bad = append(bad, "--"+opt.Name)
			}
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		return o, fmt.Errorf("%s: option(s) of another API than -a %s", strings.Join(bad, ", "), strings.ToUpper(o.API))
	}
	o.Normalize()
	return o, nil
}

// splitDirectives separates one -O string into the engine's directives
// and the key/value pairs it does not know (for the back end).
func splitDirectives(s string) (own string, rest [][2]string) {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	var keep []string
	for _, d := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(d, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, known := directives[strings.ToLower(k)]; ok && k != "" && v != "" && !known {
			rest = append(rest, [2]string{k, v})
			continue
		}
		keep = append(keep, d)
	}
	return strings.Join(keep, ","), rest
}

// driverDirectives sets the back end's options from IOR's -O keys: key k
// is the option "<api>.<k>" (lower case, as IOR's keys are
// case-insensitive), or k itself when it names one ("hdf5.hints"); -c is
// "<api>.collective".
func driverDirectives(drv backend.Driver, api string, kvs [][2]string, collective bool) error {
	opts := map[string]backend.Option{}
	if drv != nil {
		for _, opt := range drv.Options() {
			opts[opt.Name] = opt
		}
	}
	prefix := strings.ToLower(api) + "."
	if collective {
		opt, ok := opts[prefix+"collective"]
		if !ok {
			return fmt.Errorf("-c: -a %s has no collective I/O (MPIIO, HDF5 and NC4 have)", strings.ToUpper(api))
		}
		if err := opt.Value.Set("true"); err != nil {
			return fmt.Errorf("-c: %w", err)
		}
	}
	for _, kv := range kvs {
		k := strings.ToLower(kv[0])
		opt, ok := opts[prefix+k]
		if !ok {
			opt, ok = opts[k]
		}
		if !ok {
			var names []string
			for n := range opts {
				names = append(names, strings.TrimPrefix(n, prefix))
			}
			slices.Sort(names)
			extra := ""
			if len(names) > 0 {
				extra = "; -a " + strings.ToUpper(api) + " takes " + strings.Join(names, ", ")
			}
			return fmt.Errorf("-O: unrecognized parameter %q (known: %s%s)", kv[0], knownDirectives(), extra)
		}
		v := kv[1]
		if opt.IsBool() {
			// IOR writes flags as 0/1.
			switch v {
			case "0":
				v = "false"
			case "1":
				v = "true"
			}
		}
		if err := opt.Value.Set(v); err != nil {
			return fmt.Errorf("-O %s: %w", kv[0], err)
		}
	}
	return nil
}

// Check validates o for a run of tasks ranks on drv before any rank
// starts, so that bad input fails once, with IOR's message, instead of in
// every rank. It includes CheckMemory for tasks ranks on this host.
func Check(o Options, tasks int, drv backend.Driver) error {
	if err := o.Validate(tasks); err != nil {
		return err
	}
	// The ranks pario launches itself all run on this host.
	if err := CheckMemory(o, tasks, AvailableMemory()); err != nil {
		return err
	}
	p := o.Pattern(tasks, 1)
	params := backend.Params{Tasks: tasks, FilePerProc: o.FilePerProc, TransferSize: o.TransferSize, BlockSize: o.BlockSize,
		Segments: o.Segments, FsyncPerWrite: o.FsyncPerWrite, Random: o.RandomOffset, Strided: o.Strided, FileSize: p.FileSize()}
	return drv.Validate(params)
}

// HasDirective reports whether any of the -O directives ds sets one of
// keys (case-insensitive, as IOR).
func HasDirective(ds []string, keys ...string) bool {
	for _, d := range ds {
		for _, kv := range strings.Split(d, ",") {
			k, _, _ := strings.Cut(kv, "=")
			for _, want := range keys {
				if strings.EqualFold(strings.TrimSpace(k), want) {
					return true
				}
			}
		}
	}
	return false
}

// AnalyzeConfig is what `pario bench --analyze` analyses the options'
// pattern against.
type AnalyzeConfig struct {
	// Layout of the test file; zero means dist.DefaultLayout.
	Layout dist.Layout
	// Servers is the number of I/O servers the layout is built on.
	Servers int
	// LinkRate and DiskRate (bytes/s, 0: unknown) bound the bandwidth.
	LinkRate, DiskRate float64
}

// Analyze returns pattern.Analyze's report of the write phase of o's
// pattern on the layout, moving no data. Its errors are usage errors.
func Analyze(o Options, c AnalyzeConfig) (*pattern.Report, error) {
	tasks := max(o.NumTasks, 1)
	if err := o.Validate(tasks); err != nil {
		return nil, err
	}
	l := c.Layout
	if l.IsZero() {
		l = dist.DefaultLayout()
	}
	d, err := l.Build(c.Servers)
	if err != nil {
		return nil, fmt.Errorf("layout %s on %d servers: %w", l, c.Servers, err)
	}
	cfg := pattern.Config{Dist: d, Servers: c.Servers, Phase: pattern.Write, LinkRate: c.LinkRate, DiskRate: c.DiskRate}
	return pattern.Analyze(o.Pattern(tasks, max(o.ReorderShift, 1)), cfg)
}
