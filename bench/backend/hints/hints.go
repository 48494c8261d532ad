// Package hints gathers the MPI-IO hints of the cgo back ends (MPIIO,
// HDF5, NC4) the three ways IOR takes them, so that a script written for
// IOR gives pario bench the same hints: IOR_HINT__MPI__key=value variables
// in the environment, a hints file of such lines (IOR's hintsFileName
// option), and pario's own key=value[,key=value...] option. It does no
// MPI: the back ends pass Lines to MPI_Info_set, one key=value a line.
package hints

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pario/pario/bench/backend"
)

// EnvPrefix is IOR's prefix for MPI-IO hints in the environment and in
// hints files (IOR_HINT__MPI__romio_cb_write=enable).
const EnvPrefix = "IOR_HINT__MPI__"

// Set is one back end's hints options: --<api>.hints and
// --<api>.hintsfilename.
type Set struct {
	Hints string // key=value[,key=value...]
	File  string // an IOR hints file

	fromFile []string // File's hints, read by Check
}

// Options are the set's back-end options for api ("mpiio", "hdf5",
// "nc4"); label starts their usage text ("MPIIO").
func (s *Set) Options(api, label string) []backend.Option {
	return []backend.Option{
		backend.StringOption(&s.Hints, api+".hints", label+": MPI-IO hints key=value[,key=value...] (e.g. romio_cb_write=enable,cb_nodes=2)"),
		backend.StringOption(&s.File, api+".hintsfilename", label+": IOR hints file: lines IOR_HINT__MPI__key=value (IOR's hintsFileName)"),
	}
}

// Check checks the option and reads the hints file, before MPI starts, so
// that a mistyped hint or a missing file is an error rather than a hint
// silently not given. api names the options in errors.
func (s *Set) Check(api string) error {
	if err := CheckOption("--"+api+".hints", s.Hints); err != nil {
		return err
	}
	s.fromFile = nil
	if s.File == "" {
		return nil
	}
	lines, err := ReadFile(s.File)
	if err != nil {
		return fmt.Errorf("--%s.hintsfilename: %w", api, err)
	}
	s.fromFile = lines
	return nil
}

// Lines is what the back ends' C code reads, one key=value a line, in
// IOR's order: the environment's hints (EnvPrefix), then the file's, then
// the option's, so that a later one wins for a key in several (the later
// MPI_Info_set of a key replaces the earlier).
func (s *Set) Lines(env []string) string {
	lines := fromEnv(env)
	lines = append(lines, s.fromFile...)
	if s.Hints != "" {
		lines = append(lines, strings.Split(s.Hints, ",")...)
	}
	return strings.Join(lines, "\n")
}

// CheckOption checks an MPI-IO hints option, key=value[,key=value...]: an
// item without a key and a value was dropped without a word, so a
// mistyped hint looked taken. (MPI itself ignores keys and values it does
// not know: that stays the library's business.)
func CheckOption(option, hints string) error {
	if hints == "" {
		return nil
	}
	for kv := range strings.SplitSeq(hints, ",") {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return fmt.Errorf("%s %q: %q is not key=value (e.g. romio_cb_write=enable)", option, hints, kv)
		case strings.TrimSpace(k) == "":
			return fmt.Errorf("%s %q: %q has no key", option, hints, kv)
		case v == "":
			return fmt.Errorf("%s %q: %q has no value", option, hints, kv)
		}
	}
	return nil
}

// fromEnv is the environment's hints: IOR passes every IOR_HINT__MPI__
// variable to MPI_Info_set. A value keeps its commas (cb_config_list's
// has them); a variable without a key or a value is left out.
func fromEnv(env []string) []string {
	var lines []string
	for _, kv := range env {
		rest, ok := strings.CutPrefix(kv, EnvPrefix)
		if !ok {
			continue
		}
		if k, v, ok := strings.Cut(rest, "="); ok && k != "" && v != "" && !strings.Contains(v, "\n") {
			lines = append(lines, k+"="+v)
		}
	}
	return lines
}

// maxFile bounds a hints file: a few lines are usual, and a large file is
// most likely the wrong one.
const maxFile = 1 << 20

// ReadFile reads an IOR hints file (see Parse).
func ReadFile(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	return Parse(name, f)
}

// Parse reads hints in IOR's hints-file format: each line that starts
// with IOR_HINT is a hint, IOR_HINT__MPI__key=value (spaces around the
// "=" allowed); other lines are ignored, as IOR ignores them (comments,
// say). IOR_HINT__GPFS__ lines are left out, as in the environment: they
// are GPFS's, not MPI's. Where IOR warned and went on, Parse fails,
// naming the file and line: a line that starts with IOR_HINT but is not a
// hint it can give, or a file over 1 MiB.
func Parse(name string, r io.Reader) ([]string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s: over %d bytes: not a hints file", name, maxFile)
	}
	var lines []string
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if !strings.HasPrefix(line, "IOR_HINT") || strings.HasPrefix(line, "IOR_HINT__GPFS__") {
			continue
		}
		rest, ok := strings.CutPrefix(line, EnvPrefix)
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q: not a hint pario gives MPI (want %skey=value)", name, n+1, line, EnvPrefix)
		}
		k, v, ok := strings.Cut(rest, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok || k == "" || v == "":
			return nil, fmt.Errorf("%s:%d: %q: want %skey=value", name, n+1, line, EnvPrefix)
		case strings.ContainsAny(k, " \t"):
			return nil, fmt.Errorf("%s:%d: %q: the key has a space", name, n+1, line)
		case strings.ContainsRune(line, 0):
			return nil, fmt.Errorf("%s:%d: %q: a NUL byte", name, n+1, line)
		}
		lines = append(lines, k+"="+v)
	}
	return lines, nil
}
