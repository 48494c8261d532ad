package main

import (
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pario/pario/tune/search"
	"github.com/pario/pario/units"
)

// A flag whose name says it holds bytes or bytes/s.
var unitFlagName = regexp.MustCompile(`(^|[-.])(size|sizes|strip-size|chunk|read-ahead|write-behind|window|data-start|segments|rate|link-rate|disk-rate|bandwidth|bwlimit)$`)

// Flags named like sizes that are not byte counts for units to read, and why.
var notUnitFlags = map[string]string{
	"pario tune model --size":           "the model's M in GB (a float, the paper's unit)",
	"pario tune simulate --size":        "the model's M in GB (a float, the paper's unit)",
	"pario tune groups --size":          "the model's M in GB (a float, the paper's unit)",
	"pario tune search --strip-size":    "a MIN:MAX range; each bound is read by units.ParseSize (TestTuneSearchRangesUseUnits)",
	"pario tune search --transfer-size": "a MIN:MAX range; each bound is read by units.ParseSize (TestTuneSearchRangesUseUnits)",
	"pario bench sweep --vary":          "not a size",
	"pario advise --chunk":              "a chunk shape in elements (16x1024), read by advise.ParseDims",
	"pario medic send --measure":        "not a size",
	"pario medic plan --measure":        "not a size",
}

type unitFlag struct {
	cmd  *cobra.Command
	path string // "pario tune search --size"
	flag *pflag.Flag
}

// unitFlags walks every command of the binary and returns its flags whose
// value is one of units' flag types, failing the test for any flag named
// like a size or rate that is not one (or is not excused above).
func unitFlags(t *testing.T) []unitFlag {
	t.Helper()
	var out []unitFlag
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			path := c.CommandPath() + " --" + f.Name
			switch f.Value.(type) {
			case *units.SizeValue, *units.RateValue, *units.SizeListValue:
				out = append(out, unitFlag{c, path, f})
				return
			}
			if _, ok := notUnitFlags[path]; ok {
				return
			}
			if unitFlagName.MatchString(f.Name) || f.Value.Type() == "size" || f.Value.Type() == "rate" {
				t.Errorf("%s (%T, %s) holds bytes or bytes/s but is not a units flag", path, f.Value, f.Value.Type())
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	if len(out) < 15 {
		t.Fatalf("found only %d units flags; the walk is broken", len(out))
	}
	return out
}

// Every size and rate flag of every command is read by the same parser:
// the same input gives the same value, or the same refusal, everywhere.
func TestEveryCommandParsesUnitsAlike(t *testing.T) {
	sizes := []struct {
		in   string
		want int64
	}{{"1t", 1 << 40}, {"1T", 1 << 40}, {"16m", 16 << 20}, {"16MiB", 16 << 20}, {"4k", 4096}, {"512", 512}, {"2g", 2 << 30}, {"1p", 1 << 50}}
	badSizes := []string{"1.5m", "16MB", "-1", "x", "", "99999999999999999999"}
	rates := []struct {
		in   string
		want float64
	}{{"117m", 117e6}, {"117MB/s", 117e6}, {"117e6", 117e6}, {"1g", 1e9}, {"8Mbit/s", 1e6}, {"512KiB/s", 512 << 10}}
	badRates := []string{"0", "fast", "-1m", ""}

	seen := map[string]bool{}
	for _, uf := range unitFlags(t) {
		seen[uf.path] = true
		v := uf.flag.Value
		switch v.(type) {
		case *units.SizeValue, *units.SizeListValue:
			for _, c := range sizes {
				if err := v.Set(c.in); err != nil {
					t.Errorf("%s %s: %v", uf.path, c.in, err)
					continue
				}
				got := v.(flag.Getter).Get()
				if l, ok := got.([]int64); ok {
					got = l[len(l)-1]
				}
				if got != c.want {
					t.Errorf("%s %s = %v, want %d", uf.path, c.in, got, c.want)
				}
			}
			for _, in := range badSizes {
				// Flags that allow zero say "must not be negative" for -1:
				// the same kind of error, from the same parser.
				_, want := units.ParseSize(in)
				var ue *units.Error
				if err := v.Set(in); !errors.As(err, &ue) || !errors.Is(err, errors.Unwrap(want)) || ue.Input != in {
					t.Errorf("%s %q: error %v, want units.ParseSize's %v", uf.path, in, err, want)
				}
			}
		case *units.RateValue:
			for _, c := range rates {
				if err := v.Set(c.in); err != nil || v.(flag.Getter).Get() != c.want {
					t.Errorf("%s %s = %v, %v; want %v", uf.path, c.in, v.(flag.Getter).Get(), err, c.want)
				}
			}
			for _, in := range badRates {
				_, want := units.ParseRate(in)
				if err := v.Set(in); err == nil || err.Error() != want.Error() {
					t.Errorf("%s %q: error %v, want units.ParseRate's %v", uf.path, in, err, want)
				}
			}
			// The one meaning of m is in every --help that takes a rate.
			if !strings.Contains(uf.flag.Usage, "decimal") {
				t.Errorf("%s: usage %q does not say rates are decimal", uf.path, uf.flag.Usage)
			}
		}
	}
	// The defects of issue 17, by name: these must all be units flags.
	for _, path := range []string{
		"pario tune search --size", "pario tune calibrate --size", "pario tune calibrate --strip-size",
		"pario tune calibrate --strip-sizes", "pario tune calibrate --transfer-sizes",
		"pario bench --link-rate", "pario bench --disk-rate", "pario bench --block-size", "pario bench --transfer-size",
		"pario bench --segments", "pario bench --data-start", "pario bench --pario.strip-size",
		"pario medic send --bandwidth", "pario medic plan --bandwidth", "pario medic send --bwlimit",
		"pario cp --chunk", "pario demo --size", "pario mount --read-ahead", "pario mount --write-behind",
		"pario layout set --strip-size",
	} {
		if !seen[path] {
			t.Errorf("%s is not a units flag", path)
		}
	}
}

// `tune search --size 1t` and `tune calibrate --size 1t` are the same
// size; `bench --link-rate 117m` and `medic --bandwidth 117m` the same
// rate, 117,000,000 B/s, as bench's help says 117e6 is.
func TestIssue17UnitsAgree(t *testing.T) {
	root := newRootCommand()
	get := func(path []string, name, val string) any {
		t.Helper()
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("%v has no --%s", path, name)
		}
		if err := f.Value.Set(val); err != nil {
			t.Fatalf("%v --%s %s: %v", path, name, val, err)
		}
		g, ok := f.Value.(flag.Getter)
		if !ok {
			t.Fatalf("%v --%s is a %T, not a units flag", path, name, f.Value)
		}
		return g.Get()
	}
	search := get([]string{"tune", "search"}, "size", "1t")
	calibrate := get([]string{"tune", "calibrate"}, "size", "1t")
	if search != int64(1<<40) || calibrate != search {
		t.Errorf("--size 1t: tune search %v, tune calibrate %v; want %d", search, calibrate, int64(1<<40))
	}
	bench := get([]string{"bench"}, "link-rate", "117m")
	bench2 := get([]string{"bench"}, "link-rate", "117e6")
	medic := get([]string{"medic", "plan"}, "bandwidth", "117m")
	if bench != 117e6 || bench2 != bench || medic != bench {
		t.Errorf("117m: bench --link-rate %v (117e6: %v), medic plan --bandwidth %v; want 117000000", bench, bench2, medic)
	}
}

// The MIN:MAX ranges of tune search read each bound with units.ParseSize.
func TestTuneSearchRangesUseUnits(t *testing.T) {
	args := search.Args{Methods: "genetic", Size: 1 << 40, Objective: "model", Budget: 10,
		StripeCount: "1:4", StripSize: "1MiB:4m", TransferSize: "1024k:2m"}
	req, err := search.ParseRequest(args)
	if err != nil {
		t.Fatal(err)
	}
	dims := req.Space.Dims()
	if req.Size != 1<<40 || dims[1].Min != 1<<20 || dims[1].Max != 4<<20 || dims[2].Min != 1<<20 || dims[2].Max != 2<<20 {
		t.Errorf("size %d, strip %d:%d, transfer %d:%d", req.Size, dims[1].Min, dims[1].Max, dims[2].Min, dims[2].Max)
	}
	args.Size, args.StripSize, args.TransferSize = 1<<30, "1MB:4m", "1m:2m"
	if _, err := search.ParseRequest(args); err == nil || !strings.Contains(err.Error(), `"1MB"`) {
		t.Errorf("--strip-size 1MB:4m: %v", err)
	}
}

// The same two defects as a user meets them.
func TestIssue17OnTheCommandLine(t *testing.T) {
	analyze := []string{"bench", "--analyze", "-N", "4", "-b", "2m", "-t", "1m", "-s", "4", "--pario.strip-size", "1m", "--pario.servers", "4"}
	m := run(t, "", append(analyze, "--link-rate", "117m")...)
	e6 := run(t, "", append(analyze, "--link-rate", "117e6")...)
	if m != e6 || !strings.Contains(m, "client links  4 clients                468.0 MB/s") {
		t.Errorf("bench --analyze --link-rate 117m differs from 117e6 (4 x 117 MB/s = 468.0 MB/s):\n%s\n---\n%s", m, e6)
	}
	db := t.TempDir() + "/tune.db"
	out, err := runErr("", "tune", "search", "--size", "1t", "--stripe-count", "1:2", "--method", "genetic", "--budget", "4", "--db", db)
	if err != nil || !strings.Contains(out, "search: 1 TiB file") {
		t.Errorf("tune search --size 1t: %v\n%s", err, out)
	}
}
